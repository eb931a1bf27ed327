package runtime_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

const benchBalance = 1 << 40 // no transfer is ever refused

// snapMode is how a throughput run takes snapshots meanwhile.
type snapMode string

const (
	noSnap snapMode = "none"
	clSnap snapMode = "chandy-lamport-10ms"
	stw    snapMode = "stop-the-world-10ms"
)

type runResult struct {
	elapsed  time.Duration
	snaps    int
	recorded uint64
	markers  uint64
}

// throughputRun makes total transfers on cl, one worker per node, while
// mode takes a snapshot every 10ms, and times them until all are delivered.
func throughputRun(tb testing.TB, cl *mwrt.Cluster, mode snapMode, total int, seed uint64) runResult {
	procs := cl.Topology().Procs
	stop := make(chan struct{})
	var (
		snaps atomic.Int64
		swg   sync.WaitGroup
		stwID atomic.Uint64
	)
	rec0, mk0 := cl.Stats().Recorded.Load(), cl.Stats().MarkersSent.Load()
	if mode != noSnap {
		swg.Add(1)
		go func() {
			defer swg.Done()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				var err error
				if mode == clSnap {
					var s spec.SnapID
					if s, err = cl.Snapshot(procs[k%len(procs)]); err == nil {
						_, err = cl.Collect(ctx, s)
					}
				} else {
					_, err = cl.StopTheWorld(ctx, spec.SnapID(stwID.Add(1)))
				}
				cancel()
				if err != nil {
					tb.Errorf("%s snapshot: %v", mode, err)
					return
				}
				snaps.Add(1)
			}
		}()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, p := range procs {
		n := total / len(procs)
		if i < total%len(procs) {
			n++
		}
		out := cl.Topology().Out(p)
		node := cl.Node(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for k := 0; k < n; k++ {
				if err := node.Transfer(out[rng.IntN(len(out))].To, 1); err != nil {
					tb.Errorf("transfer: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Throughput counts delivered transfers: wait for the backlog too.
	qctx, qcancel := context.WithTimeout(context.Background(), time.Minute)
	if err := cl.Quiesce(qctx); err != nil {
		tb.Error(err)
	}
	qcancel()
	elapsed := time.Since(start)
	close(stop)
	swg.Wait()
	return runResult{elapsed: elapsed, snaps: int(snaps.Load()),
		recorded: cl.Stats().Recorded.Load() - rec0, markers: cl.Stats().MarkersSent.Load() - mk0}
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

// BenchmarkThroughput is application throughput on the in-memory runtime
// (8 nodes, complete graph, no delays): without snapshots, with a
// Chandy-Lamport snapshot every 10ms, and with a stop-the-world snapshot
// (hold all sends, drain channels, record, resume) every 10ms.
func BenchmarkThroughput(b *testing.B) {
	topo := spec.Complete(8)
	for _, mode := range []snapMode{noSnap, clSnap, stw} {
		b.Run(string(mode), func(b *testing.B) {
			cl := benchCluster(b, topo)
			defer cl.Stop(context.Background())
			b.ResetTimer()
			r := throughputRun(b, cl, mode, b.N, 1)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/r.elapsed.Seconds(), "transfers/s")
			b.ReportMetric(float64(r.snaps), "snapshots")
			if mode == clSnap && r.snaps > 0 {
				b.ReportMetric(float64(r.recorded)/float64(r.snaps), "recorded-msgs/snap")
			}
		})
	}
}

// BenchmarkThroughputSideBySide runs the three modes back to back in each
// iteration on the same cluster (same work, 60k transfers each; run it with -benchtime=10x) and
// reports the median throughput ratios against no snapshots.
func BenchmarkThroughputSideBySide(b *testing.B) {
	topo := spec.Complete(8)
	cl := benchCluster(b, topo)
	defer cl.Stop(context.Background())
	const work = 60_000
	var clR, stwR []float64
	var clSnaps, stwSnaps int
	for i := 0; i < b.N; i++ {
		base := throughputRun(b, cl, noSnap, work, uint64(i))
		c := throughputRun(b, cl, clSnap, work, uint64(i))
		s := throughputRun(b, cl, stw, work, uint64(i))
		clR = append(clR, base.elapsed.Seconds()/c.elapsed.Seconds())
		stwR = append(stwR, base.elapsed.Seconds()/s.elapsed.Seconds())
		clSnaps += c.snaps
		stwSnaps += s.snaps
	}
	b.ReportMetric(median(clR), "cl/none-throughput")
	b.ReportMetric(median(stwR), "stw/none-throughput")
	b.ReportMetric(float64(clSnaps)/float64(b.N), "cl-snaps/iter")
	b.ReportMetric(float64(stwSnaps)/float64(b.N), "stw-snaps/iter")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
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
				per := float64(cl.Stats().MarkersSent.Load()-m0) / float64(b.N)
				if per != float64(len(topo.Chans)) {
					b.Fatalf("%v markers per snapshot, want %d (channels)", per, len(topo.Chans))
				}
				b.ReportMetric(per, "markers/snap")
				b.ReportMetric(float64(len(topo.Chans)), "channels")
			})
		}
	}
}
