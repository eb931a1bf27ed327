package transport

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// checkNoLeak fails t if a goroutine started during the test is still
// running when it ends: goleak compares the goroutines left (retrying
// while they wind down) with those running when checkNoLeak was called.
func checkNoLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// closeBounded closes tr and fails t if Close takes longer than d.
func closeBounded(t *testing.T, tr Transport, d time.Duration) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- tr.Close() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(d):
		t.Fatalf("Close did not return within %v", d)
		return nil
	}
}

// appFrame is the n-th application frame of ch; its payload names both so
// that misrouted or corrupted frames are caught.
func appFrame(ch spec.Channel, n uint64) wire.Frame {
	return wire.Frame{Kind: wire.KindApp, Seq: n, Payload: []byte(fmt.Sprintf("%s#%d", ch, n)), VC: []uint64{n, 1}}
}

// takeNext waits until an envelope is waiting in in, or stop fires, and
// takes that one only (so that nothing taken goes unseen). ok is false if
// stop fired first or in is closed.
func takeNext[T any](in *Inbox, stop <-chan T) (env wire.Envelope, ok bool) {
	for {
		batch, open := in.Take(nil, 1)
		if len(batch) == 1 {
			return batch[0], true
		}
		if !open {
			return wire.Envelope{}, false
		}
		select {
		case <-in.Ready():
		case <-stop:
			return wire.Envelope{}, false
		}
	}
}

// readAll calls f with every envelope of in, in order, until in is
// closed.
func readAll(in *Inbox, f func(wire.Envelope)) {
	var batch []wire.Envelope
	for open := true; open; {
		<-in.Ready()
		batch, open = in.Take(batch, 0)
		for _, env := range batch {
			f(env)
		}
	}
}

// collector reads the inboxes of procs until it has want envelopes per
// channel in chans, then checks each channel got exactly 1..want in order.
type collector struct {
	mu  sync.Mutex
	got map[spec.Channel][]wire.Frame
	wg  sync.WaitGroup
}

func collect(t *testing.T, tr Transport, procs []spec.ProcID) *collector {
	t.Helper()
	c := &collector{got: map[spec.Channel][]wire.Frame{}}
	for _, p := range procs {
		in, err := tr.Inbox(p)
		require.NoError(t, err)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			readAll(in, func(env wire.Envelope) {
				if env.Chan.To != p {
					t.Errorf("inbox of %s got %s", string(p), env)
				}
				c.mu.Lock()
				c.got[env.Chan] = append(c.got[env.Chan], env.Frame)
				c.mu.Unlock()
			})
		}()
	}
	return c
}

// wait blocks until every channel in chans has want frames or timeout.
func (c *collector) wait(t *testing.T, chans []spec.Channel, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		done := true
		var short []string
		for _, ch := range chans {
			if len(c.got[ch]) < want {
				done = false
				short = append(short, fmt.Sprintf("%s: %d", ch, len(c.got[ch])))
			}
		}
		c.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d frames per channel; have %s", want, strings.Join(short, ", "))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// check verifies each channel received exactly frames 1..want in order.
func (c *collector) check(t *testing.T, chans []spec.Channel, want int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range chans {
		fs := c.got[ch]
		require.Len(t, fs, want, "channel %s", ch)
		for i, f := range fs {
			exp := appFrame(ch, uint64(i+1))
			if !exp.Equal(f) {
				t.Fatalf("channel %s position %d: got %v %q, want %v", ch, i, f, f.Payload, exp)
			}
		}
	}
}

// sendAll sends frames 1..n on every channel, one goroutine per channel.
func sendAll(t *testing.T, tr Transport, chans []spec.Channel, n int, pause func(i int)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= n; i++ {
				if err := tr.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, uint64(i))}); err != nil {
					t.Errorf("send %s #%d: %v", ch, i, err)
					return
				}
				if pause != nil {
					pause(i)
				}
			}
		}()
	}
	wg.Wait()
}

// suite runs the behaviour every Transport must have.
func suite(t *testing.T, mk func(t *testing.T, top *spec.Topology) Transport) {
	t.Run("FIFOPerChannelConcurrentSenders", func(t *testing.T) {
		checkNoLeak(t)
		top := spec.Complete(4)
		tr := mk(t, top)
		c := collect(t, tr, top.Procs)
		const n = 500
		sendAll(t, tr, top.Chans, n, nil)
		c.wait(t, top.Chans, n, 10*time.Second)
		require.NoError(t, closeBounded(t, tr, 5*time.Second))
		c.wg.Wait()
		c.check(t, top.Chans, n)
	})
	t.Run("UnknownChannelAndBadFrames", func(t *testing.T) {
		checkNoLeak(t)
		top := spec.Ring(3)
		tr := mk(t, top)
		defer tr.Close()
		err := tr.Send(wire.Envelope{Chan: spec.Channel{From: "P1", To: "P3"}, Frame: appFrame(spec.Channel{}, 1)})
		require.ErrorIs(t, err, ErrUnknownChannel)
		assert.Contains(t, err.Error(), "P1->P3")
		ch := spec.Channel{From: "P1", To: "P2"}
		for _, f := range []wire.Frame{{Kind: wire.KindMarker}, {Kind: wire.KindApp}, {Kind: 7, Seq: 1}} {
			assert.ErrorIs(t, tr.Send(wire.Envelope{Chan: ch, Frame: f}), wire.ErrProtocol, "%+v", f)
		}
		_, err = tr.Inbox("P9")
		assert.ErrorIs(t, err, ErrUnknownProc)
	})
	t.Run("CloseReportsUndelivered", func(t *testing.T) {
		checkNoLeak(t)
		top := spec.Ring(3)
		tr := mk(t, top)
		ch := spec.Channel{From: "P1", To: "P2"}
		in, err := tr.Inbox("P2")
		require.NoError(t, err)
		sendAll(t, tr, []spec.Channel{ch}, 10, nil)
		// Take three, leave seven.
		for i := 1; i <= 3; i++ {
			env, ok := takeNext(in, time.After(5*time.Second))
			require.True(t, ok, "no delivery")
			require.True(t, appFrame(ch, uint64(i)).Equal(env.Frame))
		}
		time.Sleep(20 * time.Millisecond)
		err = closeBounded(t, tr, 5*time.Second)
		var se *ShutdownError
		require.ErrorAs(t, err, &se)
		all := append(append([]wire.Envelope(nil), se.Undelivered...), se.Unacked...)
		require.Len(t, all, 7, "%v", err)
		for i, env := range all {
			assert.Equal(t, ch, env.Chan)
			assert.True(t, appFrame(ch, uint64(i+4)).Equal(env.Frame), "%v", env)
		}
		batch, open := in.Take(nil, 0)
		assert.False(t, open, "inbox closed")
		assert.Empty(t, batch)
		assert.ErrorIs(t, tr.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, 11)}), ErrClosed)
		assert.NoError(t, tr.Close())
	})
	t.Run("SendCopiesFrame", func(t *testing.T) {
		checkNoLeak(t)
		top := spec.Ring(2)
		tr := mk(t, top)
		defer tr.Close()
		ch := spec.Channel{From: "P1", To: "P2"}
		f := appFrame(ch, 1)
		want := f.Clone()
		require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: f}))
		f.Payload[0], f.VC[0] = 'X', 99
		in, _ := tr.Inbox("P2")
		env, ok := takeNext(in, time.After(5*time.Second))
		require.True(t, ok, "no delivery")
		assert.True(t, want.Equal(env.Frame), "%v", env.Frame)
	})
	t.Run("MarkersAndAppsInterleaved", func(t *testing.T) {
		checkNoLeak(t)
		top := spec.Ring(2)
		tr := mk(t, top)
		defer tr.Close()
		ch := spec.Channel{From: "P1", To: "P2"}
		var sent []wire.Frame
		for i := 1; i <= 50; i++ {
			f := appFrame(ch, uint64(i))
			if i%7 == 0 {
				f = wire.Frame{Kind: wire.KindMarker, Snap: spec.SnapID(i)}
			}
			sent = append(sent, f)
			require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: f}))
		}
		in, _ := tr.Inbox("P2")
		for i, want := range sent {
			env, ok := takeNext(in, time.After(5*time.Second))
			require.True(t, ok, "no delivery")
			require.True(t, want.Equal(env.Frame), "position %d: %v want %v", i, env.Frame, want)
		}
	})
}

// settled reads o's channel under its lock: whether it failed for good,
// and whether every frame it was given is acknowledged.
func (o *outChan) settled() (failed, idle bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed != nil, o.pending() == 0
}
