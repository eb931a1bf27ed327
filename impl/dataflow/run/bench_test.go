package run

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
)

// stateBytes is the size of the operator state a snapshot records: the
// aggregations' sums and the sink's output, 16 bytes a key.
func stateBytes(s *dataflow.Snapshot) int {
	n := 0
	for _, p := range s.Parts {
		switch st := p.State.(type) {
		case pipeline.Sums:
			n += 16 * len(st)
		case map[int64]int64:
			n += 16 * len(st)
		}
	}
	return n
}

// BenchmarkTradeoff runs the pipeline (4 sources, 4 maps, a keyed
// shuffle into 4 aggregations, a sink) with no snapshot, a
// Chandy-Lamport, an aligned and an unaligned one injected halfway, with and without a slow
// aggregation, and reports per run: throughput, checkpoint duration
// (first injection to completion), the longest alignment (first barrier
// to recording at an operator), and the snapshot's operator state and
// channel state in bytes.
func BenchmarkTradeoff(b *testing.B) {
	const par, budget, capacity = 4, 400, 8
	itemBytes := int(unsafe.Sizeof(dataflow.Item{}))
	for _, slow := range []bool{false, true} {
		for _, proto := range []string{"none", "chandy-lamport", "aligned", "unaligned"} {
			b.Run(fmt.Sprintf("slow=%v/%s", slow, proto), func(b *testing.B) {
				mode := map[string]dataflow.Mode{"chandy-lamport": dataflow.ChandyLamport,
					"unaligned": dataflow.Unaligned}[proto] // else Aligned
				g, logics, err := pipeline.Pipeline(par, budget, capacity, mode)
				if err != nil {
					b.Fatal(err)
				}
				opt := Options{InjectAt: par * budget / 2, FailAfter: -1}
				if proto == "none" {
					opt.InjectAt = -1
				}
				if slow {
					opt.Throttle = map[int]time.Duration{len(g.Nodes) - 2: 100 * time.Microsecond}
				}
				var elapsed, completed, align time.Duration
				var opBytes, chBytes int
				for b.Loop() {
					c := dataflow.NewCluster(g, logics())
					res, err := Run(context.Background(), c, opt)
					if err != nil {
						b.Fatal(err)
					}
					elapsed += res.Elapsed
					if snap := res.Latest(); snap != nil {
						completed += res.Checkpoints[0].Took
						for _, a := range res.Checkpoints[0].Align {
							align = max(align, a)
						}
						opBytes += stateBytes(snap)
						all, _ := snap.ChannelRecords(g)
						chBytes += all * itemBytes
					} else if proto != "none" {
						b.Fatal("the snapshot did not complete")
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(par*budget)*n/elapsed.Seconds(), "records/s")
				b.ReportMetric(float64(completed.Microseconds())/n, "ckpt-µs")
				b.ReportMetric(float64(align.Microseconds()), "max-align-µs")
				b.ReportMetric(float64(opBytes)/n, "op-B")
				b.ReportMetric(float64(chBytes)/n, "chan-B")
			})
		}
	}
}
