package conformance

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

// bigRun is a random drained bank run of about n events on Complete(5)
// with a snapshot every ~snapEvery steps.
func bigRun(tb testing.TB, n, snapEvery int) (spec.Trace, map[spec.SnapID]spec.GlobalState) {
	net, err := coretest.RandomBank(n, snapEvery, 1)
	require.NoError(tb, err)
	tr := net.Trace("")
	tr.Header.Drained = true
	return tr, net.Recorded()
}

// BenchmarkReplay replays runs of 10k and 100k events, each with about
// eight snapshots, and reports the time per event, wall clock (ns/event)
// and CPU time of the process (cpu-ns/event, which other load on the
// machine does not inflate): Replay is linear in the number of events
// when both sizes report about the same per event (its cost per event
// also grows with the number of snapshots, which every step of the
// model carries).
func BenchmarkReplay(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			tr, rec := bigRun(b, n, n/8)
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				if r := Replay(tr, Options{}); !r.OK() {
					b.Fatal(r)
				}
			}
			b.StopTimer()
			perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*len(tr.Events)) }
			b.ReportMetric(perEvent(b.Elapsed()), "ns/event")
			b.ReportMetric(perEvent(cpuTime(b)-cpu0), "cpu-ns/event")
			b.ReportMetric(float64(len(tr.Events)), "events")
			b.ReportMetric(float64(len(rec)), "snapshots")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
