package transport

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

func TestMemory(t *testing.T) {
	suite(t, func(t *testing.T, top *spec.Topology) Transport { return NewMemory(top, MemoryConfig{}) })
}

func TestMemoryDelayed(t *testing.T) {
	suite(t, func(t *testing.T, top *spec.Topology) Transport {
		return NewMemory(top, MemoryConfig{MaxDelay: 200 * time.Microsecond, Seed: 7})
	})
}

// With delays, channels interleave differently under different seeds while
// each channel keeps its order.
func TestMemoryDelaysReorderAcrossChannelsOnly(t *testing.T) {
	checkNoLeak(t)
	top := spec.Complete(3)
	chans := top.Out("P1") // P1->P2, P1->P3
	into := spec.Channel{From: "P2", To: "P3"}
	orders := map[string]bool{}
	for seed := uint64(1); seed <= 8; seed++ {
		tr := NewMemory(top, MemoryConfig{MaxDelay: 2 * time.Millisecond, Seed: seed})
		in3, err := tr.Inbox("P3")
		require.NoError(t, err)
		// Alternate sends on P1->P3 and P2->P3; record P3's arrival order.
		for i := 1; i <= 10; i++ {
			require.NoError(t, tr.Send(wire.Envelope{Chan: chans[1], Frame: appFrame(chans[1], uint64(i))}))
			require.NoError(t, tr.Send(wire.Envelope{Chan: into, Frame: appFrame(into, uint64(i))}))
		}
		order := ""
		next := map[spec.Channel]uint64{}
		for range 20 {
			env, ok := takeNext(in3, time.After(5*time.Second))
			require.True(t, ok, "no delivery")
			next[env.Chan]++
			require.Equal(t, next[env.Chan], env.Frame.Seq, "FIFO on %s", env.Chan)
			order += string(env.Chan.From)
		}
		orders[order] = true
		require.NoError(t, closeBounded(t, tr, 5*time.Second))
	}
	assert.Greater(t, len(orders), 1, "delays should vary the interleaving across channels")
}

func TestMemoryCloseWithPendingDelays(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	tr := NewMemory(top, MemoryConfig{MaxDelay: time.Hour, Seed: 1})
	ch := spec.Channel{From: "P1", To: "P2"}
	sendAll(t, tr, []spec.Channel{ch}, 5, nil)
	err := closeBounded(t, tr, 2*time.Second)
	var se *ShutdownError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Undelivered, 5)
	for i, env := range se.Undelivered {
		assert.Equal(t, uint64(i+1), env.Frame.Seq)
	}
	assert.Contains(t, err.Error(), "P1->P2: 5")
}

func TestMemoryManyMessages(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(5)
	tr := NewMemory(top, MemoryConfig{MaxDelay: 50 * time.Microsecond, Seed: 3})
	c := collect(t, tr, top.Procs)
	const n = 20000
	sendAll(t, tr, top.Chans, n, nil)
	c.wait(t, top.Chans, n, 20*time.Second)
	require.NoError(t, closeBounded(t, tr, 5*time.Second))
	c.wg.Wait()
	c.check(t, top.Chans, n)
}
