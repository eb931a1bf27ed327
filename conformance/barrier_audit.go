package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// A barrier trace (spec.ReadBarrierTrace) is audited like a Chandy-Lamport
// one, with the same Report: the model replay (every event an enabled
// action of model/barrier, for the trace's protocol, with the same
// effect: the same record, the same logging, the same part recorded)
// and, independently, the run properties computed from the trace alone
// (BarrierConsistentCut, BarrierExactChannelState, AlignedNoChannelState,
// BarrierExactlyOnce, and BarriersComplete when the run claims it
// drained).

// ReadBarrierTraceFile reads the barrier trace at path.
func ReadBarrierTraceFile(path string) (*spec.BarrierTrace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr, err := spec.ReadBarrierTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tr, nil
}

// BarrierConfig is the model a barrier trace is replayed against: its
// graph as tla/BarrierSnapshots.tla's constants, the protocol's Spec,
// every invariant. A graph the spec does not have (a node with several
// forward outputs, the chandy-lamport mode) is an error.
func BarrierConfig(tg spec.BarrierGraph) (*barrier.Config, error) {
	return barrierConfig(tg, barrier.VariantSpec)
}

// barrierConfig is BarrierConfig for the given specification (the
// adaptive mode's SpecAdaptive for VariantSpec).
func barrierConfig(tg spec.BarrierGraph, variant barrier.Variant) (*barrier.Config, error) {
	if tg.Successive {
		return nil, fmt.Errorf("successive snapshots: tla/BarrierSnapshots.tla has one snapshot, so only a run with one can be audited")
	}
	k := barrier.Constants{Budget: map[string]int{}, Cap: tg.Cap, Iter: tg.Iter}
	variant, invariants, err := barrierMode(tg.Mode, variant, &k)
	if err != nil {
		return nil, err
	}
	barrierNodes(tg, &k)
	barrierEdges(tg, &k)
	cfg, err := barrier.NewConfig(k, variant, invariants, nil)
	if err != nil {
		return nil, fmt.Errorf("the graph is not one of tla/BarrierSnapshots.tla: %w", err)
	}
	return cfg, nil
}

// barrierMode sets k's Mode for the trace's mode and returns the
// specification and invariants to replay it against: the adaptive mode
// is tla/BarrierAdaptive.tla's (aligned, every node may switch: a run's
// timers are not bounded).
func barrierMode(mode string, variant barrier.Variant, k *barrier.Constants) (barrier.Variant, []spec.Property, error) {
	switch mode {
	case spec.ModeAligned:
	case spec.ModeUnaligned:
		k.Mode = barrier.Unaligned
	case spec.ModeAdaptive:
		if variant == barrier.VariantSpec {
			variant = barrier.VariantAdaptive
		}
		k.MaxTimeouts = -1 // set by barrierNodes: one per node
		return variant, spec.AdaptiveSpecInvariants, nil
	default:
		return variant, nil, fmt.Errorf("mode %q: tla/BarrierSnapshots.tla and tla/BarrierAdaptive.tla have the aligned, unaligned and adaptive protocols only", mode)
	}
	return variant, spec.BarrierInvariants, nil
}

// barrierNodes puts tg's nodes in k: Src with their budgets, Op, Snk;
// and, adaptive, MaxTimeouts the number of nodes that may switch.
func barrierNodes(tg spec.BarrierGraph, k *barrier.Constants) {
	for _, n := range tg.Nodes {
		switch n.Kind {
		case spec.KindSource:
			k.Src = append(k.Src, n.Name)
			k.Budget[n.Name] = n.Budget
		case spec.KindOperator:
			k.Op = append(k.Op, n.Name)
		default:
			k.Snk = n.Name
		}
	}
	if k.MaxTimeouts < 0 {
		k.MaxTimeouts = len(k.Src) + len(k.Op) + 1 // a source too switches, on its outputs
	}
}

// barrierEdges puts tg's edges in k: Edge, Back and ForceAligned.
func barrierEdges(tg spec.BarrierGraph, k *barrier.Constants) {
	for _, e := range tg.Edges {
		ends := [2]string{e.From, e.To}
		k.Edge = append(k.Edge, ends)
		if e.Back {
			k.Back = append(k.Back, ends)
		}
		if e.ForceAligned {
			k.ForceAligned = append(k.ForceAligned, ends)
		}
	}
}

// AuditBarrier replays barrier trace tr against model/barrier and checks
// the run properties (barrierRun), after deriving what an outside stream
// processor's trace may leave out (DeriveBarrier; the report's notes say
// what). opts.Drained claims the run drained
// even if the header does not; opts.Lines is ignored (tr has its lines).
func AuditBarrier(tr *spec.BarrierTrace, opts Options) Report {
	var r Report
	tr, derived := DeriveBarrier(tr)
	if derived.Any() {
		r.Notes = append(r.Notes, derived.String())
	}
	cfg, err := BarrierConfig(tr.Header.Graph)
	if err != nil {
		r.Err = err
		return r
	}
	drained := tr.Header.Drained || opts.Drained
	st := r.replayBarrier(cfg, tr, opts)
	if r.Divergence == nil && drained && !barrier.Terminated(cfg, st) {
		r.Divergence = &Divergence{Action: "the end of the run", Property: spec.CheckState,
			Detail: "the trace claims a drained run, but in the model a source has not emitted its budget or a buffer is not empty"}
	}
	if r.Divergence == nil && barrier.Complete(cfg, st) {
		r.Snapshots = 1
	}
	r.Violations = barrierRun(tr, drained)
	return r
}

// replayBarrier steps the model through tr's events (barrierStep) up to
// the first divergence, and returns the state reached.
func (r *Report) replayBarrier(cfg *barrier.Config, tr *spec.BarrierTrace, opts Options) *barrier.State {
	st := barrier.Init(cfg)
	for i, ev := range tr.Events {
		ns, d := barrierStep(cfg, st, ev)
		if d != nil {
			d.Step, d.Line = i+1, tr.Lines[i]
			r.Divergence = d
			return st
		}
		st = ns
		r.Steps++
		if opts.Progress != nil {
			opts.Progress(i+1, len(tr.Events))
		}
	}
	return st
}

// barrierAction is the model's action instance for event ev.
func barrierAction(cfg *barrier.Config, ev spec.BarrierEvent) (barrier.Action, error) {
	kinds := map[string]barrier.ActionKind{spec.BarrierEmit: barrier.ActEmit, spec.BarrierInject: barrier.ActInject,
		spec.BarrierProcess: barrier.ActProcess, spec.BarrierRecvBarrier: barrier.ActRecvBarrier, spec.BarrierRestore: barrier.ActRestore,
		spec.BarrierTimeout: barrier.ActTimeout, spec.BarrierTimeoutOut: barrier.ActTimeoutOut}
	a := barrier.Action{Kind: kinds[ev.Action]}
	switch a.Kind {
	case barrier.ActEmit, barrier.ActInject, barrier.ActTimeout, barrier.ActTimeoutOut:
		a.Node, _ = cfg.NodeIndex(ev.Node)
	case barrier.ActProcess, barrier.ActRecvBarrier:
		var ok bool
		if a.Edge, ok = cfg.EdgeIndex(ev.From, ev.To); !ok {
			return a, fmt.Errorf("the model has no edge %s", spec.BarrierEdgeKey(ev.From, ev.To))
		}
	}
	return a, nil
}

// barrierStep checks event ev against the model in state st: its action
// is enabled, and its effect is the model's (barrierEvent), the record's
// payload aside. It returns the successor, or the divergence.
func barrierStep(cfg *barrier.Config, st *barrier.State, ev spec.BarrierEvent) (*barrier.State, *Divergence) {
	a, err := barrierAction(cfg, ev)
	if err != nil {
		return nil, &Divergence{Action: ev.Action, Property: spec.CheckWellFormed, Detail: err.Error()}
	}
	label := a.Named(cfg)
	ns, err := a.Apply(cfg, st)
	if err != nil {
		return nil, &Divergence{Action: label, Property: spec.CheckEnabled, Detail: err.Error()}
	}
	want, got := barrierEvent(cfg, st, a, ns), withoutPayload(ev)
	if d := diffEvents(want, got); d != nil {
		d.Action = label
		return nil, d
	}
	for _, p := range cfg.Invariants {
		if inv, _ := barrier.InvariantByName(p); !inv(cfg, ns) {
			return nil, &Divergence{Action: label, Property: p, Detail: fmt.Sprintf("the model's state after the step violates %s", p)}
		}
	}
	return ns, nil
}

// diffEvents compares the model's event with the trace's: a different
// record is a Message divergence, a different logging a State one, a
// different part (or none) a RecordedState one.
func diffEvents(want, got spec.BarrierEvent) *Divergence {
	js := func(v any) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v) // trace events always encode
		return strings.TrimSpace(b.String())
	}
	switch {
	case js(want.Rec) != js(got.Rec):
		return &Divergence{Property: spec.CheckMessage, Detail: "the record is not the model's",
			Expected: js(want.Rec), Reported: js(got.Rec)}
	case want.Logged != got.Logged:
		return &Divergence{Property: spec.CheckState, Detail: fmt.Sprintf("the model logs the record as channel state: %v; the trace: %v", want.Logged, got.Logged),
			Expected: js(want), Reported: js(got)}
	case js(want.Part) != js(got.Part):
		return &Divergence{Property: spec.CheckRecordedState, Detail: "the node's recorded part is not the model's",
			Expected: js(want.Part), Reported: js(got.Part)}
	}
	return nil
}

// withoutPayload is ev with its records' payloads cleared: the spec has
// none.
func withoutPayload(ev spec.BarrierEvent) spec.BarrierEvent {
	if ev.Rec != nil {
		r := *ev.Rec
		r.Val = 0
		ev.Rec = &r
	}
	if ev.Part != nil && ev.Part.Overtaken != nil {
		p := *ev.Part
		p.Overtaken = map[string][]spec.BarrierRecord{}
		for k, rs := range ev.Part.Overtaken {
			for _, r := range rs {
				r.Val = 0
				p.Overtaken[k] = append(p.Overtaken[k], r)
			}
		}
		ev.Part = &p
	}
	return ev
}

// BarrierModelEvent is the barrier trace event the model's step a from
// st to ns is (barrierEvent): how the explorer page writes a run of
// model/barrier as a trace, to draw and to audit.
func BarrierModelEvent(cfg *barrier.Config, st *barrier.State, a barrier.Action, ns *barrier.State) spec.BarrierEvent {
	return barrierEvent(cfg, st, a, ns)
}

// nodeActions names the steps of a node with no edge in a trace.
var nodeActions = map[barrier.ActionKind]string{barrier.ActInject: spec.BarrierInject,
	barrier.ActTimeout: spec.BarrierTimeout, barrier.ActTimeoutOut: spec.BarrierTimeoutOut}

// barrierEvent is the event the model's step a from st to ns is: the
// inverse of the audit, and how a run of the model (a negative variant)
// is written as a trace.
func barrierEvent(cfg *barrier.Config, st *barrier.State, a barrier.Action, ns *barrier.State) spec.BarrierEvent {
	rec := func(it barrier.Item) *spec.BarrierRecord { return modelRecord(cfg, it) }
	ev := spec.BarrierEvent{}
	n := -1
	switch a.Kind {
	case barrier.ActEmit:
		e := slices.IndexFunc(cfg.Edges, func(e [2]int) bool { return e[0] == a.Node })
		ev = spec.BarrierEvent{Action: spec.BarrierEmit, Rec: rec(ns.Q[e][len(ns.Q[e])-1])}
		ev.From, ev.To = cfg.Nodes[a.Node], cfg.Nodes[cfg.Edges[e][1]]
		n = a.Node
	case barrier.ActInject, barrier.ActTimeout, barrier.ActTimeoutOut:
		ev.Action, n = nodeActions[a.Kind], a.Node
	case barrier.ActProcess, barrier.ActRecvBarrier:
		ev.Action = spec.BarrierRecvBarrier
		n = cfg.Edges[a.Edge][1]
		ev.From, ev.To = cfg.Nodes[cfg.Edges[a.Edge][0]], cfg.Nodes[n]
		if a.Kind == barrier.ActProcess {
			ev.Action, ev.Rec = spec.BarrierProcess, rec(st.Q[a.Edge][0])
			ev.Logged = len(ns.RecQ[a.Edge]) > len(st.RecQ[a.Edge])
		}
	default:
		return spec.BarrierEvent{Action: spec.BarrierRestore}
	}
	ev.Node = cfg.Nodes[n]
	if withPart(a, st, ns, n) {
		ev.Part = modelPart(cfg, st, ns, n)
	}
	return ev
}

// withPart reports whether the event of step a from st to ns carries n's
// part: n recorded in it, or timed out (a late Timeout records again; a
// TimeoutOut's part is n's again: it recorded aligned, so what this step
// persisted is all its barrier overtook).
func withPart(a barrier.Action, st, ns *barrier.State, n int) bool {
	return a.Kind == barrier.ActTimeout || a.Kind == barrier.ActTimeoutOut || !st.Has(n) && ns.Has(n)
}

// modelPart is node n's part as the model records it in the step from st
// to ns: RecordNode's recOff, recCnt, recOut and the ghost cuts, and the
// records SendBarriers persisted (what ns added to recQ of n's outputs).
func modelPart(cfg *barrier.Config, st, ns *barrier.State, n int) *spec.BarrierPart {
	p := &spec.BarrierPart{CutSent: map[string]int{}, CutRcvd: map[string]int{}}
	switch cfg.Kind[n] {
	case barrier.Source:
		p.Emitted = ns.RecOff[n]
	default:
		p.Cnt = ns.RecCnt[n]
	}
	if n == cfg.Snk() {
		p.Out = modelOut(cfg, ns)
	}
	if cfg.Variant.Adaptive() && cfg.Kind[n] != barrier.Source {
		p.Type = ns.Reported[n].String()
	}
	for e, ends := range cfg.Edges {
		key := spec.BarrierEdgeKey(cfg.Nodes[ends[0]], cfg.Nodes[ends[1]])
		if ends[0] == n {
			p.CutSent[key] = ns.CutSent[e]
			addOvertaken(p, key, cfg, ns.RecQ[e][len(st.RecQ[e]):])
		}
		if ends[1] == n {
			p.CutRcvd[key] = ns.CutRcvd[e]
		}
	}
	return p
}

// modelOut is the sink's recorded output recOut: the times each record
// <<s, i>> arrived, the sources' records in Key order, sorted.
func modelOut(cfg *barrier.Config, ns *barrier.State) []spec.BarrierCount {
	var out []spec.BarrierCount
	k := 0 // the index of Key <<s, i>>: the sources' records in order
	for s, kind := range cfg.Kind {
		for i := 1; kind == barrier.Source && i <= cfg.Budget[s]; i++ {
			if c := ns.RecOut[k]; c > 0 {
				out = append(out, spec.BarrierCount{Src: cfg.Nodes[s], I: i, N: c})
			}
			k++
		}
	}
	spec.SortBarrierCounts(out)
	return out
}

// addOvertaken adds the records persisted on edge key to p's overtaken.
func addOvertaken(p *spec.BarrierPart, key string, cfg *barrier.Config, its []barrier.Item) {
	for _, it := range its {
		if p.Overtaken == nil {
			p.Overtaken = map[string][]spec.BarrierRecord{}
		}
		p.Overtaken[key] = append(p.Overtaken[key], *modelRecord(cfg, it))
	}
}

// modelRecord is the model's record it in the trace's vocabulary.
func modelRecord(cfg *barrier.Config, it barrier.Item) *spec.BarrierRecord {
	return &spec.BarrierRecord{Src: cfg.Nodes[it.Src], I: it.I, Hops: it.Hops, Seq: it.ESeq}
}

// barrierRunState is what barrierRun keeps of a run as it walks its
// events: the parts recorded, the barriers received, the records logged,
// and the counts the exactly-once check needs.
type barrierRunState struct {
	tr      *spec.BarrierTrace
	part    map[string]*spec.BarrierPart
	bar     map[string]bool // edge key: its barrier was received
	logged  map[string][]spec.BarrierRecord
	out     map[recKey]int // the sink's output: times each record arrived
	twice   []string       // the records the sink received a second time
	emitted map[string]int
	// The adaptive mode: the nodes that switched (a Timeout), and the
	// type each node took when it recorded (TakenType,
	// tla/BarrierAdaptive.tla line 71).
	switched map[string]bool
	taken    map[string]string
	reported map[string]string
}

// recKey is record <<Src, I>>, as the sink counts it.
type recKey struct {
	Src string
	I   int
}

// barrierRun checks the run properties on the trace alone, in the order
// of spec.BarrierInvariants, then BarriersComplete if the run drained.
func barrierRun(tr *spec.BarrierTrace, drained bool) []Violation {
	rs := &barrierRunState{tr: tr, part: map[string]*spec.BarrierPart{}, bar: map[string]bool{},
		logged: map[string][]spec.BarrierRecord{}, out: map[recKey]int{}, emitted: map[string]int{},
		switched: map[string]bool{}, taken: map[string]string{}, reported: map[string]string{}}
	for _, ev := range tr.Events {
		rs.event(ev)
	}
	var vs []Violation
	add := func(p spec.Property, format string, a ...any) {
		vs = append(vs, Violation{Property: p, Detail: fmt.Sprintf(format, a...)})
	}
	orphans, inexact, aligned := rs.cuts()
	if len(orphans) > 0 {
		add(spec.PropBarrierConsistentCut, "a record taken before its receiver's cut was sent after its sender's: %s", strings.Join(orphans, "; "))
	}
	if len(inexact) > 0 {
		add(spec.PropBarrierExactChannelState, "the channel state is not the records sent before the sender's cut and taken after the receiver's: %s", strings.Join(inexact, "; "))
	}
	if len(aligned) > 0 {
		add(spec.PropAlignedNoChannelState, "aligned barriers recorded channel state on an edge that is not a back-edge: %s", strings.Join(aligned, "; "))
	}
	vs = append(vs, rs.adaptive()...)
	return append(vs, rs.atEnd(drained)...)
}

// atEnd checks BarrierExactlyOnce (no record twice at the sink; every
// record there if the run drained) and, drained, BarriersComplete.
func (rs *barrierRunState) atEnd(drained bool) []Violation {
	var vs []Violation
	if len(rs.twice) > 0 {
		vs = append(vs, Violation{Property: spec.PropBarrierExactlyOnce, Detail: fmt.Sprintf("the sink received %s twice", strings.Join(rs.twice, ", "))})
	} else if missing := rs.missing(); drained && len(missing) > 0 {
		vs = append(vs, Violation{Property: spec.PropBarrierExactlyOnce, Detail: fmt.Sprintf("the run drained, but the sink never received %s", strings.Join(missing, ", "))})
	}
	if drained && rs.injected() && !rs.complete() {
		vs = append(vs, Violation{Property: spec.PropBarriersComplete, Detail: fmt.Sprintf("the run drained with a barrier injected and the snapshot incomplete: %s", rs.incomplete())})
	}
	return vs
}

// event takes event ev into the run's state: what it emitted, logged,
// delivered to the sink (a record delivered twice noted), the barriers
// received, the restore, and the first part each node recorded.
func (rs *barrierRunState) event(ev spec.BarrierEvent) {
	key := spec.BarrierEdgeKey(ev.From, ev.To)
	switch ev.Action {
	case spec.BarrierEmit:
		rs.emitted[ev.Node]++
	case spec.BarrierProcess:
		rs.process(ev, key)
	case spec.BarrierRecvBarrier:
		rs.bar[key] = true
	case spec.BarrierRestore:
		rs.restore()
	case spec.BarrierTimeout:
		rs.switched[ev.Node] = true
	case spec.BarrierTimeoutOut:
		rs.timeoutOut(ev)
		return
	}
	if ev.Part != nil {
		rs.recorded(ev)
	}
}

// recorded takes the part of event ev, a node recording: its first part
// is its part of the snapshot; the type it reports and takes are the
// latest (a late Timeout records again).
func (rs *barrierRunState) recorded(ev spec.BarrierEvent) {
	if rs.part[ev.Node] == nil {
		rs.part[ev.Node] = ev.Part
	}
	rs.taken[ev.Node], rs.reported[ev.Node] = rs.takenType(ev.Node), ev.Part.Type
}

// timeoutOut takes a TimeoutOut event: the node switched after it
// recorded, its part is the event's (the same cut, with what its barrier
// overtook), and the snapshot it took is unaligned (TakenType: its
// barrier overtook records).
func (rs *barrierRunState) timeoutOut(ev spec.BarrierEvent) {
	rs.switched[ev.Node] = true
	rs.part[ev.Node] = ev.Part
	rs.taken[ev.Node], rs.reported[ev.Node] = spec.ModeUnaligned, ev.Part.Type // a source's are not checked
}

// process is a Process event on edge key: its record logged, if it was,
// and counted if the sink took it.
func (rs *barrierRunState) process(ev spec.BarrierEvent, key string) {
	if ev.Logged {
		rs.logged[key] = append(rs.logged[key], *ev.Rec)
	}
	if rs.tr.Graph().Kind(ev.To) != spec.KindSink {
		return
	}
	k := recKey{Src: ev.Rec.Src, I: ev.Rec.I}
	if rs.out[k]++; rs.out[k] == 2 {
		rs.twice = append(rs.twice, fmt.Sprintf("<<%s, %d>>", ev.Rec.Src, ev.Rec.I))
	}
}

// cuts checks every edge both of whose ends recorded: the orphans
// (BarrierConsistentCut), the inexact channel states
// (BarrierExactChannelState) and, aligned, the channel state recorded on
// an edge that is not a back-edge (AlignedNoChannelState).
func (rs *barrierRunState) cuts() (orphans, inexact, aligned []string) {
	for _, e := range rs.tr.Graph().Edges {
		ps, pr := rs.part[e.From], rs.part[e.To]
		if ps == nil || pr == nil {
			continue
		}
		o, i, a := rs.edgeCut(e, ps, pr)
		orphans, inexact, aligned = append(orphans, o...), append(inexact, i...), append(aligned, a...)
	}
	return orphans, inexact, aligned
}

// edgeCut is cuts for edge e, both of whose ends recorded (parts ps of
// its sender, pr of its receiver): at most one finding of each kind.
func (rs *barrierRunState) edgeCut(e spec.BarrierEdge, ps, pr *spec.BarrierPart) (orphan, inexact, aligned []string) {
	key := e.Key()
	sent, rcvd := ps.CutSent[key], pr.CutRcvd[key]
	if rcvd > sent {
		orphan = []string{fmt.Sprintf("%s: %s took %d records before recording, %s had sent %d when it recorded", key, e.To, rcvd, e.From, sent)}
	}
	ch := slices.Concat(rs.logged[key], ps.Overtaken[key])
	if rs.bar[key] && !exactChannel(ch, rcvd, sent) {
		inexact = []string{fmt.Sprintf("%s records %s, want the records numbered after %d up to %d", key, seqs(ch), rcvd, sent)}
	}
	if rs.tr.Header.Graph.Mode == spec.ModeAligned && !e.Back && len(ch) > 0 {
		aligned = []string{fmt.Sprintf("%s records %s", key, seqs(ch))}
	}
	return orphan, inexact, aligned
}

// restore is the Restore step: the sink's output and the sources' offsets
// are the recorded ones.
func (rs *barrierRunState) restore() {
	rs.out = map[recKey]int{}
	rs.emitted = map[string]int{}
	for name, p := range rs.part {
		rs.emitted[name] = p.Emitted
		for _, c := range p.Out {
			rs.out[recKey{Src: c.Src, I: c.I}] = c.N
		}
	}
}

// missing lists the records the sink never received.
func (rs *barrierRunState) missing() []string {
	var m []string
	for _, n := range rs.tr.Graph().Nodes {
		for i := 1; n.Kind == spec.KindSource && i <= n.Budget; i++ {
			if rs.out[recKey{Src: n.Name, I: i}] == 0 {
				m = append(m, fmt.Sprintf("<<%s, %d>>", n.Name, i))
			}
		}
	}
	return m
}

func (rs *barrierRunState) injected() bool {
	for _, n := range rs.tr.Graph().Nodes {
		if n.Kind == spec.KindSource && rs.part[n.Name] != nil {
			return true
		}
	}
	return false
}

func (rs *barrierRunState) complete() bool { return rs.incomplete() == "" }

// incomplete names the nodes that never recorded and the edges whose
// barrier never arrived.
func (rs *barrierRunState) incomplete() string {
	g := rs.tr.Graph()
	var why []string
	for _, n := range g.Nodes {
		if rs.part[n.Name] == nil {
			why = append(why, n.Name+" never recorded")
		}
	}
	for _, e := range g.Edges {
		if key := e.Key(); !rs.bar[key] {
			why = append(why, "the barrier on "+key+" never arrived")
		}
	}
	return strings.Join(why, ", ")
}

// exactChannel reports whether ch is exactly the records numbered
// rcvd+1 .. sent, in order.
func exactChannel(ch []spec.BarrierRecord, rcvd, sent int) bool {
	if len(ch) != max(sent-rcvd, 0) {
		return false
	}
	for j, r := range ch {
		if r.Seq != rcvd+j+1 {
			return false
		}
	}
	return true
}

// seqs renders a channel state by its records' sequence numbers.
func seqs(ch []spec.BarrierRecord) string {
	s := make([]string, len(ch))
	for i, r := range ch {
		s[i] = fmt.Sprintf("#%d", r.Seq)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// The run properties of the adaptive mode (tla/BarrierAdaptive.tla,
// lines 223-234), computed from a barrier trace alone, as barrierRun
// computes those of tla/BarrierSnapshots.tla: UnswitchedNoChannelState,
// ForceAlignedNoChannelState and ReportedTypeTaken.

// takenType is TakenType(n) (line 71) as node n records: "aligned" if
// every input it aligns on (not a back-edge) has delivered its barrier,
// else "unaligned".
func (rs *barrierRunState) takenType(n string) string {
	for _, e := range rs.tr.Graph().In(n) {
		if !e.Back && !rs.bar[e.Key()] {
			return spec.ModeUnaligned
		}
	}
	return spec.ModeAligned
}

// adaptive checks the adaptive properties, in the order of
// spec.AdaptiveInvariants; none for the other modes.
func (rs *barrierRunState) adaptive() []Violation {
	if rs.tr.Graph().Mode != spec.ModeAdaptive {
		return nil
	}
	var vs []Violation
	add := func(p spec.Property, what string, bad []string) {
		if len(bad) > 0 {
			vs = append(vs, Violation{Property: p, Detail: what + ": " + strings.Join(bad, "; ")})
		}
	}
	unswitched, forced := rs.adaptiveChannels()
	add(spec.PropUnswitchedNoChannelState, "channel state on an edge that is not a back-edge, neither of whose ends switched", unswitched)
	add(spec.PropForceAlignedNoChannelState, "channel state on a force-aligned edge", forced)
	add(spec.PropReportedTypeTaken, "a node reported a type it did not take", rs.wrongTypes())
	return vs
}

// adaptiveChannels lists the edges whose channel state breaks
// UnswitchedNoChannelState (lines 227-228) and ForceAlignedNoChannelState
// (line 231).
func (rs *barrierRunState) adaptiveChannels() (unswitched, forced []string) {
	for _, e := range rs.tr.Graph().Edges {
		key, ch := e.Key(), rs.channel(e)
		if len(ch) == 0 {
			continue
		}
		if !e.Back && !rs.switched[e.From] && !rs.switched[e.To] {
			unswitched = append(unswitched, fmt.Sprintf("%s records %s", key, seqs(ch)))
		}
		if e.ForceAligned {
			forced = append(forced, fmt.Sprintf("%s records %s", key, seqs(ch)))
		}
	}
	return unswitched, forced
}

// channel is edge e's channel state: the records logged on it, then
// those its sender's barrier overtook.
func (rs *barrierRunState) channel(e spec.BarrierEdge) []spec.BarrierRecord {
	var over []spec.BarrierRecord
	if p := rs.part[e.From]; p != nil {
		over = p.Overtaken[e.Key()]
	}
	return slices.Concat(rs.logged[e.Key()], over)
}

// wrongTypes lists the nodes whose reported type is not the one they
// took (ReportedTypeTaken, line 234).
func (rs *barrierRunState) wrongTypes() []string {
	var bad []string
	for _, n := range rs.tr.Graph().Nodes {
		if n.Kind == spec.KindSource || rs.part[n.Name] == nil || rs.reported[n.Name] == rs.taken[n.Name] {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s reported %s, but took %s", n.Name, rs.reported[n.Name], rs.taken[n.Name]))
	}
	return bad
}
