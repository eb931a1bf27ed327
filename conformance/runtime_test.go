package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// workload is a concurrent run: every process transfers random amounts to
// random neighbours from its own goroutine while snapshots start at random
// initiators, in pairs at the same moment.
type workload struct {
	seed      uint64
	transfers int // per process
	pairs     int // snapshot pairs started concurrently
}

// runCluster runs w on a runtime.Cluster of banks over tr, collects every
// snapshot from the collector, merges the nodes' event logs with
// spec.MergeCausal and replays the result (Replay, which also runs
// CheckRun on the collector's snapshots). It returns the report.
func runCluster(t *testing.T, topo *spec.Topology, tr transport.Transport, w workload) Report {
	t.Helper()
	rng := rand.New(rand.NewPCG(w.seed, 7))
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 50 + rng.Int64N(100)
	}
	h := spec.Header{Topology: topo, InitBal: bal, Source: "conformance runtime test"}
	bufs := map[spec.ProcID]*bytes.Buffer{}
	sinks := map[spec.ProcID]*trace.Sink{}
	for _, p := range topo.Procs {
		bufs[p] = &bytes.Buffer{}
		s, err := trace.NewSink(bufs[p], h)
		require.NoError(t, err)
		sinks[p] = s
	}
	var errMu sync.Mutex
	var nodeErrs []error
	c, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, Transport: tr, Traces: sinks,
		NewApp: func(p spec.ProcID) (core.App, error) { return app.NewBank(bal[p]) },
		OnError: func(err error) {
			errMu.Lock()
			nodeErrs = append(nodeErrs, err)
			errMu.Unlock()
		},
	})
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i, p := range topo.Procs {
		out := topo.Out(p)
		seed := w.seed + uint64(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 11))
			for k := 0; k < w.transfers; k++ {
				// Refusals (insufficient funds) are part of the workload.
				_ = c.Transfer(p, out[r.IntN(len(out))].To, 1+r.Int64N(30))
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				}
			}
		}()
	}
	var ids []spec.SnapID
	var idMu sync.Mutex
	for k := 0; k < w.pairs; k++ {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		var pw sync.WaitGroup
		for j := 0; j < 2; j++ {
			init := topo.Procs[rng.IntN(len(topo.Procs))]
			pw.Add(1)
			go func() {
				defer pw.Done()
				s, err := c.Snapshot(init)
				if err == nil {
					idMu.Lock()
					ids = append(ids, s)
					idMu.Unlock()
				}
			}()
		}
		pw.Wait()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec := map[spec.SnapID]spec.GlobalState{}
	for _, s := range ids {
		g, err := c.Collect(ctx, s)
		require.NoError(t, err, "collect snapshot %d", s)
		rec[s] = g.Abstract()
	}
	require.NoError(t, c.Quiesce(ctx))
	require.NoError(t, c.Stop(ctx))
	for _, s := range sinks {
		require.NoError(t, s.Close())
	}
	require.Empty(t, nodeErrs, "node errors")
	require.Len(t, rec, 2*w.pairs)

	logs := map[spec.ProcID][]spec.Event{}
	for p, b := range bufs {
		nt, err := spec.ReadTrace(b)
		require.NoError(t, err, "trace of %s", p)
		logs[p] = nt.Events
	}
	merged, err := spec.MergeCausal(topo, logs)
	require.NoError(t, err)
	h.Snaps, h.Drained = c.Initiators(), true
	tr2 := spec.Trace{Header: h, Events: merged, Recorded: RecordedSnapshots(rec, h.Snaps)}
	r := Replay(tr2, Options{})
	inFlight := 0
	for _, g := range rec {
		for _, ms := range g.Chans {
			inFlight += len(ms)
		}
	}
	t.Logf("%d events, %d snapshots recording %d messages in flight", len(merged), len(rec), inFlight)
	if !r.OK() {
		require.NoError(t, os.MkdirAll(FailDir(), 0o755))
		path := filepath.Join(FailDir(), fmt.Sprintf("%s-seed%d.jsonl", filepath.Base(t.Name()), w.seed))
		require.NoError(t, WriteTraceFile(path, tr2))
		t.Errorf("runtime run (seed %d) does not conform; written to %s\n%s", w.seed, path, r)
	}
	return r
}

// TestRuntimeMemory runs the concurrent runtime over the in-memory
// transport with random delays, several seeds and topologies.
func TestRuntimeMemory(t *testing.T) {
	topos := []*spec.Topology{spec.Complete(4), spec.Ring(5), spec.Complete(3)}
	for i, topo := range topos {
		seed := uint64(time.Now().UnixNano())
		t.Run(fmt.Sprintf("%dprocs-%dchans", len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
			tr := transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 300 * time.Microsecond, Seed: seed})
			r := runCluster(t, topo, tr, workload{seed: seed + uint64(i), transfers: 60, pairs: 3})
			t.Logf("seed %d: %s", seed, r)
		})
	}
}

// TestRuntimeTCP runs the concurrent runtime once over loopback TCP.
func TestRuntimeTCP(t *testing.T) {
	topo := spec.Complete(3)
	addrs := map[spec.ProcID]string{}
	for _, p := range topo.Procs {
		addrs[p] = "127.0.0.1:0"
	}
	tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs})
	require.NoError(t, err)
	seed := uint64(time.Now().UnixNano())
	r := runCluster(t, topo, tr, workload{seed: seed, transfers: 40, pairs: 2})
	t.Logf("seed %d: %s", seed, r)
}
