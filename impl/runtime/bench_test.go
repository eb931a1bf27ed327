package runtime_test

import (
	"context"
	"flag"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// benchBalance is the plain bank balance of BenchmarkSnapshotCompletion.
const benchBalance = 1 << 40

// Closed-loop throughput settings; -load.* flags (after the package)
// override them.
var (
	loadRounds = flag.Int("load.rounds", 7, "BenchmarkThroughput: rounds (per b.N); one ratio per mode per round")
	loadSlices = flag.Int("load.slices", 20, "BenchmarkThroughput: slices per round; each measures every mode once")
	loadSlice  = flag.Duration("load.slice", 50*time.Millisecond, "BenchmarkThroughput: measured time per mode and slice")
	loadSettle = flag.Duration("load.settle", 10*time.Millisecond, "BenchmarkThroughput: unmeasured time after each mode switch")
	loadFlight = flag.Int("load.inflight", 16, "BenchmarkThroughput: undelivered transfers each sender may have outstanding")
	loadDelay  = flag.Duration("load.delay", 0, "BenchmarkThroughput: memory transport MaxDelay (0: deliver at once)")
)

// BenchmarkThroughput is sustained application throughput on the
// in-memory runtime (8 nodes, complete graph, no delays) under a
// closed-loop load (one sender per node, at most -load.inflight of its
// transfers undelivered, random amounts 1..100 to random peers), in three
// modes: no snapshots, a Chandy-Lamport snapshot every 10ms (each
// collected before the next), and a stop-the-world snapshot every 10ms
// (hold all sends, drain the channels, record, resume; each one is
// checked: no bank debited a transfer while the states were recorded, and
// every debited transfer had been credited).
//
// The load runs continuously on one cluster. A round is -load.slices
// slices; a slice measures each mode for -load.slice after -load.settle,
// the order rotating from slice to slice, so that the three modes of a
// round see the same background load (the machine may be shared). Each
// round gives one throughput per mode (its delivered transfers over its
// measured time) and the ratios cl/none and stw/none. It reports the
// median throughput of each mode and the medians of the per-round ratios,
// snapshots completed per second, recorded messages per CL snapshot, the
// mean and max STW pause (time inside StopTheWorld), the p99 transfer
// latency (Transfer call to Apply at the receiver) per mode, the refused
// transfers, and, where /proc/self/stat exists, transfers per CPU-second
// of the process relative to none (less sensitive to other jobs on the
// machine than wall-clock throughput), and transfers/cpu-s: every transfer
// delivered over all rounds (all modes, settling included) per CPU-second
// of the process (getrusage). Every round is logged. ns/op is
// not meaningful and is suppressed. About 30s with the defaults:
//
//	go test -run '^$' -bench Throughput ./impl/runtime/
//	go test -run '^$' -bench Throughput ./impl/runtime/ -load.delay=1ms
//
// With no transport delay the load is bound by CPU and goroutine
// hand-offs, and a 2ms stop-the-world pause costs little throughput (the
// senders' idle time is mostly made up after the resume); with
// -load.delay=1ms the load is bound by latency, as over a network, and
// every pause is lost throughput.
func BenchmarkThroughput(b *testing.B) {
	const period = 10 * time.Millisecond
	l := newClosedLoop(b, spec.Complete(8), loadConfig{Balance: 10_000_000, MaxAmount: 100, Window: *loadFlight, Seed: 1, MaxDelay: *loadDelay})
	l.start()
	defer l.close(b)
	modes := loadModes[:]
	tput := map[snapMode][]float64{}
	rate := map[snapMode][]float64{}
	var clR, stwR []float64
	var all [3]phaseResult       // by mode, over all rounds
	time.Sleep(10 * *loadSettle) // warm up
	rounds := *loadRounds * b.N
	var roundLog []string
	cpu0, ok0 := rusageCPU()
	delivered0 := l.totalDelivered()
	for r := 0; r < rounds; r++ {
		var res [3]phaseResult // by mode
		for sl := 0; sl < *loadSlices; sl++ {
			for k := range modes {
				i := (r + sl + k) % len(modes)
				res[i].add(l.phase(modes[i], period, *loadSettle, *loadSlice))
			}
		}
		for i, m := range modes {
			tput[m] = append(tput[m], res[i].throughput())
			rate[m] = append(rate[m], res[i].snapRate())
			all[i].add(res[i])
		}
		none, c, s := res[0], res[1], res[2]
		clR = append(clR, c.throughput()/none.throughput())
		stwR = append(stwR, s.throughput()/none.throughput())
		roundLog = append(roundLog, fmt.Sprintf("round %d: none %.0f/s | cl %.0f/s = %.3f, %.0f snaps/s, %.1f msgs/snap | stw %.0f/s = %.3f, %.0f snaps/s, mean pause %v",
			r+1, none.throughput(), c.throughput(), clR[r], c.snapRate(), perSnap(c.recorded, c.snaps),
			s.throughput(), stwR[r], s.snapRate(), meanPause(s.pause, s.snaps).Round(time.Microsecond)))
	}
	if cpu1, ok1 := rusageCPU(); ok0 && ok1 && cpu1 > cpu0 {
		b.ReportMetric(float64(l.totalDelivered()-delivered0)/(cpu1-cpu0).Seconds(), "transfers/cpu-s")
	}
	c, s := all[1], all[2]
	stwLog := fmt.Sprintf("stw pause %v mean = hold sends and drain %v + capture %v + resume %v; senders held %.1f%% of the time",
		meanPause(s.pause, s.snaps).Round(time.Microsecond), meanPause(s.drain, s.snaps).Round(time.Microsecond),
		meanPause(s.capture, s.snaps).Round(time.Microsecond), meanPause(s.resume, s.snaps).Round(time.Microsecond),
		100*s.pause.Seconds()/s.elapsed.Seconds())
	lat := map[snapMode][]time.Duration{}
	latLog := "transfer latency (Transfer call to Apply; p50/p99/p99.9/max, bucket upper bounds):"
	for _, m := range modes {
		lat[m] = l.sendLatency(m, 0.5, 0.99, 0.999, 1)
		q := lat[m]
		latLog += fmt.Sprintf(" %s %v/%v/%v/%v;", m, q[0].Round(time.Microsecond), q[1].Round(time.Microsecond),
			q[2].Round(time.Microsecond), q[3].Round(time.Microsecond))
	}
	b.Log(latLog)
	if n := all[0]; n.perCPU() > 0 && c.perCPU() > 0 && s.perCPU() > 0 {
		stwLog = fmt.Sprintf("process CPU: none %.2f cores, %.0f transfers/cpu-s | cl %.2f cores, %.0f/cpu-s = %.3f | stw %.2f cores, %.0f/cpu-s = %.3f | %s",
			n.cpu.Seconds()/n.elapsed.Seconds(), n.perCPU(), c.cpu.Seconds()/c.elapsed.Seconds(), c.perCPU(), c.perCPU()/n.perCPU(),
			s.cpu.Seconds()/s.elapsed.Seconds(), s.perCPU(), s.perCPU()/n.perCPU(), stwLog)
		b.ReportMetric(c.perCPU()/n.perCPU(), "cl/none-per-cpu")
		b.ReportMetric(s.perCPU()/n.perCPU(), "stw/none-per-cpu")
	}
	b.Log(stwLog)
	for _, line := range roundLog { // after the summaries: go test keeps 10 lines
		b.Log(line)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(tput[noSnap]), "none-transfers/s")
	b.ReportMetric(median(tput[clSnap]), "cl-transfers/s")
	b.ReportMetric(median(tput[stw]), "stw-transfers/s")
	b.ReportMetric(median(clR), "cl/none")
	b.ReportMetric(median(stwR), "stw/none")
	b.ReportMetric(median(rate[clSnap]), "cl-snaps/s")
	b.ReportMetric(median(rate[stw]), "stw-snaps/s")
	b.ReportMetric(perSnap(c.recorded, c.snaps), "cl-recorded-msgs/snap")
	b.ReportMetric(float64(meanPause(s.pause, s.snaps).Microseconds()), "stw-mean-pause-us")
	b.ReportMetric(float64(s.maxPause.Microseconds()), "stw-max-pause-us")
	for _, m := range modes {
		b.ReportMetric(float64(lat[m][1].Microseconds()), string(m)+"-p99-latency-us")
	}
	b.ReportMetric(float64(l.refusals.Load()), "refusals")
}

// rusageCPU is the CPU time (user+system) the process has used, from
// getrusage(2).
func rusageCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// benchCluster is a bank cluster on a plain in-memory transport.
func benchCluster(tb testing.TB, topo *spec.Topology) *mwrt.Cluster {
	cl, err := mwrt.NewCluster(mwrt.ClusterConfig{Topology: topo, NewApp: bankApps(benchBalance),
		Transport: transport.NewMemory(topo, transport.MemoryConfig{})})
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

func perSnap(msgs, snaps uint64) float64 {
	if snaps == 0 {
		return 0
	}
	return float64(msgs) / float64(snaps)
}

func meanPause(total time.Duration, snaps uint64) time.Duration {
	if snaps == 0 {
		return 0
	}
	return total / time.Duration(snaps)
}

// BenchmarkSnapshotCompletion is the time from Initiate to a collected
// global snapshot on an idle in-memory cluster, by topology and size. It
// checks and reports the markers sent per snapshot, which must equal the
// number of channels.
func BenchmarkSnapshotCompletion(b *testing.B) {
	for _, kind := range []string{"ring", "complete"} {
		for _, n := range []int{4, 16, 64, 256} {
			topo := spec.Ring(n)
			if kind == "complete" {
				topo = spec.Complete(n)
			}
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				cl := benchCluster(b, topo)
				defer cl.Stop(context.Background())
				m0 := cl.Stats().MarkersSent.Load()
				cpu0, ok0 := rusageCPU()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s, err := cl.Snapshot(topo.Procs[i%n])
					if err != nil {
						b.Fatal(err)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					_, err = cl.Collect(ctx, s)
					cancel()
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				cpu1, ok1 := rusageCPU()
				markers := float64(cl.Stats().MarkersSent.Load() - m0)
				if ok0 && ok1 && cpu1 > cpu0 {
					b.ReportMetric(markers/(cpu1-cpu0).Seconds(), "markers/cpu-s")
				}
				b.ReportMetric(markers/b.Elapsed().Seconds(), "markers/s")
				per := markers / float64(b.N)
				if per != float64(len(topo.Chans)) {
					b.Fatalf("%v markers per snapshot, want %d (channels)", per, len(topo.Chans))
				}
				b.ReportMetric(per, "markers/snap")
				b.ReportMetric(float64(len(topo.Chans)), "channels")
			})
		}
	}
}

// BenchmarkSnapshotCoreOnly is BenchmarkSnapshotCompletion's work done by
// the cores alone: the nodes of the complete graph of 256 as core.Nodes
// (no clocks, as the untraced runtime runs them) stepped by one goroutine
// from one FIFO queue of envelopes, no runtime, transport or collector.
// Its markers/s is what one CPU does when marker processing is all there
// is: the bound for BenchmarkSnapshotCompletion's markers/cpu-s.
func BenchmarkSnapshotCoreOnly(b *testing.B) {
	topo := spec.Complete(256)
	nodes := map[spec.ProcID]*core.Node{}
	for _, p := range topo.Procs {
		bank, err := app.NewBank(benchBalance)
		if err != nil {
			b.Fatal(err)
		}
		if nodes[p], err = core.New(core.Config{Topology: topo, Self: p, App: bank, NoClocks: true}); err != nil {
			b.Fatal(err)
		}
	}
	var q []wire.Envelope
	markers := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st, err := nodes[topo.Procs[i%len(topo.Procs)]].Initiate(spec.SnapID(i + 1))
		if err != nil {
			b.Fatal(err)
		}
		q = append(q[:0], st.Out...)
		completed := 0
		for k := 0; k < len(q); k++ {
			env := q[k]
			nd := nodes[env.Chan.To]
			st, err := nd.Deliver(env)
			if err != nil {
				b.Fatal(err)
			}
			markers++
			q = append(q, st.Out...)
			if st.Completed != 0 {
				completed += len(nd.TakeCompleted())
			}
		}
		if completed != len(topo.Procs) {
			b.Fatalf("%d local snapshots completed, want %d", completed, len(topo.Procs))
		}
	}
	b.StopTimer()
	if markers != b.N*len(topo.Chans) {
		b.Fatalf("%d markers delivered, want %d", markers, b.N*len(topo.Chans))
	}
	b.ReportMetric(float64(markers)/b.Elapsed().Seconds(), "markers/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(markers), "ns/marker")
}
