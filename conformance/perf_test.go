package conformance

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

// bigRun is a random drained bank run of about n events on Complete(5)
// with a snapshot every ~200 steps.
func bigRun(tb testing.TB, n int) (spec.Trace, map[spec.SnapID]spec.GlobalState) {
	topo := spec.Complete(5)
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 1000
	}
	net, err := coretest.NewBank(topo, bal)
	require.NoError(tb, err)
	r := rand.New(rand.NewPCG(1, 2))
	sid := spec.SnapID(0)
	for len(net.Events) < n {
		c := topo.Chans[r.IntN(len(topo.Chans))]
		switch x := r.IntN(200); {
		case x < 90:
			_, _ = net.SendAmount(c.From, c.To, 1+r.Int64N(20)) // refusals are fine
		case x < 199:
			if len(net.Queues[c]) > 0 {
				_, err = net.Deliver(c)
				require.NoError(tb, err)
			}
		default:
			sid++
			_, err = net.Initiate(topo.Procs[r.IntN(5)], sid)
			require.NoError(tb, err)
		}
	}
	require.NoError(tb, net.Drain())
	tr := net.Trace("")
	tr.Header.Drained = true
	return tr, net.Recorded()
}

// BenchmarkReplay replays a 5000-event run with its snapshots.
func BenchmarkReplay(b *testing.B) {
	tr, rec := bigRun(b, 5000)
	b.ResetTimer()
	for range b.N {
		if r := Replay(tr, Options{}); !r.OK() {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(len(tr.Events)), "events")
	b.ReportMetric(float64(len(rec)), "snapshots")
}
