package run

import (
	"context"
	"fmt"
	"slices"
	"syscall"
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

// percentile is the p-th percentile of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(p*float64(len(ds))))]
}

// The protocols the trade-off compares: no snapshots, the stop-the-world
// baseline, and the three on-line protocols.
var tradeoffProtocols = []string{"none", "stop-the-world", "chandy-lamport", "aligned", "unaligned"}

// tradeoffSetup is the graph, its logics, the options and the number of
// records of a trade-off run: app (pipeline: 4 sources, 4 maps, a keyed
// shuffle into 4 aggregations, a sink, 2,000 records a source, buffers of
// 8; iteration: a source, a loop of 8 rounds, 150 records) with
// continuous snapshots every 10 ms (the next injected once the last
// completed) by protocol proto, or none, and with slow the slow stage
// (one aggregation, the loop's body: 100 µs a record).
func tradeoffSetup(b *testing.B, app string, slow bool, proto string) (*dataflow.Graph, func() []dataflow.Logic, Options, int) {
	mode := map[string]dataflow.Mode{"chandy-lamport": dataflow.ChandyLamport,
		"unaligned": dataflow.Unaligned}[proto] // else Aligned
	var g *dataflow.Graph
	var logics func() []dataflow.Logic
	var err error
	slowNode := 0
	if app == "pipeline" {
		g, logics, err = pipeline.Pipeline(4, 2000, 8, mode)
		slowNode = 2 * 4
	} else {
		g, logics, err = pipeline.Iteration(150, 8, 8, mode)
		slowNode = 2
	}
	if err != nil {
		b.Fatal(err)
	}
	g = g.Successively()
	opt := Options{InjectAt: 0, Interval: 10 * time.Millisecond, FailAfter: -1,
		StopTheWorld: proto == "stop-the-world", Timeout: 5 * time.Minute}
	if proto == "none" {
		opt.InjectAt = -1
	}
	if slow {
		opt.Throttle = map[int]time.Duration{slowNode: 100 * time.Microsecond}
	}
	total := 0
	for _, n := range g.Nodes {
		total += n.Budget
	}
	return g, logics, opt, total
}

// BenchmarkTradeoff runs the pipeline (4 sources, 4 maps, a keyed
// shuffle into 4 aggregations, a sink; 2,000 records a source) and the
// cyclic iteration (a source, a loop of 8 rounds; 150 records), in
// memory, with no snapshots or continuous ones (a snapshot every 10 ms,
// the next injected once the last completed) by each protocol, with and
// without a slow stage (one aggregation, the loop's body: 100 µs a
// record). It reports per run: throughput, record latency from emit to
// sink (p50, p99), the snapshots completed, and per snapshot the
// checkpoint duration (first injection to completion), the longest
// alignment (first barrier to recording at an operator), the operator
// state and the channel state in bytes, and how long the sources were
// paused (stop-the-world).
func BenchmarkTradeoff(b *testing.B) {
	itemBytes := int(unsafe.Sizeof(dataflow.Item{}))
	for _, app := range []string{"pipeline", "iteration"} {
		for _, slow := range []bool{false, true} {
			for _, proto := range tradeoffProtocols {
				b.Run(fmt.Sprintf("%s/slow=%v/%s", app, slow, proto), func(b *testing.B) {
					g, logics, opt, total := tradeoffSetup(b, app, slow, proto)
					var elapsed, took, paused, align time.Duration
					var lat []time.Duration
					var snaps, opBytes, chBytes int
					for b.Loop() {
						c := dataflow.NewCluster(g, logics())
						res, err := Run(context.Background(), c, opt)
						if err != nil {
							b.Fatal(err)
						}
						elapsed += res.Elapsed
						paused += res.Paused
						lat = append(lat, res.Latency...)
						for _, cp := range res.Checkpoints {
							snaps++
							took += cp.Took
							for _, a := range cp.Align {
								align = max(align, a)
							}
							opBytes += stateBytes(cp.Snapshot)
							all, _ := cp.Snapshot.ChannelRecords(g)
							chBytes += all * itemBytes
						}
						if proto != "none" && len(res.Checkpoints) == 0 {
							b.Fatal("no snapshot completed")
						}
					}
					slices.Sort(lat)
					n, per := float64(b.N), float64(max(snaps, 1))
					b.ReportMetric(float64(total)*n/elapsed.Seconds(), "records/s")
					b.ReportMetric(float64(percentile(lat, 0.5).Microseconds()), "p50-µs")
					b.ReportMetric(float64(percentile(lat, 0.99).Microseconds()), "p99-µs")
					b.ReportMetric(float64(snaps)/n, "snaps/run")
					b.ReportMetric(float64(took.Microseconds())/per, "ckpt-µs")
					b.ReportMetric(float64(align.Microseconds()), "max-align-µs")
					b.ReportMetric(float64(opBytes)/per, "op-B")
					b.ReportMetric(float64(chBytes)/per, "chan-B")
					b.ReportMetric(float64(paused.Microseconds())/n, "paused-µs/run")
				})
			}
		}
	}
}

// BenchmarkOverhead measures what continuous snapshots cost, side by
// side: each iteration runs the app once under every protocol of the
// trade-off (none included), in an order rotating by one each time, so
// the machine's load falls on all alike; it reports each protocol's
// throughput as a fraction of no snapshots' (x-of-none), no snapshots'
// records/s, and each protocol's latency p99 (ms), on the in-memory
// runtime (mem) and over loopback TCP (tcp).
func BenchmarkOverhead(b *testing.B) {
	for _, c := range []struct {
		app, rt string
		slow    bool
	}{{"pipeline", "mem", false}, {"pipeline", "mem", true}, {"pipeline", "tcp", false}, {"iteration", "mem", false}} {
		b.Run(fmt.Sprintf("%s/slow=%v/%s", c.app, c.slow, c.rt), func(b *testing.B) {
			runtime := Run
			if c.rt == "tcp" {
				runtime = RunTCP
			}
			elapsed := map[string]time.Duration{}
			lat := map[string][]time.Duration{}
			total := 0
			for k := 0; b.Loop(); k++ {
				for j := range tradeoffProtocols {
					proto := tradeoffProtocols[(j+k)%len(tradeoffProtocols)]
					g, logics, opt, n := tradeoffSetup(b, c.app, c.slow, proto)
					total = n
					res, err := runtime(context.Background(), dataflow.NewCluster(g, logics()), opt)
					if err != nil {
						b.Fatal(err)
					}
					elapsed[proto] += res.Elapsed
					lat[proto] = append(lat[proto], res.Latency...)
				}
			}
			b.ReportMetric(float64(total*b.N)/elapsed["none"].Seconds(), "none-records/s")
			for _, proto := range tradeoffProtocols {
				slices.Sort(lat[proto])
				b.ReportMetric(float64(percentile(lat[proto], 0.99).Microseconds())/1000, proto+"-p99-ms")
				if proto != "none" {
					b.ReportMetric(elapsed["none"].Seconds()/elapsed[proto].Seconds(), proto+"-x-of-none")
				}
			}
		})
	}
}

// BenchmarkDataflowTCP measures the TCP runtime beside the in-memory one,
// side by side: each iteration runs the pipeline (4 sources, 4 maps, a
// keyed shuffle into 4 aggregations, a sink) on each runtime without
// snapshots and with aligned checkpoints every 10 ms (the next injected
// once the last completed), in an order rotating by one each time, so
// the machine's load falls on all alike. Sub-benchmarks: the trade-off's buffers of 8
// (2,000 records a source), and buffers of 256 (20,000 records a
// source): a buffer's capacity is an edge's credit, which bounds the
// records a frame can carry. It reports the records/s of each (mem-none,
// mem-ckpt, tcp-none, tcp-ckpt), tcp-none over mem-none, each runtime's
// ckpt over none, the snapshots a checkpointed run completed, and the CPU time
// (user and system, the whole process's) each spent per record: on a
// machine shared with other work, the figure the load changes least.
//
//	go test -run '^$' -bench DataflowTCP -count 5 ./impl/dataflow/run/
func BenchmarkDataflowTCP(b *testing.B) {
	for _, sz := range []struct{ buffers, budget int }{{8, 2000}, {256, 20000}} {
		b.Run(fmt.Sprintf("buffers=%d", sz.buffers), func(b *testing.B) { dataflowTCP(b, sz.buffers, sz.budget) })
	}
}

func dataflowTCP(b *testing.B, buffers, budget int) {
	runs := []struct {
		name  string
		rt    runFunc
		proto string
	}{{"mem-none", Run, "none"}, {"mem-ckpt", Run, "aligned"}, {"tcp-none", RunTCP, "none"}, {"tcp-ckpt", RunTCP, "aligned"}}
	elapsed, cpu := map[string]time.Duration{}, map[string]time.Duration{}
	total, snaps := 0, 0
	for k := 0; b.Loop(); k++ {
		for j := range runs {
			r := runs[(j+k)%len(runs)]
			_, _, opt, _ := tradeoffSetup(b, "pipeline", false, r.proto)
			g, logics, err := pipeline.Pipeline(4, budget, buffers, dataflow.Aligned)
			if err != nil {
				b.Fatal(err)
			}
			g = g.Successively()
			total = 4 * budget
			c := dataflow.NewCluster(g, logics())
			before := cpuTime()
			res, err := r.rt(context.Background(), c, opt)
			cpu[r.name] += cpuTime() - before
			if err != nil {
				b.Fatal(err)
			}
			if got := len(c.Sink().Output()); got != total {
				b.Fatalf("%s: %d records reached the sink, want %d", r.name, got, total)
			}
			if r.proto != "none" {
				if len(res.Checkpoints) == 0 {
					b.Fatalf("%s: no snapshot completed", r.name)
				}
				snaps += len(res.Checkpoints)
			}
			elapsed[r.name] += res.Elapsed
		}
	}
	rate := func(name string) float64 { return float64(total*b.N) / elapsed[name].Seconds() }
	for _, r := range runs {
		b.ReportMetric(rate(r.name), r.name+"-records/s")
		b.ReportMetric(float64(cpu[r.name].Nanoseconds())/float64(total*b.N), r.name+"-cpu-ns/record")
	}
	b.ReportMetric(rate("tcp-none")/rate("mem-none"), "tcp/mem")
	b.ReportMetric(rate("tcp-ckpt")/rate("tcp-none"), "tcp-ckpt/none")
	b.ReportMetric(rate("mem-ckpt")/rate("mem-none"), "mem-ckpt/none")
	b.ReportMetric(float64(snaps)/float64(2*b.N), "snaps/run")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
