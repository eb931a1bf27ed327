package explorer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// properties evaluates the model's invariants (Config.Invariants, with
// model/barrier's definitions) in the current state, then
// BarriersComplete, each with its section of docs/properties.md and, for
// the run on screen, why it holds or fails: for a broken specification,
// the step at which the run departs from the positive one and the rule
// the variant drops (cause).
func (s *BarrierSession) properties() []PropView {
	var out []PropView
	for _, name := range s.cfg.Invariants {
		inv, _ := barrier.InvariantByName(name) // NewConfig checked the names
		pv := PropView{Name: name, Holds: inv(s.cfg, s.state()), Anchor: Anchor(name)}
		if pv.Holds {
			pv.Why = s.holdsWhy(name, inv)
		} else {
			pv.Detail = barrierViolation[name]
			pv.Why = s.withCause(s.failsWhy(name, inv))
		}
		out = append(out, pv)
	}
	return append(out, s.liveness())
}

// barrierViolation says what a violated invariant means.
var barrierViolation = map[spec.Property]string{
	spec.PropBarrierTypeOK:              "a variable left its type",
	spec.PropAdaptiveTypeOK:             "a variable left its type",
	spec.PropBarrierConsistentCut:       "a node's cut counts a record its sender sent after its own cut",
	spec.PropBarrierExactChannelState:   "a done edge's channel state is not exactly the records that crossed the cut",
	spec.PropAlignedNoChannelState:      "an aligned snapshot recorded channel state on an edge that is not a back-edge",
	spec.PropUnswitchedNoChannelState:   "an edge neither of whose ends switched recorded channel state",
	spec.PropForceAlignedNoChannelState: "a force-aligned edge carries channel state",
	spec.PropReportedTypeTaken:          "a node reported a snapshot type it did not take",
	spec.PropBarrierSnapshotReachable:   "the recorded state is not one the application could reach",
	spec.PropBarrierExactlyOnce:         "the sink received a record twice, or the run drained without one",
}

// falseAt is the first state of the run (0 the initial one) in which inv
// fails, -1 if none.
func (s *BarrierSession) falseAt(inv barrier.Invariant) int {
	return slices.IndexFunc(s.states, func(st *barrier.State) bool { return !inv(s.cfg, st) })
}

// holdsWhy explains an invariant that holds now.
func (s *BarrierSession) holdsWhy(p spec.Property, inv barrier.Invariant) Why {
	if k := s.falseAt(inv); k > 0 {
		return Why{Steps: []int{k}, Text: fmt.Sprintf("holds now, but was false after step %d, %s", k, s.label(k))}
	}
	switch p {
	case spec.PropBarrierExactChannelState, spec.PropUnswitchedNoChannelState:
		if cs := s.channelState(); cs != "none" {
			return Why{Steps: s.channelSteps(), Text: "the channel state: " + cs + "; every other edge records nothing"}
		}
	case spec.PropReportedTypeTaken:
		return s.typesWhy()
	case spec.PropBarrierConsistentCut:
		if w, ok := s.cutsWhy(); ok {
			return w
		}
	}
	return Why{Steps: []int{}, Text: fmt.Sprintf("holds in every state of the run (%s)", plural(len(s.states), "state"))}
}

// cutsWhy shows why BarrierConsistentCut holds: on each edge both of
// whose ends recorded, the receiver had taken at its cut no more records
// than the sender had sent at its own.
func (s *BarrierSession) cutsWhy() (Why, bool) {
	st := s.state()
	var out []string
	var at []int
	for e, ends := range s.cfg.Edges {
		if !st.Has(ends[0]) || !st.Has(ends[1]) {
			continue
		}
		from, to := s.recordStep(ends[0]), s.recordStep(ends[1])
		out = append(out, fmt.Sprintf("%s: %s had taken %d at its cut (step %d), %s had sent %d at its own (step %d)",
			s.edgeName(e), s.cfg.Nodes[ends[1]], st.CutRcvd[e], to, s.cfg.Nodes[ends[0]], st.CutSent[e], from))
		at = append(at, from, to)
	}
	if len(out) == 0 {
		return Why{}, false
	}
	return Why{Steps: steps(at...), Text: strings.Join(out, "; ") + ": what alignment blocks, or an unaligned barrier overtakes, is behind each cut"}, true
}

// channelSteps are the steps that put records in the channel state.
func (s *BarrierSession) channelSteps() []int {
	var at []int
	for k, t := range s.steps {
		if !slices.EqualFunc(s.states[k].RecQ, t.State.RecQ, slices.Equal) {
			at = append(at, k+1)
		}
	}
	return steps(at...)
}

// typesWhy says the type each node that recorded reported.
func (s *BarrierSession) typesWhy() Why {
	var out []string
	var at []int
	for _, nv := range s.nodeViews() {
		if nv.Reported != "" {
			out = append(out, fmt.Sprintf("%s reported %s (step %d)", nv.Name, nv.Reported, nv.RecordedAt))
			at = append(at, nv.RecordedAt)
		}
	}
	if len(out) == 0 {
		return Why{Steps: []int{}, Text: "no node has recorded yet: there is nothing to check"}
	}
	return Why{Steps: steps(at...), Text: strings.Join(out, "; ") + ": each the type it took"}
}

func (s *BarrierSession) nodeViews() []NodeView {
	out := make([]NodeView, len(s.cfg.Nodes))
	for n := range s.cfg.Nodes {
		out[n] = s.nodeView(n)
	}
	return out
}

// label is step k's action as TLC prints it.
func (s *BarrierSession) label(k int) string { return s.steps[k-1].Action.Label(s.cfg) }

// failsWhy explains an invariant that fails now: the step from which it
// is false and, for the properties whose failure the page reads from the
// state, what breaks it.
func (s *BarrierSession) failsWhy(p spec.Property, inv barrier.Invariant) Why {
	k := s.falseAt(inv)
	if f, ok := barrierFails[p]; ok {
		if w, ok := f(s); ok {
			return w
		}
	}
	if k == 0 {
		return Why{Steps: []int{}, Text: "false in the initial state"}
	}
	return Why{Steps: []int{k}, Text: fmt.Sprintf("false from step %d on, %s", k, s.label(k))}
}

// barrierFails are the invariants whose failure the page explains from
// the state: which edge, node or record breaks it, and the steps.
var barrierFails = map[spec.Property]func(*BarrierSession) (Why, bool){
	spec.PropBarrierConsistentCut:       (*BarrierSession).orphanRecord,
	spec.PropBarrierExactChannelState:   (*BarrierSession).inexactChannel,
	spec.PropForceAlignedNoChannelState: (*BarrierSession).forcedChannel,
	spec.PropUnswitchedNoChannelState:   (*BarrierSession).unswitchedChannel,
	spec.PropAlignedNoChannelState:      (*BarrierSession).unswitchedChannel,
	spec.PropReportedTypeTaken:          (*BarrierSession).wrongType,
	spec.PropBarrierExactlyOnce:         (*BarrierSession).notOnce,
}

// orphanRecord: an edge both of whose ends recorded, its receiver's cut
// counting more records than its sender's (lines 335-336).
func (s *BarrierSession) orphanRecord() (Why, bool) {
	st := s.state()
	for e, ends := range s.cfg.Edges {
		if !st.Has(ends[0]) || !st.Has(ends[1]) || st.CutRcvd[e] <= st.CutSent[e] {
			continue
		}
		from, to := s.cfg.Nodes[ends[0]], s.cfg.Nodes[ends[1]]
		rs, rr := s.recordStep(ends[0]), s.recordStep(ends[1])
		take := s.takeStep(e, st.CutSent[e]+1)
		return Why{Steps: steps(rs, take, rr), Text: fmt.Sprintf(
			"%s's cut (step %d) counts %d records taken off %s, but %s had sent %d when it recorded (step %d): record #%d on %s, taken at step %d, was sent after %s's cut",
			to, rr, st.CutRcvd[e], s.edgeName(e), from, st.CutSent[e], rs, st.CutSent[e]+1, s.edgeName(e), take, from)}, true
	}
	return Why{}, false
}

// takeStep is the step that took record number seq off edge e (ProcessV
// making nRcvd[e] = seq), the last such, 0 if none.
func (s *BarrierSession) takeStep(e, seq int) int {
	at := 0
	for k, t := range s.steps {
		if t.Action.Kind == barrier.ActProcess && t.Action.Edge == e && t.State.NRcvd[e] == seq {
			at = k + 1
		}
	}
	return at
}

// inexactChannel: the done edge whose channel state is not the records
// numbered cutRcvd+1 .. cutSent (lines 341-344) that was closed first.
func (s *BarrierSession) inexactChannel() (Why, bool) {
	st := s.state()
	bad, done := -1, 0
	for e := range s.cfg.Edges {
		if st.RecChan[e] != barrier.Done || s.exact(e) {
			continue
		}
		if k := sinceStep(s.states, func(x *barrier.State) bool { return x.RecChan[e] == barrier.Done }); bad < 0 || k < done {
			bad, done = e, k
		}
	}
	if bad < 0 {
		return Why{}, false
	}
	ends := s.cfg.Edges[bad]
	from, to := s.recordStep(ends[0]), s.recordStep(ends[1])
	return Why{Steps: steps(from, to, done), Text: fmt.Sprintf(
		"%s's channel state was closed at step %d holding %s, but %s crossed the cut: sent before %s recorded (step %d), taken after %s did (step %d)",
		s.edgeName(bad), done, s.itemsOr(st.RecQ[bad], "nothing"), plural(max(st.CutSent[bad]-st.CutRcvd[bad], 0), "record"),
		s.cfg.Nodes[ends[0]], from, s.cfg.Nodes[ends[1]], to)}, true
}

// exact reports whether edge e's channel state is exactly the records
// numbered cutRcvd+1 .. cutSent.
func (s *BarrierSession) exact(e int) bool {
	st := s.state()
	if len(st.RecQ[e]) != max(st.CutSent[e]-st.CutRcvd[e], 0) {
		return false
	}
	for j, r := range st.RecQ[e] {
		if r.ESeq != st.CutRcvd[e]+j+1 {
			return false
		}
	}
	return true
}

// itemsOr renders records, or none if there are none.
func (s *BarrierSession) itemsOr(its []barrier.Item, none string) string {
	if len(its) == 0 {
		return none
	}
	var out []string
	for _, it := range its {
		out = append(out, s.itemText(it))
	}
	return strings.Join(out, ", ")
}

// forcedChannel: a force-aligned edge with channel state (line 169).
func (s *BarrierSession) forcedChannel() (Why, bool) {
	for e, fa := range s.cfg.ForceAligned {
		if fa && len(s.state().RecQ[e]) > 0 {
			return s.channelWhy(e, "is force-aligned, but holds channel state")
		}
	}
	return Why{}, false
}

// unswitchedChannel: an edge that is not a back-edge, neither of whose
// ends switched, with channel state (tla/BarrierAdaptive.tla lines
// 227-228; AlignedNoChannelState, lines 348-349, in an aligned model).
func (s *BarrierSession) unswitchedChannel() (Why, bool) {
	st := s.state()
	for e, ends := range s.cfg.Edges {
		if !s.cfg.Back[e] && st.Switched&(1<<ends[0]|1<<ends[1]) == 0 && len(st.RecQ[e]) > 0 {
			return s.channelWhy(e, "is not a back-edge and neither of its ends switched, but it holds channel state")
		}
	}
	return Why{}, false
}

// channelWhy says that edge e holds channel state it should not, and the
// steps that put it there.
func (s *BarrierSession) channelWhy(e int, what string) (Why, bool) {
	var how []string
	var at []int
	for j, it := range s.state().RecQ[e] {
		how = append(how, fmt.Sprintf("%s (%s)", s.itemText(it), s.persistedHow(e, j)))
		at = append(at, sinceStep(s.states, func(st *barrier.State) bool { return len(st.RecQ[e]) > j }))
	}
	return Why{Steps: steps(at...), Text: fmt.Sprintf("%s %s: %s", s.edgeName(e), what, strings.Join(how, ", "))}, true
}

// wrongType: a node that recorded and reported a type it did not take
// (tla/BarrierAdaptive.tla line 234).
func (s *BarrierSession) wrongType() (Why, bool) {
	for _, nv := range s.nodeViews() {
		if nv.Reported == "" || nv.Reported == nv.Taken {
			continue
		}
		how := "it recorded with an input it aligns on still to deliver its barrier"
		if nv.Switched {
			how = fmt.Sprintf("its alignment timed out and it switched at step %d", nv.SwitchedAt)
		}
		return Why{Steps: steps(nv.SwitchedAt, nv.RecordedAt), Text: fmt.Sprintf(
			"%s reported a snapshot of type %s at step %d although it took an %s one: %s", nv.Name, nv.Reported, nv.RecordedAt, nv.Taken, how)}, true
	}
	return Why{}, false
}

// notOnce: a record the sink received twice, or, the run drained, one
// it never received (lines 360-362).
func (s *BarrierSession) notOnce() (Why, bool) {
	cfg, st := s.cfg, s.state()
	term := barrier.Terminated(cfg, st)
	for src, kind := range cfg.Kind {
		for i := 1; kind == barrier.Source && i <= cfg.Budget[src]; i++ {
			at := s.sinkSteps(src, i)
			rec := fmt.Sprintf("%s#%d", cfg.Nodes[src], i)
			switch {
			case len(at) > 1:
				return Why{Steps: steps(append(at, s.restoreStep())...), Text: fmt.Sprintf("%s reached %s %s (steps %s)%s", rec, cfg.Nodes[cfg.Snk()], times(len(at)), joinSteps(at), s.restoredText())}, true
			case term && len(at) == 0:
				return Why{Steps: steps(len(s.steps), s.restoreStep()), Text: fmt.Sprintf("the run has drained and %s never reached %s%s: it is in no recorded state and in no channel state", rec, cfg.Nodes[cfg.Snk()], s.restoredText())}, true
			}
		}
	}
	return Why{}, false
}

// sinkSteps are the steps the sink took record <<src, i>> in, since the
// last restore (the output the restore rolled back to counts them too:
// recOut).
func (s *BarrierSession) sinkSteps(src, i int) []int {
	var at []int
	for k, t := range s.steps {
		a := t.Action
		if a.Kind == barrier.ActRestore {
			at = slices.DeleteFunc(at, func(j int) bool { return !s.inRecOut(j) })
		}
		if a.Kind != barrier.ActProcess || s.cfg.Edges[a.Edge][1] != s.cfg.Snk() {
			continue
		}
		if it := s.states[k].Q[a.Edge][0]; it.Src == src && it.I == i {
			at = append(at, k+1)
		}
	}
	return at
}

// inRecOut reports whether the sink took step j before it recorded: the
// restore keeps what it had output then.
func (s *BarrierSession) inRecOut(j int) bool { return !s.states[j-1].Has(s.cfg.Snk()) }

// restoreStep is the step of the run's restore, 0 if none.
func (s *BarrierSession) restoreStep() int {
	return slices.IndexFunc(s.steps, func(t barrier.Step) bool { return t.Action.Kind == barrier.ActRestore }) + 1
}

func (s *BarrierSession) restoredText() string {
	if k := s.restoreStep(); k > 0 {
		return fmt.Sprintf(", the graph restored at step %d", k)
	}
	return ""
}

func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func joinSteps(at []int) string {
	out := make([]string, len(at))
	for i, k := range at {
		out[i] = fmt.Sprint(k)
	}
	return strings.Join(out, " and ")
}

// withCause adds to a broken specification's failure its cause: the
// first step at which the run departs from what the positive
// specification does from the same state (departure), and the rule the
// variant drops.
func (s *BarrierSession) withCause(w Why) Why {
	bv, _ := barrierVariant(s.cfg.Variant)
	if bv.Drops == "" {
		return w
	}
	k, how := s.departure()
	if k == 0 {
		return w
	}
	w.Steps = steps(append(w.Steps, k)...)
	w.Text += fmt.Sprintf(". The cause: at step %d, %s, %s: %s drops %s (%s)", k, s.label(k), how, s.cfg.Variant, bv.Drops, bv.Rule)
	return w
}

// departure is the first step the positive specification does not take
// as the variant did: not enabled there (its false conjunct, quoted), or
// to another state (what differs); 0 if none.
func (s *BarrierSession) departure() (int, string) {
	for k, t := range s.steps {
		ns, err := t.Action.Apply(s.pos, s.states[k])
		var ne *barrier.NotEnabled
		if errors.As(err, &ne) {
			return k + 1, fmt.Sprintf("which %s does not enable (%s: %s)", s.pos.Variant, ne.Why, ne.Source)
		}
		if err == nil && barrier.Key(ns) != barrier.Key(t.State) {
			return k + 1, s.differs(s.states[k], ns, t.State)
		}
	}
	return 0, ""
}

// differs says what the positive specification's successor want has
// that the variant's got has not: channel state, a recording, a type
// reported.
func (s *BarrierSession) differs(from, want, got *barrier.State) string {
	pos := s.pos.Variant
	for e := range s.cfg.Edges {
		if add := want.RecQ[e][len(from.RecQ[e]):]; len(want.RecQ[e]) > len(got.RecQ[e]) {
			return fmt.Sprintf("%s would record %s as %s's channel state; %s records %s", pos, s.itemsOr(add, "nothing"), s.edgeName(e), s.cfg.Variant, s.itemsOr(got.RecQ[e][len(from.RecQ[e]):], "nothing"))
		}
	}
	for n, name := range s.cfg.Nodes {
		switch {
		case want.Has(n) && !got.Has(n):
			return fmt.Sprintf("%s would have %s record here; under %s it waits", pos, name, s.cfg.Variant)
		case want.Reported[n] != got.Reported[n]:
			return fmt.Sprintf("%s would have %s report %s; %s reports %s", pos, name, want.Reported[n], s.cfg.Variant, got.Reported[n])
		}
	}
	return fmt.Sprintf("%s reaches another state from it", pos)
}

// liveness is BarriersComplete as the explorer checks it (doc.go of
// model/barrier): in a state with no fair action enabled
// (barrier.FairEnabled), a behaviour stutters fairly, and if a source has
// injected the snapshot must be complete there.
func (s *BarrierSession) liveness() PropView {
	cfg, st := s.cfg, s.state()
	p := spec.PropBarriersComplete
	live := PropView{Name: p, Holds: true, Anchor: Anchor(p), Why: Why{Steps: []int{}}}
	switch {
	case barrier.FairEnabled(cfg, st):
		live.Detail = "an action under fairness is still enabled: the behaviour goes on"
	case barrier.Injected(cfg, st) && !barrier.Complete(cfg, st):
		live.Holds = false
		live.Detail = "a source injected its barrier and no action under fairness is enabled, so every fair behaviour from here stutters with the snapshot incomplete: " + s.missing()
		live.Why = s.withCause(Why{Steps: steps(len(s.steps)), Text: fmt.Sprintf("after step %d nothing under fairness is enabled", len(s.steps))})
	case barrier.Injected(cfg, st):
		live.Detail = "no action under fairness is enabled and the snapshot is complete"
		live.Why = Why{Steps: steps(s.completeStep()), Text: fmt.Sprintf("the snapshot completed at step %d", s.completeStep())}
	default:
		live.Detail = "no source has injected its barrier: nothing is owed"
	}
	return live
}

// missing says what the incomplete snapshot lacks: the nodes that have
// not recorded, the edges whose recording is not done.
func (s *BarrierSession) missing() string {
	var out []string
	for _, nv := range s.nodeViews() {
		if !nv.Recorded {
			out = append(out, nv.Name+" "+nv.State)
		}
	}
	for e := range s.cfg.Edges {
		if st := s.state().RecChan[e]; st != barrier.Done {
			out = append(out, s.edgeName(e)+" "+st.String())
		}
	}
	return strings.Join(out, "; ")
}
