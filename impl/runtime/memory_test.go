package runtime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/spec"
)

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Channel recording costs what is in flight across the cut, not how long
// the system has run: with K messages held in flight, a snapshot records
// exactly K whether 1k or 40k transfers came before, and what the cluster
// retains after collecting many snapshots does not grow with run length.
func TestRecordingGrowsWithInFlightNotRunLength(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	topo := spec.Complete(4)
	ch := spec.Channel{From: "P1", To: "P2"}
	type result struct {
		recorded int
		retained int64
	}
	run := func(length, inFlight int) result {
		cl, ct := memCluster(t, topo, 1<<40, 0, 0)
		defer cl.Stop(ctxFor(t, 5*time.Second))
		base := heapInUse()
		procs := topo.Procs
		var snaps int
		for k := 0; k < length; k++ {
			require.NoError(t, cl.Send(procs[k%4], procs[(k+1)%4], app.Transfer(1)))
			if k%1000 == 999 { // a snapshot now and then, collected and gone
				s, err := cl.Snapshot(procs[k%4])
				require.NoError(t, err)
				_, err = cl.Collect(ctxFor(t, 5*time.Second), s)
				require.NoError(t, err)
				snaps++
			}
		}
		require.NoError(t, cl.Quiesce(ctxFor(t, 5*time.Second)))
		ct.Gate(ch)
		for k := 0; k < inFlight; k++ {
			require.NoError(t, cl.Send("P1", "P2", app.Transfer(1)))
		}
		s, err := cl.Snapshot("P1")
		require.NoError(t, err)
		require.Eventually(t, func() bool { return len(ct.Markers()) == (snaps+1)*len(topo.Chans) }, 5*time.Second, time.Millisecond)
		require.NoError(t, ct.Release())
		g, err := cl.Collect(ctxFor(t, 5*time.Second), s)
		require.NoError(t, err)
		require.NoError(t, cl.Quiesce(ctxFor(t, 5*time.Second)))
		retained := int64(heapInUse()) - int64(base)
		return result{recorded: g.Recorded(), retained: retained}
	}
	short := run(1_000, 200)
	long := run(40_000, 200)
	wide := run(1_000, 2_000)
	t.Logf("run 1k, 200 in flight: recorded %d, retained %d B", short.recorded, short.retained)
	t.Logf("run 40k, 200 in flight: recorded %d, retained %d B", long.recorded, long.retained)
	t.Logf("run 1k, 2000 in flight: recorded %d, retained %d B", wide.recorded, wide.retained)
	assert.Equal(t, 200, short.recorded)
	assert.Equal(t, 200, long.recorded)
	assert.Equal(t, 2000, wide.recorded)
	// A recorded message costs ~100 B; 39k more transfers retain well under
	// 16 B each. (What does grow is the transport queues' capacity, which
	// follows the peak backlog, and a few bytes per snapshot id.)
	perInFlight := float64(wide.retained-short.retained) / 1800
	perTransfer := float64(long.retained-short.retained) / 39_000
	t.Logf("retained per extra in-flight message: %.0f B; per extra transfer of run length: %.1f B", perInFlight, perTransfer)
	assert.Less(t, perTransfer, 16.0)
}
