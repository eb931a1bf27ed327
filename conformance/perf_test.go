package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

// bigRun is a random drained bank run of about n events on Complete(5)
// with a snapshot every ~200 steps.
func bigRun(tb testing.TB, n int) (spec.Trace, map[spec.SnapID]spec.GlobalState) {
	net, err := coretest.RandomBank(n, 200, 1)
	require.NoError(tb, err)
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
