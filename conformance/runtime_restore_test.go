package conformance

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// TestRuntimeRestore checks impl/runtime's restore against the model. A
// randomised run (as TestRuntimeMemory's) collects its snapshots; the one
// with the most messages in flight is restored into a fresh cluster whose
// nodes start sending at once, while they re-deliver the recorded
// messages, and which takes snapshots of its own. Then:
//
//   - every restored node starts from its recorded state (the state before
//     its first event is the snapshot's);
//   - on every channel, the restored cluster's first deliveries are the
//     recorded messages, in order, then the new traffic, numbered on from
//     the cut (the sender's first new message is the cut's Sent+1);
//   - the restored run, prefixed with the original run's application
//     events before the snapshot's cut (by the Chandy-Lamport theorem they
//     reach exactly the recorded state, channels included), is a behaviour
//     of the spec: Replay steps it through the model, checks the restored
//     cluster's own snapshots against the model's recorded states and its
//     drained end;
//   - the whole history, the original run, a restore line and the
//     restored run, is audited as one (spec.Restore): the snapshot
//     complete in the first incarnation, every node resuming in its
//     recorded state, and the ledger of transfers across the restore.
func TestRuntimeRestore(t *testing.T) {
	root := rootSeed(t)
	for i, topo := range []*spec.Topology{spec.Complete(3), spec.Ring(4)} {
		w := workload{root: root, seed: subSeed(root, i, "restore"), delay: subSeed(root, i, "restore-delay"), transfers: 50, pairs: 2}
		t.Run(fmt.Sprintf("memory-%dprocs-%dchans", len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
			newTr := func(k uint64) transport.Transport {
				return transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 300 * time.Microsecond, Seed: w.delay + k})
			}
			restoreRun(t, topo, w, newTr)
		})
	}
	t.Run("tcp-3procs", func(t *testing.T) {
		topo := spec.Complete(3)
		w := workload{root: root, seed: subSeed(root, 9, "restore"), transfers: 30, pairs: 2}
		restoreRun(t, topo, w, func(uint64) transport.Transport {
			addrs := map[spec.ProcID]string{}
			for _, p := range topo.Procs {
				addrs[p] = "127.0.0.1:0"
			}
			tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs})
			require.NoError(t, err)
			return tr
		})
	})
}

// restoreRun runs w, restores its busiest snapshot into a new cluster
// running w again, and checks the restore (see TestRuntimeRestore).
func restoreRun(t *testing.T, topo *spec.Topology, w workload, newTr func(k uint64) transport.Transport) {
	rng := rand.New(rand.NewPCG(w.seed, 7))
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 50 + rng.Int64N(100)
	}
	first := runTraced(t, topo, newTr(0), w, rng, bal, nil)
	if r := replayRun(t, first.trace, w); !r.OK() {
		return
	}
	g := busiest(first.snaps)
	t.Logf("restoring snapshot %d (%d messages in flight)", g.ID, g.Recorded())

	w2 := w
	w2.seed = w.seed + 1000
	second := runTraced(t, topo, newTr(1), w2, rng, bal, &g)
	checkRestoredStart(t, g, second.trace.Events, second.end)
	checkRestoredChannels(t, g, second.trace.Events)

	prefix, _ := preRecording(first.trace.Events, g.ID)
	tr := spec.Trace{Header: second.trace.Header, Events: renumber(append(prefix, second.trace.Events...)), Recorded: second.trace.Recorded}
	tr.Header.Source = fmt.Sprintf("conformance restore test: the application events before snapshot %d's cut, then the cluster restored from it", g.ID)
	checkPrefixReachesSnapshot(t, tr, len(prefix), g)
	replayRun(t, tr, w2)

	// The in-memory Cluster numbers a restored run's snapshots from
	// g.ID+1, which may be ids the first run used after g; a history
	// numbers them apart (as RunProcess does), so the restored run's are
	// moved above the first run's.
	second.trace = moveSnapIDs(second.trace, maxSnapID(first.trace))
	hist := first.trace
	hist.Header.Drained = second.trace.Header.Drained
	hist.Header.Snaps = maps.Clone(first.trace.Header.Snaps)
	if hist.Header.Snaps == nil {
		hist.Header.Snaps = map[spec.SnapID]spec.ProcID{}
	}
	maps.Copy(hist.Header.Snaps, second.trace.Header.Snaps)
	hist.Header.Source = fmt.Sprintf("conformance restore test: a run, a restore from its snapshot %d, the restored run", g.ID)
	hist.Restores = []spec.Restore{{Snap: g.ID, Incarnation: 2, At: len(hist.Events)}}
	hist.Events = append(append([]spec.Event(nil), hist.Events...), second.trace.Events...)
	hist.Recorded = append(append([]spec.RecordedSnapshot(nil), hist.Recorded...), second.trace.Recorded...)
	if r := replayRun(t, hist, w2); r.OK() && r.Incarnations != 2 {
		t.Errorf("the history of a run and its restore is audited as %d incarnations, want 2", r.Incarnations)
	}
}

// busiest is the snapshot with the most recorded messages (the lowest id
// among equals).
func busiest(snaps map[spec.SnapID]snapshot.Global) snapshot.Global {
	var best snapshot.Global
	for _, g := range snaps {
		if best.ID == 0 || g.Recorded() > best.Recorded() || g.Recorded() == best.Recorded() && g.ID < best.ID {
			best = g
		}
	}
	return best
}

// checkRestoredStart: every restored node starts from its recorded state
// (the state before its first event; a node with no event ends in it).
func checkRestoredStart(t *testing.T, g snapshot.Global, evs []spec.Event, end map[spec.ProcID]spec.LocalState) {
	t.Helper()
	for _, n := range g.Nodes {
		got, ok := stateBefore(n.Proc, evs)
		if !ok {
			got = end[n.Proc]
		}
		if got != n.State {
			t.Errorf("restore: %s started from %s, but snapshot %d recorded %s", string(n.Proc), fmtLocal(n.Proc, got), g.ID, fmtLocal(n.Proc, n.State))
		}
	}
}

// checkRestoredChannels: on every channel the restored run's first
// receives are the recorded messages in order, then messages numbered on
// without a gap; its first send is numbered the cut's Sent+1.
func checkRestoredChannels(t *testing.T, g snapshot.Global, evs []spec.Event) {
	t.Helper()
	cut := g.Cut()
	recv := map[spec.Channel][]spec.AppMsg{}
	firstSend := map[spec.Channel]uint64{}
	for _, e := range evs {
		switch e.Action {
		case spec.RecvApp:
			recv[e.Chan()] = append(recv[e.Chan()], spec.AppMsg{Amt: e.Amount, Seq: e.Msg})
		case spec.SendApp:
			if _, ok := firstSend[e.Chan()]; !ok {
				firstSend[e.Chan()] = e.Msg
			}
		}
	}
	for _, cs := range g.Chans {
		c, k := cs.Chan, cut[cs.Chan]
		got := recv[c]
		var want []spec.AppMsg
		for _, m := range cs.Msgs {
			want = append(want, spec.AppMsg{Amt: m.Amt, Seq: m.Seq})
		}
		n := min(len(want), len(got))
		if len(got) < len(want) || !slices.Equal(got[:n], want) {
			t.Errorf("restore: the first deliveries on %s are %s, but snapshot %d recorded %s in flight: they must come first, in order",
				c, spec.FormatMsgs(got[:min(len(got), len(want)+2)]), g.ID, spec.FormatMsgs(want))
			continue
		}
		for i, m := range got {
			if want := k.Got + 1 + uint64(i); m.Seq != want {
				t.Errorf("restore: delivery %d on %s after restoring snapshot %d (cut %s) is #%d, want #%d: the recorded messages, then new traffic from #%d",
					i+1, c, g.ID, k, m.Seq, want, k.Sent+1)
				break
			}
		}
		if s, ok := firstSend[c]; ok && s != k.Sent+1 {
			t.Errorf("restore: the first message sent on %s after restoring snapshot %d (cut %s) is #%d, want #%d", c, g.ID, k, s, k.Sent+1)
		}
	}
}

// checkPrefixReachesSnapshot: the model, stepped through the first n
// events of tr, is in exactly g's recorded state (balances, counters and
// every channel's messages): the state the restored cluster must start
// from.
func checkPrefixReachesSnapshot(t *testing.T, tr spec.Trace, n int, g snapshot.Global) {
	t.Helper()
	cfg, err := ConfigFromTrace(tr)
	require.NoError(t, err)
	st := stepModel(t, cfg, tr.Events[:n])
	if st == nil {
		return
	}
	if d := AppState(cfg, st).Diff(g.Abstract()); d != "" {
		t.Errorf("the application events before snapshot %d's cut do not reach its recorded state (model vs recorded):\n%s", g.ID, d)
	}
}

// stepModel steps the model from its initial state through evs; nil (and
// t failed) if one is not enabled or leaves another state.
func stepModel(t *testing.T, cfg *model.Config, evs []spec.Event) *model.State {
	t.Helper()
	st := model.Init(cfg)
	for i, e := range evs {
		next, d := step(cfg, st, e)
		if d != nil {
			d.Step, d.Action = i+1, e.String()
			t.Errorf("model step %d (%s): %s: %s (model %s, reported %s)", i+1, e, d.Property, d.Detail, d.Expected, d.Reported)
			return nil
		}
		st = next
	}
	return st
}

// maxSnapID is the largest snapshot id tr's events name.
func maxSnapID(tr spec.Trace) spec.SnapID {
	var m spec.SnapID
	for _, e := range tr.Events {
		m = max(m, e.Snap)
	}
	return m
}

// moveSnapIDs is tr with every snapshot id s (events, recorded snapshots,
// the header's initiators) renamed s+by.
func moveSnapIDs(tr spec.Trace, by spec.SnapID) spec.Trace {
	out := tr
	out.Events = append([]spec.Event(nil), tr.Events...)
	for i := range out.Events {
		if out.Events[i].Snap != 0 {
			out.Events[i].Snap += by
		}
	}
	out.Recorded = append([]spec.RecordedSnapshot(nil), tr.Recorded...)
	for i := range out.Recorded {
		out.Recorded[i].Snap += by
	}
	out.Header.Snaps = map[spec.SnapID]spec.ProcID{}
	for s, p := range tr.Header.Snaps {
		out.Header.Snaps[s+by] = p
	}
	return out
}
