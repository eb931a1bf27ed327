package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/spec/spectest"
)

// rtLockstep drives real impl/runtime nodes (goroutines, the Collector,
// the failure detector's suspicion path) through crashes, true and false
// suspicions, markers, transfers and a graceful stop, alongside
// model/faults.go (tla/ChandyLamportFaults.tla), the way faultLockstep
// does for the bare core. The nodes run on their own goroutines; the
// harness makes the run deterministic by moving frames one at a time
// through a gate (runtime_lockstep_gate_test.go) and waiting until the
// receiver has handled each, and by scheduling every suspicion itself
// (Node.Suspect, with the detector's timer off).
//
// What is compared, after every step:
//   - the runtime's own aborts (Faults of action Abort, from
//     core.WaitingOn at the suspecting node): each is the spec's
//     Abort(s, q), which must be enabled (s Pending, q suspected,
//     WaitsFor(s, q));
//   - the Collector's verdict on every initiated snapshot, asked at once
//     (a cancelled context): complete only when the model's s is Complete,
//     with exactly its recorded state; aborted only when the model's s is
//     aborted or Abort(s, q) is enabled for a cause q the verdict names;
//     else not complete;
//   - every live node's state, suspicions (of its in-neighbours) and
//     recording of every snapshot not aborted; every channel's frames
//     (markers of aborted snapshots aside, see below);
//   - Draining (what a graceful stop waits for) at a random live node, and
//     at every live node after the stop: the in-neighbours neither done
//     nor suspected there, and the snapshots recorded there and not
//     finished.
//
// The spec's suspicions and aborts are global, the runtime's local: a
// Detect(q) or FalseSuspect(q) is a Suspect(q) at every live node that
// hears q (q's out-neighbours: a node suspects only its in-neighbours).
// The model has a transfer to a suspected q refused; a node that does not
// hear q cannot know, so the harness draws no such transfer. Once the
// model's s is aborted, its markers are dropped (DropMarker) where a node
// that did not abort s still receives them: the harness then takes the
// model's DropMarker when the marker is one the model has, and no step
// for a marker only the runtime sent (a node that recorded s after the
// abort), and it no longer compares s's recordings.
type rtLockstep struct {
	t        *rapid.T
	cfg      *model.Config
	st       *model.State
	amounts  []int64
	stepGate *stepGate
	col      *runtime.Collector
	nodes    map[spec.ProcID]*runtime.Node
	stats    map[spec.ProcID]*runtime.Stats
	crashed  map[spec.ProcID]bool
	finished bool // the graceful stop began: every live node finished

	mu     sync.Mutex
	faults []runtime.Fault // OnFault, every node's, in order
	errs   []error         // OnError
	parts  map[spec.SnapID]map[spec.ProcID]snapshot.Part

	nextFault int
	verdict   map[spec.SnapID]string // the Collector's final verdict, once given
	last      string
	seen      map[string]int
}

func drawRTLockstep(t *rapid.T, seen map[string]int) *rtLockstep {
	topo := spectest.Topology(t, rapid.IntRange(3, 5).Draw(t, "procs"))
	if n := len(topo.Procs); len(topo.Chans) < n*(n-1) {
		seen["non-complete topology"]++
	}
	bal, budget := map[spec.ProcID]int64{}, map[spec.ProcID]int{}
	for _, p := range topo.Procs {
		bal[p] = rapid.Int64Range(0, 60).Draw(t, "bal "+string(p))
		budget[p] = rapid.IntRange(0, 12).Draw(t, "budget "+string(p))
	}
	ids := rapid.SliceOfNDistinct(rapid.Uint64Range(1, 9), 1, 3, rapid.ID[uint64]).Draw(t, "snaps")
	initiator := map[spec.SnapID]spec.ProcID{}
	for _, s := range ids {
		initiator[spec.SnapID(s)] = rapid.SampledFrom(topo.Procs).Draw(t, fmt.Sprintf("initiator %d", s))
	}
	k := model.Constants{Topo: topo, InitBal: bal, Amount: []int64{1, 5, 20}, Budget: budget, Initiator: initiator,
		MaxCrash: 1, FalseSuspicion: true}
	cfg, err := model.NewConfig(k, model.VariantFaults, faultInvariants, nil)
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	l := &rtLockstep{t: t, cfg: cfg, st: model.Init(cfg), amounts: k.Amount, stepGate: newStepGate(topo),
		col: runtime.NewCollector(topo), nodes: map[spec.ProcID]*runtime.Node{}, stats: map[spec.ProcID]*runtime.Stats{},
		crashed: map[spec.ProcID]bool{}, parts: map[spec.SnapID]map[spec.ProcID]snapshot.Part{},
		verdict: map[spec.SnapID]string{}, seen: seen, last: "the start"}
	for _, p := range topo.Procs {
		l.startNode(p, bal[p])
	}
	l.check()
	return l
}

// startNode starts p's node on the gate, with its own Stats, the shared
// Collector, and the harness's fault, error and part hooks.
func (l *rtLockstep) startNode(p spec.ProcID, bal int64) {
	b, err := app.NewBank(bal)
	if err != nil {
		l.t.Fatalf("bank: %v", err)
	}
	l.stats[p] = &runtime.Stats{}
	n, err := runtime.NewNode(runtime.NodeConfig{
		Topology: l.cfg.Topo, Self: p, App: b, Transport: l.stepGate, Collector: l.col, Stats: l.stats[p],
		OnFault: func(f runtime.Fault) { l.mu.Lock(); l.faults = append(l.faults, f); l.mu.Unlock() },
		OnError: func(err error) { l.mu.Lock(); l.errs = append(l.errs, err); l.mu.Unlock() },
		OnPart: func(part snapshot.Part) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.parts[part.Snap] == nil {
				l.parts[part.Snap] = map[spec.ProcID]snapshot.Part{}
			}
			l.parts[part.Snap][part.Node.Proc] = part
		},
	})
	if err != nil {
		l.t.Fatalf("node %s: %v", p, err)
	}
	l.nodes[p] = n
}

// close stops the live nodes and the transport.
func (l *rtLockstep) close() {
	for p, n := range l.nodes {
		if !l.crashed[p] {
			n.Stop()
		}
	}
	_ = l.stepGate.Close()
}

func (l *rtLockstep) nErrs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.errs)
}

// live lists the processes that have not crashed.
func (l *rtLockstep) live() []spec.ProcID {
	var out []spec.ProcID
	for _, p := range l.cfg.Topo.Procs {
		if !l.crashed[p] {
			out = append(out, p)
		}
	}
	return out
}

// hearers lists the live nodes that hear q (q's live out-neighbours): the
// only ones whose detector can suspect it.
func (l *rtLockstep) hearers(q spec.ProcID) []spec.ProcID {
	var out []spec.ProcID
	for _, c := range l.cfg.Topo.Out(q) {
		if !l.crashed[c.To] {
			out = append(out, c.To)
		}
	}
	return out
}

func (l *rtLockstep) suspectedInModel(q spec.ProcID) bool {
	return l.st.Suspected.Has(l.cfg.Topo.ProcIndex(q))
}

// apply takes the model's step next (err: refused) for the runtime's step
// what, checks the faults spec's invariants, then settles the runtime's
// verdicts (sync) and compares the states (check).
func (l *rtLockstep) apply(what string, next *model.State, err error) {
	l.t.Helper()
	l.step(what, next, err)
	l.sync()
	l.check()
}

// step takes one model step, without sync or check.
func (l *rtLockstep) step(what string, next *model.State, err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatalf("after %s: the runtime took %s, the model refuses: %v", l.last, what, err)
	}
	l.st, l.last = next, what
	for _, name := range faultInvariants {
		if f, _ := model.InvariantByName(name); !f(l.cfg, l.st) {
			l.t.Fatalf("after %s: %s is violated", what, name)
		}
	}
}

// send has c.From transfer a to c.To (Node.SendApp) where SendAppF may be
// taken or refused by a rule the sender can know.
func (l *rtLockstep) send(c spec.Channel, a int64) {
	l.t.Helper()
	next, refused := model.SendAppF(l.cfg, l.st, c.From, c.To, a)
	var ne *model.NotEnabled
	if errors.As(refused, &ne) && ne.Conjunct == model.BudgetSpent {
		return // the model's bound on the run, not a rule of the algorithm
	}
	err := l.nodes[c.From].SendApp(c.To, app.Transfer(a))
	switch {
	case refused == nil && err != nil:
		l.t.Fatalf("SendAppF(%s, %s, %d) is enabled, the runtime refused: %v", c.From, c.To, a, err)
	case refused != nil && err == nil:
		l.t.Fatalf("%v; the runtime sent it", refused)
	case refused != nil:
		want := core.ErrApp
		if ne.Conjunct == model.ReceiverSuspected {
			want, l.seen["send to a suspected peer refused"] = core.ErrSuspected, l.seen["send to a suspected peer refused"]+1
		}
		if !errors.Is(err, want) {
			l.t.Fatalf("%v; the runtime refused with %v, want %v", refused, err, want)
		}
		l.check()
		return
	}
	l.apply(fmt.Sprintf("SendApp(%s, %s, %d)", c.From, c.To, a), next, nil)
}

// deliver moves the oldest frame of c into its live receiver and waits
// until the node has handled it; the model takes RecvAppF, RecvMarkerF or
// DropMarker (see rtLockstep), or nothing for a done frame.
func (l *rtLockstep) deliver(c spec.Channel) {
	l.t.Helper()
	st, e0 := l.stats[c.To], l.nErrs()
	before := handled(st)
	env, err := l.stepGate.release(c)
	if err != nil {
		l.t.Fatalf("release %s: %v", c, err)
	}
	if err := awaitHandled(st, before, l.nErrs, e0); err != nil {
		l.t.Fatalf("delivering %s on %s: %v", env.Frame, c, err)
	}
	if n := l.nErrs(); n > e0 {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.t.Fatalf("delivering %s on %s: the node failed: %v", env.Frame, c, l.errs[e0:])
	}
	what := fmt.Sprintf("%s delivered on %s", env.Frame, c)
	switch {
	case env.Frame.Kind == wire.KindDone:
		l.sync()
		l.check()
	case env.Frame.Kind == wire.KindApp:
		next, err := model.RecvAppF(l.cfg, l.st, c.From, c.To)
		l.apply(what, next, err)
	default:
		l.deliverMarker(c, env.Frame.Snap, what)
	}
}

// deliverMarker is the model's share of a marker of s delivered on c.
func (l *rtLockstep) deliverMarker(c spec.Channel, s spec.SnapID, what string) {
	l.t.Helper()
	si := l.cfg.SnapIndex(s)
	if !model.Aborted(l.st, si) {
		next, err := model.RecvMarkerF(l.cfg, l.st, c.From, c.To)
		l.apply(what, next, err)
		return
	}
	l.seen["marker of an aborted snapshot"]++
	ci := l.cfg.ChanIndex(c.From, c.To)
	if q := l.st.Chan[ci]; len(q) > 0 && q[0].Kind == model.KindMarker && q[0].Snap == si {
		next, err := model.DropMarker(l.cfg, l.st, c.From, c.To)
		l.apply(what, next, err)
		return
	}
	l.last = what + " (sent after the abort: no step of the spec)"
	l.sync()
	l.check()
}

// initiate has s's live initiator initiate it. The runtime refuses while
// the initiator suspects a peer (ErrPeerSuspected), a stronger guard than
// InitiateF's: the model then takes no step.
func (l *rtLockstep) initiate(s spec.SnapID) {
	l.t.Helper()
	p := l.cfg.Topo.Procs[l.cfg.Initiator[l.cfg.SnapIndex(s)]]
	next, refused := model.InitiateF(l.cfg, l.st, s)
	err := l.nodes[p].Initiate(s)
	switch {
	case errors.Is(err, runtime.ErrPeerSuspected):
		if !l.suspectsAny(p) {
			l.t.Fatalf("%s refused to initiate %d for a suspicion, suspecting no one: %v", p, s, err)
		}
		l.seen["initiate refused while suspecting"]++
		return
	case refused == nil && err != nil:
		l.t.Fatalf("InitiateF(%d) is enabled, %s refused: %v", s, p, err)
	case refused != nil && err == nil:
		l.t.Fatalf("%v; %s initiated it", refused, p)
	case refused != nil:
		if !errors.Is(err, core.ErrDuplicateSnap) {
			l.t.Fatalf("%v; %s refused with %v, want ErrDuplicateSnap", refused, p, err)
		}
		return
	}
	l.apply(fmt.Sprintf("Initiate(%d) at %s", s, p), next, nil)
}

// suspectsAny reports whether p suspects one of its in-neighbours.
func (l *rtLockstep) suspectsAny(p spec.ProcID) bool {
	any := false
	l.inspect(p, func(cn *core.Node) {
		for _, c := range l.cfg.Topo.In(p) {
			any = any || cn.Suspected(c.From)
		}
	})
	return any
}

// crash crashes p's node (Node.Crash: no one is told).
func (l *rtLockstep) crash(p spec.ProcID) {
	l.t.Helper()
	next, err := model.Crash(l.cfg, l.st, p)
	l.nodes[p].Crash()
	l.crashed[p] = true
	l.apply(fmt.Sprintf("Crash(%s)", p), next, err)
}

// suspect is Detect(q) (q crashed) or FalseSuspect(q): every live node
// that hears q suspects it (Node.Suspect), aborting what waits for it.
func (l *rtLockstep) suspect(q spec.ProcID) {
	l.t.Helper()
	detect, kind := model.Detect, "detect"
	if !l.crashed[q] {
		detect, kind = model.FalseSuspect, "false suspicion"
	}
	l.seen[kind]++
	next, err := detect(l.cfg, l.st, q)
	l.step(fmt.Sprintf("Suspect(%s) at %v", q, l.hearers(q)), next, err)
	for _, p := range l.hearers(q) {
		if serr := l.nodes[p].Suspect(q, "the lockstep's schedule"); serr != nil {
			l.t.Fatalf("%s, which hears %s, cannot suspect it: %v", p, q, serr)
		}
	}
	l.sync()
	l.check()
}

// sync takes the model's steps for what the runtime decided on its own:
// each node's aborts, then each initiated snapshot's Collector verdict.
func (l *rtLockstep) sync() {
	l.t.Helper()
	l.mu.Lock()
	fs := append([]runtime.Fault(nil), l.faults[l.nextFault:]...)
	l.nextFault = len(l.faults)
	l.mu.Unlock()
	for _, f := range fs {
		l.fault(f)
	}
	for si, s := range l.cfg.Snap {
		if _, done := l.verdict[s]; !done && model.Initiated(l.cfg, l.st, si) {
			l.collect(si, s)
		}
	}
}

// fault checks one Fault a node reported: a suspicion the harness asked
// for, or an abort the spec allows (Abort(s, q) enabled, unless another
// node's abort of s already took it).
func (l *rtLockstep) fault(f runtime.Fault) {
	l.t.Helper()
	switch f.Action {
	case spec.Suspect:
		if !l.suspectedInModel(f.Peer) || !slices.Contains(l.hearers(f.Peer), f.Node) {
			l.t.Fatalf("after %s: %s suspected %s on its own: %s", l.last, f.Node, f.Peer, f)
		}
	case spec.Abort:
		si := l.cfg.SnapIndex(f.Snap)
		l.seen["node abort"]++
		if model.Aborted(l.st, si) {
			if !l.suspectedInModel(f.Peer) {
				l.t.Fatalf("after %s: %s aborted %d for %s, which the spec does not suspect", l.last, f.Node, f.Snap, f.Peer)
			}
			return
		}
		next, err := model.Abort(l.cfg, l.st, f.Snap, f.Peer)
		if err != nil {
			l.t.Fatalf("after %s: %s aborted snapshot %d for %s (%s), but the spec's Abort(%d, %s) is not enabled: %v",
				l.last, f.Node, f.Snap, f.Peer, f, f.Snap, f.Peer, err)
		}
		l.step(fmt.Sprintf("%s: abort %d for %s", f.Node, f.Snap, f.Peer), next, nil)
	default:
		l.t.Fatalf("after %s: %s reported %s, which the lockstep never causes", l.last, f.Node, f)
	}
}

// collect asks the Collector for s at once and compares its verdict with
// the model's state.
func (l *rtLockstep) collect(si int, s spec.SnapID) {
	l.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g, err := l.col.Collect(ctx, s)
	var ab *runtime.AbortedError
	var inc *runtime.IncompleteError
	switch {
	case err == nil:
		l.verdict[s] = "complete"
		l.seen["collected complete"]++
		if !model.Complete(l.cfg, l.st, si) || model.Aborted(l.st, si) {
			l.t.Fatalf("after %s: the Collector assembled snapshot %d, which the spec has %s", l.last, s, l.specVerdict(si))
		}
		if d := RecordedState(l.cfg, l.st, si).Diff(g.Abstract()); d != "" {
			l.t.Fatalf("after %s: snapshot %d collected is not the spec's recorded state (model vs collected):\n%s", l.last, s, d)
		}
	case errors.As(err, &ab):
		l.verdict[s] = "aborted"
		l.seen["collected aborted"]++
		l.collectAborted(si, s, ab)
	case errors.As(err, &inc) && errors.Is(inc.Cause, context.Canceled):
		if model.Complete(l.cfg, l.st, si) || model.Aborted(l.st, si) {
			l.t.Fatalf("after %s: the Collector has snapshot %d unfinished (%v), the spec has it %s", l.last, s, err, l.specVerdict(si))
		}
	default:
		l.t.Fatalf("after %s: Collect(%d): %v", l.last, s, err)
	}
}

// collectAborted checks an aborted verdict: the model's s is aborted, or
// may be now for a cause the verdict names (then the model aborts it).
func (l *rtLockstep) collectAborted(si int, s spec.SnapID, ab *runtime.AbortedError) {
	l.t.Helper()
	if model.Aborted(l.st, si) {
		return
	}
	for _, q := range ab.Causes() {
		if next, err := model.Abort(l.cfg, l.st, s, q); err == nil {
			l.step(fmt.Sprintf("the Collector's verdict: %d aborted for %s", s, q), next, nil)
			return
		}
	}
	var why []string
	for _, q := range ab.Causes() {
		_, err := model.Abort(l.cfg, l.st, s, q)
		why = append(why, err.Error())
	}
	l.t.Fatalf("after %s: the Collector reports snapshot %d aborted (%v), but the spec has it %s and aborts it for none of its causes (WaitsFor): %s",
		l.last, s, ab, l.specVerdict(si), strings.Join(why, "; "))
}

// specVerdict names the model's state of snapshot index si.
func (l *rtLockstep) specVerdict(si int) string {
	switch {
	case model.Aborted(l.st, si):
		return "aborted"
	case model.Complete(l.cfg, l.st, si):
		return "complete"
	case model.Initiated(l.cfg, l.st, si):
		return "pending"
	}
	return "not initiated"
}

// inspect runs f with p's core on its goroutine.
func (l *rtLockstep) inspect(p spec.ProcID, f func(*core.Node)) {
	l.t.Helper()
	if err := l.nodes[p].Inspect(f); err != nil {
		l.t.Fatalf("inspect %s: %v", p, err)
	}
}
