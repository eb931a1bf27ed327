package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// TestRuntimeRestoreQueued checks restore ordering against traffic
// already waiting (impl/runtime/doc.go, Restore): a restored node
// delivers each incoming channel's recorded messages before any frame
// from the transport, including frames a peer pushed into its inbox
// before the node's loop started. A randomised run (as TestRuntimeRestore's,
// on a ring and a ring with a chord) collects its busiest snapshot; it is
// then restored three times in a row, each time node by node
// (runtime.NewNode with From) on one in-memory transport, every node
// sending to each of its out-neighbours the moment it is built and then
// from its own goroutine: nodes built later find new frames queued in
// their inboxes before they start, nodes built earlier receive them while
// they re-deliver. Every restored run is audited as TestRuntimeRestore
// audits one: no channel fails, each node starts in its recorded state,
// each channel's first deliveries are the recorded messages then new
// traffic numbered on from the cut, and the original run's events before
// the cut followed by the restored run replay through the model, drained.
func TestRuntimeRestoreQueued(t *testing.T) {
	root := rootSeed(t)
	chord, err := spec.NewTopology([]spec.ProcID{"P1", "P2", "P3", "P4"}, []spec.Channel{
		{From: "P1", To: "P2"}, {From: "P2", To: "P3"}, {From: "P3", To: "P4"}, {From: "P4", To: "P1"}, {From: "P1", To: "P3"}, {From: "P3", To: "P1"}})
	require.NoError(t, err)
	for i, topo := range []*spec.Topology{spec.Ring(3), chord} {
		w := workload{root: root, seed: subSeed(root, i, "restore-queued"), delay: subSeed(root, i, "restore-queued-delay"), transfers: 40, pairs: 2}
		t.Run(fmt.Sprintf("%dprocs-%dchans", len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(w.seed, 7))
			bal := map[spec.ProcID]int64{}
			for _, p := range topo.Procs {
				bal[p] = 50 + rng.Int64N(100)
			}
			first := runTraced(t, topo, transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 300 * time.Microsecond, Seed: w.delay}), w, rng, bal, nil)
			if r := replayRun(t, first.trace, w); !r.OK() {
				return
			}
			g := busiest(first.snaps)
			t.Logf("restoring snapshot %d (%d messages in flight) three times", g.ID, g.Recorded())
			for k := range 3 {
				w2 := w
				w2.seed = w.seed + 1000*uint64(k+1)
				restoreQueued(t, topo, bal, first.trace, g, w2)
			}
		})
	}
}

// restoreQueued restores g node by node with traffic at once (see
// TestRuntimeRestoreQueued) and audits the restored run against first,
// the run g was taken in.
func restoreQueued(t *testing.T, topo *spec.Topology, bal map[spec.ProcID]int64, first spec.Trace, g snapshot.Global, w workload) {
	t.Helper()
	h := spec.Header{Topology: topo, InitBal: bal, Source: fmt.Sprintf("conformance restore test: snapshot %d restored node by node, peers sending at once", g.ID)}
	bufs, sinks := nodeSinks(t, h)
	mem := transport.NewMemory(topo, transport.MemoryConfig{})
	var nodeErrs errorLog
	stats := &runtime.Stats{}
	nodes := map[spec.ProcID]*runtime.Node{}
	var wg sync.WaitGroup
	for i, p := range topo.Procs {
		b, err := app.NewBank(0) // the restore sets its balance
		require.NoError(t, err)
		n, err := runtime.NewNode(runtime.NodeConfig{Topology: topo, Self: p, App: b, Transport: mem, Trace: sinks[p], From: &g, Stats: stats, OnError: nodeErrs.add})
		require.NoError(t, err)
		nodes[p] = n
		out := topo.Out(p)
		for _, c := range out { // before the next node is even built
			_ = n.SendApp(c.To, app.Transfer(1))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(w.seed+uint64(i), 13))
			for range w.transfers / 2 {
				_ = n.SendApp(out[r.IntN(len(out))].To, app.Transfer(1+r.Int64N(10)))
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for stats.AppSent.Load() != stats.AppDelivered.Load() && ctx.Err() == nil && len(nodeErrs.all()) == 0 {
		time.Sleep(100 * time.Microsecond)
	}
	end := map[spec.ProcID]spec.LocalState{}
	for _, p := range topo.Procs {
		var err error
		end[p], err = nodes[p].State()
		require.NoError(t, err)
		for _, f := range nodes[p].FailedChannels() {
			t.Errorf("restore: a channel of the restored nodes failed (restored from snapshot %d, frames queued at start): %v", g.ID, f)
		}
		nodes[p].Stop()
	}
	require.NoError(t, mem.Close(), "frames left undelivered")
	require.NoError(t, ctx.Err(), "the restored nodes' channels did not drain")
	require.Empty(t, nodeErrs.all(), "node errors")
	for _, s := range sinks {
		require.NoError(t, s.Close())
	}
	evs := mergedSoFar(t, topo, nil, bufs)
	checkRestoredStart(t, g, evs, end)
	checkRestoredChannels(t, g, evs)
	prefix, _ := preRecording(first.Events, g.ID)
	tr := spec.Trace{Header: h, Events: renumber(append(prefix, evs...))}
	tr.Header.Drained = true
	checkPrefixReachesSnapshot(t, tr, len(prefix), g)
	replayRun(t, tr, w)
}
