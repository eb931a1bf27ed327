package conformance

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// barrierGraph is a random graph for tla/BarrierSnapshots.tla, both as
// the core's Graph and as the model's Config, with the index maps
// between them (the model orders nodes and edges by name).
type barrierGraph struct {
	g        *dataflow.Graph
	cfg      *barrier.Config
	node     []int // core node -> model node
	edge     []int // core edge -> model edge
	coreNode []int // model node -> core node
	coreEdge []int // model edge -> core edge
}

// drawBarrierGraph draws a graph the spec's ASSUME accepts: sources feed
// operators or the sink; every operator is fed by a source or an earlier
// operator and feeds a later operator or the sink (a DAG); when cyclic,
// some operators also have a back-edge to an earlier operator.
//
// adaptive draws a graph of tla/BarrierAdaptive.tla instead: the
// adaptive mode, some edges that are not back-edges force-aligned, and
// MaxTimeouts the number of nodes that may switch (never the binding
// conjunct: the core has no such bound, a run's timers are not counted).
func drawBarrierGraph(t *rapid.T, cyclic, adaptive bool) *barrierGraph {
	nSrc := rapid.IntRange(1, 3).Draw(t, "sources")
	nOp := rapid.IntRange(0, 3).Draw(t, "operators")
	if cyclic && nOp < 2 {
		nOp = 2
	}
	mode := dataflow.Mode(rapid.IntRange(0, 1).Draw(t, "mode"))
	if adaptive {
		mode = dataflow.Adaptive
	}
	k := barrier.Constants{Budget: map[string]int{}, Snk: "K",
		Cap: rapid.IntRange(1, 3).Draw(t, "cap"), Iter: rapid.IntRange(0, 2).Draw(t, "iter")}
	g := dataflow.Graph{Cap: k.Cap, Iter: k.Iter, Mode: mode}
	if mode == dataflow.Unaligned {
		k.Mode = barrier.Unaligned
	}
	for i := range nSrc {
		name := fmt.Sprintf("S%d", i)
		b := rapid.IntRange(0, 3).Draw(t, "budget")
		g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: name, Budget: b})
		k.Src = append(k.Src, name)
		k.Budget[name] = b
	}
	for i := range nOp {
		name := fmt.Sprintf("X%d", i)
		g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: name, Kind: dataflow.Operator})
		k.Op = append(k.Op, name)
	}
	snk := len(g.Nodes)
	g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: "K", Kind: dataflow.Sink})
	fwd := make([]int, snk) // each source's and operator's forward output target
	for i := range fwd {
		fwd[i] = -1
	}
	var unfed []int
	for s := range nSrc {
		unfed = append(unfed, s)
	}
	for i := range nOp {
		op := nSrc + i
		j := rapid.IntRange(0, len(unfed)-1).Draw(t, "feeder")
		fwd[unfed[j]] = op
		unfed = append(slices.Delete(unfed, j, j+1), op)
	}
	for n := range snk {
		if fwd[n] >= 0 {
			continue
		}
		lo := nSrc
		if n >= nSrc {
			lo = n + 1
		}
		fwd[n] = rapid.IntRange(lo, snk).Draw(t, "target")
	}
	for n := range snk {
		g.Edges = append(g.Edges, dataflow.EdgeSpec{From: n, To: fwd[n]})
	}
	if cyclic {
		for i := 1; i < nOp; i++ {
			if rapid.Bool().Draw(t, "back") || i == nOp-1 && len(k.Back) == 0 {
				to := nSrc + rapid.IntRange(0, i-1).Draw(t, "back-to")
				g.Edges = append(g.Edges, dataflow.EdgeSpec{From: nSrc + i, To: to, Back: true})
				k.Back = append(k.Back, [2]string{g.Nodes[nSrc+i].Name, g.Nodes[to].Name})
			}
		}
	}
	for _, e := range g.Edges {
		k.Edge = append(k.Edge, [2]string{g.Nodes[e.From].Name, g.Nodes[e.To].Name})
	}
	variant, invariants := barrier.VariantSpec, spec.BarrierInvariants
	if adaptive {
		variant, invariants = barrier.VariantAdaptive, spec.AdaptiveSpecInvariants
		drawForceAligned(t, &g, &k)
	}
	cg, err := dataflow.NewGraph(g)
	if err != nil {
		t.Fatalf("the core refuses a graph the spec accepts: %v", err)
	}
	cfg, err := barrier.NewConfig(k, variant, invariants, nil)
	if err != nil {
		t.Fatalf("the model refuses the drawn graph: %v", err)
	}
	bg := &barrierGraph{g: cg, cfg: cfg, coreNode: make([]int, len(cfg.Nodes)), coreEdge: make([]int, len(cfg.Edges))}
	for i, n := range cg.Nodes {
		m, _ := cfg.NodeIndex(n.Name)
		bg.node = append(bg.node, m)
		bg.coreNode[m] = i
	}
	for i, e := range cg.Edges {
		m, _ := cfg.EdgeIndex(cg.Nodes[e.From].Name, cg.Nodes[e.To].Name)
		bg.edge = append(bg.edge, m)
		bg.coreEdge[m] = i
	}
	return bg
}

// drawForceAligned marks some edges of g that are not back-edges
// force-aligned, in both the core's graph and the model's constants, and
// sets MaxTimeouts to the number of nodes, every one of which may switch.
func drawForceAligned(t *rapid.T, g *dataflow.Graph, k *barrier.Constants) {
	k.Mode, k.MaxTimeouts = barrier.Aligned, len(k.Src)+len(k.Op)+1 // every node may switch (a source on its outputs)
	for i, e := range g.Edges {
		if !e.Back && rapid.IntRange(0, 3).Draw(t, "force-aligned") == 0 {
			g.Edges[i].ForceAligned = true
			k.ForceAligned = append(k.ForceAligned, [2]string{g.Nodes[e.From].Name, g.Nodes[e.To].Name})
		}
	}
}

// coreErr is the core's refusal for conjunct k of the model's action
// kind: Timeout's own (timeoutErr), else conjunctErr's.
func coreErr(kind barrier.ActionKind, k barrier.Conjunct) (error, bool) {
	switch kind {
	case barrier.ActTimeout:
		err, ok := timeoutErr[k]
		return err, ok
	case barrier.ActTimeoutOut:
		err, ok := timeoutOutErr[k]
		return err, ok
	}
	err, ok := conjunctErr[k]
	return err, ok
}

// timeoutErr is the core's refusal for each enabling conjunct of TimeoutV
// (tla/BarrierAdaptive.tla lines 108-114; TimeoutsSpent bounds a model,
// not the core, and the drawn MaxTimeouts never binds).
var timeoutErr = map[barrier.Conjunct]error{
	barrier.AlreadyRecorded:     dataflow.ErrTimeoutRecorded,
	barrier.NotBlocked:          dataflow.ErrNotBlocked,
	barrier.AlreadySwitched:     dataflow.ErrAlreadySwitched,
	barrier.FeedsForceAligned:   dataflow.ErrFeedsForceAligned,
	barrier.ForceAlignedPending: dataflow.ErrForceAlignedPending,
}

// timeoutOutErr is the core's refusal for each enabling conjunct of
// TimeoutOutV (tla/BarrierAdaptive.tla lines 161-164; TimeoutsSpent as
// for TimeoutV).
var timeoutOutErr = map[barrier.Conjunct]error{
	barrier.NotRecorded:     dataflow.ErrTimeoutNotRecorded,
	barrier.AlreadySwitched: dataflow.ErrAlreadySwitched,
	barrier.NothingQueued:   dataflow.ErrNothingQueued,
}

// conjunctErr is the core's refusal for each enabling conjunct of the
// model's actions.
var conjunctErr = map[barrier.Conjunct]error{
	barrier.BudgetSpent:     dataflow.ErrBudgetSpent,
	barrier.NoRoom:          dataflow.ErrNoRoom,
	barrier.AlreadyRecorded: dataflow.ErrAlreadyRecorded,
	barrier.EmptyQueue:      dataflow.ErrEmpty,
	barrier.NotRecord:       dataflow.ErrNotRecord,
	barrier.Blocked:         dataflow.ErrBlocked,
	barrier.NotBarrier:      dataflow.ErrNotBarrier,
}

// barrierLockstep steps a dataflow.Cluster and the model side by side.
type barrierLockstep struct {
	t     *rapid.T
	seen  map[string]int // what the runs exercised (checkCovering)
	bg    *barrierGraph
	c     *dataflow.Cluster
	st    *barrier.State
	steps []string
}

// step applies model action a to both sides: both must take it, or both
// refuse it for the same conjunct; then the states must agree and the
// model's invariants hold.
func (l *barrierLockstep) step(a barrier.Action) {
	l.t.Helper()
	cfg := l.bg.cfg
	l.steps = append(l.steps, a.Label(cfg))
	ns, merr := a.Apply(cfg, l.st)
	cerr := l.coreStep(a)
	l.note(a, ns, merr)
	l.agree(a, merr, cerr)
	if merr != nil {
		return
	}
	l.st = ns
	l.compare(a.Label(cfg))
	for _, p := range cfg.Invariants {
		inv, _ := barrier.InvariantByName(p)
		if !inv(cfg, l.st) {
			l.t.Fatalf("after %s: %s is violated\nsteps: %v", a.Label(cfg), p, l.steps)
		}
	}
	l.probe()
}

// probe tries, in the current state, every action the model refuses: the
// core must refuse it too, for the same conjunct, and change nothing.
func (l *barrierLockstep) probe() {
	l.t.Helper()
	cfg := l.bg.cfg
	for _, a := range cfg.Actions() {
		if _, merr := a.Apply(cfg, l.st); merr != nil {
			cerr := l.coreStep(a)
			l.note(a, nil, merr)
			l.agree(a, merr, cerr)
		}
	}
	l.compare("the refused steps")
}

// coreStep takes model action a on the core.
func (l *barrierLockstep) coreStep(a barrier.Action) error {
	var cerr error
	switch a.Kind {
	case barrier.ActEmit:
		_, cerr = l.c.Nodes[l.bg.coreNode[a.Node]].Emit()
	case barrier.ActInject:
		_, cerr = l.c.Nodes[l.bg.coreNode[a.Node]].Inject()
	case barrier.ActProcess:
		_, cerr = l.c.Take(l.bg.coreEdge[a.Edge], dataflow.ActProcess)
	case barrier.ActRecvBarrier:
		_, cerr = l.c.Take(l.bg.coreEdge[a.Edge], dataflow.ActRecvBarrier)
	case barrier.ActTimeout:
		_, cerr = l.c.Nodes[l.bg.coreNode[a.Node]].Timeout()
	case barrier.ActTimeoutOut:
		_, cerr = l.c.Nodes[l.bg.coreNode[a.Node]].TimeoutOut()
	case barrier.ActRestore:
		cerr = l.restore()
	}
	return cerr
}

// agree fails unless the model and the core both took a, or both refused
// it for the same conjunct.
func (l *barrierLockstep) agree(a barrier.Action, merr, cerr error) {
	l.t.Helper()
	cfg := l.bg.cfg
	var ne *barrier.NotEnabled
	switch {
	case merr == nil && cerr != nil:
		l.t.Fatalf("%s: the model takes it, the core refuses: %v\nsteps: %v", a.Label(cfg), cerr, l.steps)
	case merr != nil && cerr == nil:
		l.t.Fatalf("%s: the core takes it, the model refuses: %v\nsteps: %v", a.Label(cfg), merr, l.steps)
	case merr != nil:
		if !errors.As(merr, &ne) {
			l.t.Fatalf("%s: %v", a.Label(cfg), merr)
		}
		if want, ok := coreErr(a.Kind, ne.Conjunct); ok && !errors.Is(cerr, want) {
			l.t.Fatalf("%s: the model refuses for %v, the core for %v\nsteps: %v", a.Label(cfg), merr, cerr, l.steps)
		}
	}
}

// note counts what step a exercised: each refusal by its conjunct, each
// restore, each record logged on a back-edge or another edge, each
// record an unaligned barrier overtook.
func (l *barrierLockstep) note(a barrier.Action, ns *barrier.State, merr error) {
	var ne *barrier.NotEnabled
	if errors.As(merr, &ne) {
		l.seen[actionRefusal(a.Kind, ne.Conjunct)]++
		return
	}
	if merr != nil {
		return
	}
	switch a.Kind {
	case barrier.ActRestore:
		l.seen["restore"]++
	case barrier.ActTimeout:
		l.seen["timeout"]++
	case barrier.ActTimeoutOut:
		l.seen["output timeout"]++
	}
	for e := range l.bg.cfg.Edges {
		if d := len(ns.RecQ[e]) - len(l.st.RecQ[e]); d > 0 {
			switch {
			case l.bg.cfg.Back[e]:
				l.seen["back-edge record logged"] += d
			case a.Kind == barrier.ActProcess:
				l.seen["input record logged"] += d
			default:
				l.seen["overtaken record persisted"] += d
			}
		}
	}
}

// restore is the model's Restore on the core: every node restarts from
// the collected snapshot. Refused (for NotComplete, AlreadyRestored) as
// the model refuses it.
func (l *barrierLockstep) restore() error {
	if !l.c.Complete() {
		return errors.New("the snapshot is not complete")
	}
	if l.st.Restored {
		return errors.New("already restored")
	}
	snap, err := l.c.Snapshot()
	if err != nil {
		l.t.Fatalf("a complete cluster has no snapshot: %v", err)
	}
	c, err := dataflow.RestoreCluster(l.c.G, snap, nil)
	if err != nil {
		l.t.Fatalf("restore: %v", err)
	}
	l.c = c
	return nil
}

func (l *barrierLockstep) item(it dataflow.Item) barrier.Item {
	if it.Barrier {
		return barrier.Item{Barrier: true}
	}
	return barrier.Item{Src: l.bg.node[it.Src], I: it.I, Hops: it.Hops, ESeq: it.Seq}
}

func (l *barrierLockstep) items(its []dataflow.Item) []barrier.Item {
	out := []barrier.Item{}
	for _, it := range its {
		out = append(out, l.item(it))
	}
	return out
}

// abstract maps the core's cluster to a model state (the ghost pre
// aside, which the core does not have, and Restored, which is the
// model's).
func (l *barrierLockstep) abstract() *barrier.State {
	cfg, g, bg := l.bg.cfg, l.c.G, l.bg
	a := barrier.Init(cfg)
	keyBase, k := map[int]int{}, 0
	for m, kind := range cfg.Kind {
		if kind == barrier.Source {
			keyBase[bg.coreNode[m]] = k
			k += cfg.Budget[m]
		}
	}
	for i, n := range l.c.Nodes {
		m := bg.node[i]
		kind := g.Nodes[i].Kind
		if kind == dataflow.Source {
			a.Emitted[m] = n.Emitted()
		} else {
			a.Cnt[m] = n.Cnt()
		}
		for key, x := range n.Output() {
			a.Out[keyBase[key.Src]+key.I-1] = x
		}
		abstractAdaptive(a, m, n)
		p := n.Part()
		if p != nil {
			a.Recorded |= 1 << m
			switch kind {
			case dataflow.Source:
				a.RecOff[m] = p.Emitted
			case dataflow.Sink:
				a.RecCnt[m] = p.Cnt
				for key, x := range p.Out.Map() {
					a.RecOut[keyBase[key.Src]+key.I-1] = x
				}
			default:
				a.RecCnt[m] = p.Cnt
			}
		}
		for _, e := range g.In(i) {
			me := bg.edge[e]
			if n.Bar(e) {
				a.Bar[m] |= 1 << me
			}
			a.RecChan[me] = barrier.Status(n.RecChan(e))
			a.NRcvd[me] = n.NRcvd(e)
			if p != nil {
				a.CutRcvd[me] = p.CutRcvd[e]
			}
		}
		for _, e := range g.Out(i) {
			me := bg.edge[e]
			a.Q[me] = l.items(n.Queue(e))
			a.NSent[me] = n.NSent(e)
			if p != nil {
				a.CutSent[me] = p.CutSent[e]
			}
		}
	}
	for e, ends := range g.Edges {
		var rec []dataflow.Item
		if p := l.c.Nodes[ends.To].Part(); p != nil {
			rec = append(rec, p.Logged[e]...)
		}
		if p := l.c.Nodes[ends.From].Part(); p != nil {
			rec = append(rec, p.Overtaken[e]...)
		}
		a.RecQ[bg.edge[e]] = l.items(rec)
	}
	return a
}

// abstractAdaptive maps node n's adaptive variables (model node m) to
// the model's mode, reported and cutAligned (tla/BarrierAdaptive.tla
// lines 56-59); in the other modes they stay at their initial values.
func abstractAdaptive(a *barrier.State, m int, n *dataflow.Node) {
	if n.Switched() {
		a.Switched |= 1 << m
	}
	if n.CutAligned() {
		a.CutAligned |= 1 << m
	}
	a.Reported[m] = barrier.SnapType(n.Reported())
}

func (l *barrierLockstep) compare(after string) {
	l.t.Helper()
	got := l.abstract()
	got.Pre, got.Restored = l.st.Pre, l.st.Restored
	norm := func(st *barrier.State) *barrier.State {
		c := st.Clone()
		for _, q := range [][][]barrier.Item{c.Q, c.RecQ} {
			for i := range q {
				if len(q[i]) == 0 {
					q[i] = nil
				}
			}
		}
		return c
	}
	if barrier.Key(norm(got)) != barrier.Key(norm(l.st)) {
		l.t.Fatalf("after %s the core's state is not the model's:\ncore:  %+v\nmodel: %+v\nsteps: %v", after, got, l.st, l.steps)
	}
}

// failureFree runs g's nodes to the end, no snapshot, no failure: the
// sink's output a restored run must reproduce.
func failureFree(t *rapid.T, g *dataflow.Graph) map[dataflow.Key]int {
	c := dataflow.NewCluster(g, nil)
	c.DrainRecords()
	return maps.Clone(c.Sink().Output())
}

// runBarrierLockstep draws a graph, takes random steps in lockstep (most
// of them enabled ones, some that may be refused), then runs to the end
// (every source injecting, the snapshot completing, maybe restoring), and
// checks that the sink's output is the failure-free run's.
func runBarrierLockstep(t *rapid.T, cyclic, adaptive bool, seen map[string]int) {
	bg := drawBarrierGraph(t, cyclic, adaptive)
	l := &barrierLockstep{t: t, seen: seen, bg: bg, c: dataflow.NewCluster(bg.g, nil), st: barrier.Init(bg.cfg)}
	all := bg.cfg.Actions()
	for range rapid.IntRange(0, 60).Draw(t, "steps") {
		if rapid.IntRange(0, 4).Draw(t, "any") == 0 {
			l.step(all[rapid.IntRange(0, len(all)-1).Draw(t, "action")])
			continue
		}
		next := barrier.Next(bg.cfg, l.st)
		if len(next) == 0 {
			break
		}
		l.step(next[rapid.IntRange(0, len(next)-1).Draw(t, "enabled")].Action)
	}
	for {
		next := barrier.Next(bg.cfg, l.st)
		if len(next) == 0 {
			break
		}
		l.step(next[rapid.IntRange(0, len(next)-1).Draw(t, "drain")].Action)
	}
	// No step is enabled: every source has injected, the snapshot is
	// complete (BarriersComplete), everything is emitted and delivered.
	if !barrier.Complete(bg.cfg, l.st) || !barrier.Terminated(bg.cfg, l.st) || !l.c.Complete() {
		t.Fatalf("the run ended before completing or terminating\nsteps: %v", l.steps)
	}
	want := failureFree(t, bg.g)
	if got := l.c.Sink().Output(); !maps.Equal(got, want) {
		t.Fatalf("exactly-once: the sink's output (restored: %v) is %v, a failure-free run's %v\nsteps: %v", l.st.Restored, got, want, l.steps)
	}
}

// The core and model/barrier agree step by step, on random DAGs and
// random cyclic graphs, for both protocols: the same steps enabled, the
// same refusals (the same false conjunct), the same states, the spec's
// invariants holding throughout; and a run restored from its complete
// snapshot ends with the sink output of a run without failure.
// The runs on fixed inputs (checkCovering) exercise every refusal the
// core shares with the model, restores, and the kinds of channel state
// named.
func TestBarrierLockstepDAG(t *testing.T) {
	checkCovering(t, barrierSeeds, func(t *rapid.T, seen map[string]int, _ string) { runBarrierLockstep(t, false, false, seen) },
		barrierKinds("input record logged", "overtaken record persisted")...)
}

func TestBarrierLockstepCyclic(t *testing.T) {
	checkCovering(t, barrierSeeds, func(t *rapid.T, seen map[string]int, _ string) { runBarrierLockstep(t, true, false, seen) },
		barrierKinds("back-edge record logged")...)
}

// The adaptive mode (tla/BarrierAdaptive.tla) in lockstep with the
// model's SpecAdaptive, on random DAGs and cyclic graphs with random
// force-aligned edges: Timeout and TimeoutOut taken and refused alike
// (every conjunct of TimeoutV and TimeoutOutV the core has), the same mode, reported type and
// cutAligned, the adaptive invariants holding throughout. The fixed
// inputs exercise every refusal, a timeout, and the channel state a
// switch persists.
func TestBarrierLockstepAdaptive(t *testing.T) {
	kinds := barrierKinds("timeout", "output timeout", "input record logged", "overtaken record persisted")
	for k, err := range timeoutErr {
		if k != barrier.AlreadySwitched { // needs late: a switched node has recorded
			kinds = append(kinds, "refused: "+err.Error())
		}
	}
	for _, err := range timeoutOutErr { // AlreadySwitched: after a Timeout, or a TimeoutOut
		kinds = append(kinds, "refused: "+err.Error())
	}
	checkCovering(t, barrierSeeds, func(t *rapid.T, seen map[string]int, _ string) {
		runBarrierLockstep(t, rapid.Bool().Draw(t, "cyclic"), true, seen)
	}, kinds...)
}

// refusal names a refusal for barrierKinds.
func refusal(k barrier.Conjunct) string { return actionRefusal(barrier.ActEmit, k) }

// actionRefusal names the refusal of conjunct k of action kind.
func actionRefusal(kind barrier.ActionKind, k barrier.Conjunct) string {
	if err, ok := coreErr(kind, k); ok {
		return "refused: " + err.Error()
	}
	return fmt.Sprintf("refused: conjunct %d", k)
}

// barrierSeeds is how many fixed inputs the barrier lockstep and trace
// audit tests run (checkCovering): enough that every kind they name is
// reached, with a margin (the rarest, a DAG's "input record logged", is
// first reached at input 31, the trace audit's "logged" at 26; the log
// says where each is first reached).
const barrierSeeds = 40

// barrierKinds is what the barrier lockstep runs must exercise: every
// refusal the core shares with the model, restores, and the kinds of
// channel state given.
func barrierKinds(kinds ...string) []string {
	for k := range conjunctErr {
		kinds = append(kinds, refusal(k))
	}
	return append(kinds, "restore")
}
