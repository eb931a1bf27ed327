package explorer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// BarrierView is what the page shows of a barrier session.
type BarrierView struct {
	Kind     string          `json:"kind"` // "barrier"
	Scenario string          `json:"scenario"`
	Family   string          `json:"family"`
	Variant  barrier.Variant `json:"variant"`
	Schedule string          `json:"schedule"`
	History  []Step          `json:"history"`
	Enabled  []Step          `json:"enabled"`
	Nodes    []NodeView      `json:"nodes"`
	Edges    []EdgeView      `json:"edges"`
	// Snapshot says in one sentence where the snapshot stands: who
	// recorded, who switched and where alignment ended, the channel
	// state.
	Snapshot   string     `json:"snapshot"`
	Complete   bool       `json:"complete"`
	Properties []PropView `json:"properties"`
	Violated   []PropView `json:"violated"`
	Diagram    string     `json:"diagram"`
	Notes      []string   `json:"notes"`
}

// NodeView is a node's state: its count, whether it recorded (and at
// which step), the inputs alignment blocks, and in the adaptive mode its
// mode, the type it reported and the type it took.
type NodeView struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Count      string   `json:"count"`
	Recorded   bool     `json:"recorded"`
	RecordedAt int      `json:"recorded_at,omitempty"`
	Blocked    []string `json:"blocked"`
	Mode       string   `json:"mode,omitempty"`
	Reported   string   `json:"reported,omitempty"`
	Taken      string   `json:"taken,omitempty"`
	Switched   bool     `json:"switched,omitempty"`
	SwitchedAt int      `json:"switched_at,omitempty"`
	// State says in one sentence where the node stands.
	State string `json:"state"`
}

// EdgeView is an edge: its queue, head first, its recording's status and
// its recorded channel state.
type EdgeView struct {
	Name         string     `json:"name"`
	Back         bool       `json:"back,omitempty"`
	ForceAligned bool       `json:"force_aligned,omitempty"`
	Queue        []ItemView `json:"queue"`
	Status       string     `json:"status"`
	ChannelState []string   `json:"channel_state"`
	Blocked      bool       `json:"blocked,omitempty"`
}

// ItemView is an item on an edge: a barrier or a record (source#number,
// ·hops round a cycle); Persisted if the record is in the edge's
// channel state.
type ItemView struct {
	Text      string `json:"text"`
	Barrier   bool   `json:"barrier,omitempty"`
	Persisted bool   `json:"persisted,omitempty"`
}

// View renders the session for the page.
func (s *BarrierSession) View() (BarrierView, error) {
	st := s.state()
	v := BarrierView{Kind: "barrier", Scenario: s.sc.ID, Family: s.sc.Family, Variant: s.cfg.Variant, Schedule: s.Schedule(),
		History: s.history(), Enabled: s.enabled(), Complete: barrier.Complete(s.cfg, st), Violated: []PropView{}}
	for n := range s.cfg.Nodes {
		v.Nodes = append(v.Nodes, s.nodeView(n))
	}
	for e := range s.cfg.Edges {
		v.Edges = append(v.Edges, s.edgeView(e))
	}
	v.Snapshot = s.snapshotStatus()
	v.Properties = s.properties()
	for _, p := range v.Properties {
		if !p.Holds {
			v.Violated = append(v.Violated, p)
		}
	}
	var err error
	v.Diagram, v.Notes, err = s.Diagram()
	return v, err
}

func (s *BarrierSession) history() []Step {
	out := []Step{}
	for i, t := range s.steps {
		out = append(out, Step{Token: BarrierToken(t.Action), Label: t.Action.Label(s.cfg), Event: i + 1})
	}
	return out
}

func (s *BarrierSession) enabled() []Step {
	out := []Step{}
	for _, t := range s.Enabled() {
		out = append(out, Step{Token: BarrierToken(t.Action), Label: t.Action.Label(s.cfg)})
	}
	return out
}

// nodeKinds names a node's kind as the trace format does.
var nodeKinds = map[barrier.NodeKind]string{barrier.Source: spec.KindSource, barrier.Operator: spec.KindOperator, barrier.Sink: spec.KindSink}

// nodeView renders node n from the model's variables (emitted, cnt, bar,
// recorded; mode, reported, cutAligned in the adaptive mode).
func (s *BarrierSession) nodeView(n int) NodeView {
	cfg, st := s.cfg, s.state()
	nv := NodeView{Name: cfg.Nodes[n], Kind: nodeKinds[cfg.Kind[n]], Recorded: st.Has(n), Blocked: s.blocked(n)}
	nv.Count = fmt.Sprintf("processed %d", st.Cnt[n])
	if cfg.Kind[n] == barrier.Source {
		nv.Count = fmt.Sprintf("emitted %d of %d", st.Emitted[n], cfg.Budget[n])
	}
	if nv.Recorded {
		nv.RecordedAt = s.recordStep(n)
	}
	if cfg.Variant.Adaptive() && cfg.Kind[n] != barrier.Source {
		s.adaptiveNode(&nv, n)
	}
	nv.State = s.nodeState(n, nv)
	return nv
}

// adaptiveNode sets the adaptive variables of node n in nv.
func (s *BarrierSession) adaptiveNode(nv *NodeView, n int) {
	st := s.state()
	nv.Switched = st.Switched&(1<<n) != 0
	nv.Mode = barrier.ModeOf(st, n).String()
	if nv.Switched {
		nv.SwitchedAt = s.switchStep(n)
	}
	if nv.Recorded {
		nv.Reported, nv.Taken = st.Reported[n].String(), barrier.TakenType(st, n).String()
	}
}

// blocked are node n's inputs alignment blocks now: ProcessV's conjunct
// (tla/BarrierSnapshots.tla line 193) false, its barrier in and n not
// recorded, in an aligned (or adaptive) model whose variant blocks.
func (s *BarrierSession) blocked(n int) []string {
	cfg, st := s.cfg, s.state()
	out := []string{}
	if cfg.Mode != barrier.Aligned || cfg.Variant == barrier.VariantNoBlock || st.Has(n) {
		return out
	}
	for e, ends := range cfg.Edges {
		if ends[1] == n && st.Bar[n]&(1<<e) != 0 {
			out = append(out, s.edgeName(e))
		}
	}
	return out
}

// nodeState says where node n stands, in one sentence.
func (s *BarrierSession) nodeState(n int, nv NodeView) string {
	switch {
	case nv.Switched && s.firstRecord(n) < nv.SwitchedAt:
		return fmt.Sprintf("recorded at step %d, then its alignment timed out at step %d, after it recorded: switched to unaligned and recorded again%s",
			s.firstRecord(n), nv.SwitchedAt, s.reportedText(nv))
	case nv.Switched:
		return fmt.Sprintf("aligned from step %d until its alignment timed out at step %d: switched to unaligned, recorded there%s",
			s.alignStart(n), nv.SwitchedAt, s.reportedText(nv))
	case nv.Recorded:
		return fmt.Sprintf("recorded at step %d%s", nv.RecordedAt, s.reportedText(nv))
	case len(nv.Blocked) > 0:
		return fmt.Sprintf("aligning since step %d: %s blocked, waiting for the barrier of %s", s.alignStart(n), strings.Join(nv.Blocked, ", "), strings.Join(s.awaited(n), ", "))
	}
	return "has not recorded"
}

// reportedText says the type node nv reported, and the one it took if
// they differ.
func (s *BarrierSession) reportedText(nv NodeView) string {
	switch {
	case nv.Reported == "":
		return ""
	case nv.Reported != nv.Taken:
		return fmt.Sprintf("; reported a snapshot of type %s, but took an %s one", nv.Reported, nv.Taken)
	}
	return "; reported a snapshot of type " + nv.Reported
}

// awaited are node n's inputs it aligns on whose barrier has not
// arrived.
func (s *BarrierSession) awaited(n int) []string {
	cfg, st := s.cfg, s.state()
	var out []string
	for e, ends := range cfg.Edges {
		if ends[1] == n && st.Bar[n]&(1<<e) == 0 && (!cfg.Back[e] || cfg.Variant == barrier.VariantAlignAll) {
			out = append(out, s.edgeName(e))
		}
	}
	return out
}

// edgeView renders edge e from q, recChan and recQ.
func (s *BarrierSession) edgeView(e int) EdgeView {
	cfg, st := s.cfg, s.state()
	ev := EdgeView{Name: s.edgeName(e), Back: cfg.Back[e], ForceAligned: cfg.ForceAligned[e], Queue: []ItemView{},
		Status: st.RecChan[e].String(), ChannelState: []string{}}
	for _, it := range st.Q[e] {
		ev.Queue = append(ev.Queue, ItemView{Text: s.itemText(it), Barrier: it.Barrier, Persisted: !it.Barrier && slices.Contains(st.RecQ[e], it)})
	}
	for _, it := range st.RecQ[e] {
		ev.ChannelState = append(ev.ChannelState, s.itemText(it))
	}
	to := cfg.Edges[e][1]
	ev.Blocked = slices.Contains(s.blocked(to), ev.Name)
	return ev
}

// itemText renders a queue item: barrier, or S1#2 (·1 once round a
// cycle), as the diagram labels records.
func (s *BarrierSession) itemText(it barrier.Item) string {
	if it.Barrier {
		return "barrier"
	}
	t := fmt.Sprintf("%s#%d", s.cfg.Nodes[it.Src], it.I)
	if it.Hops > 0 {
		t += fmt.Sprintf("·%d", it.Hops)
	}
	return t
}

// edgeName renders edge e as the trace format keys it: S1->X.
func (s *BarrierSession) edgeName(e int) string {
	ends := s.cfg.Edges[e]
	return spec.BarrierEdgeKey(s.cfg.Nodes[ends[0]], s.cfg.Nodes[ends[1]])
}

// snapshotStatus says where the snapshot stands: complete (and where),
// in progress (who recorded), or not started; who switched; the channel
// state recorded and how.
func (s *BarrierSession) snapshotStatus() string {
	cfg, st := s.cfg, s.state()
	var done []string
	for n, name := range cfg.Nodes {
		if st.Has(n) {
			done = append(done, name)
		}
	}
	var out string
	switch {
	case barrier.Complete(cfg, st):
		out = fmt.Sprintf("complete at step %d", s.completeStep())
	case len(done) == 0:
		return "not started: no source has injected its barrier"
	default:
		out = "in progress: recorded " + strings.Join(done, ", ")
	}
	if sw := s.switches(); sw != "" {
		out += "; " + sw
	}
	return out + "; channel state: " + s.channelState()
}

// switches says which nodes switched to unaligned, at which step.
func (s *BarrierSession) switches() string {
	var out []string
	for n, name := range s.cfg.Nodes {
		if s.state().Switched&(1<<n) != 0 {
			out = append(out, fmt.Sprintf("%s's alignment timed out at step %d and it switched to unaligned", name, s.switchStep(n)))
		}
	}
	return strings.Join(out, ", ")
}

// channelState lists each edge's recorded channel state and how each
// record got there: overtaken by the sender's barrier (persisted) or
// logged by the receiver.
func (s *BarrierSession) channelState() string {
	var out []string
	for e := range s.cfg.Edges {
		for j, it := range s.state().RecQ[e] {
			out = append(out, fmt.Sprintf("%s on %s (%s)", s.itemText(it), s.edgeName(e), s.persistedHow(e, j)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// persistedHow says how record j of edge e's channel state got there: the
// step that added it, a barrier's overtaking or the receiver's log.
func (s *BarrierSession) persistedHow(e, j int) string {
	k := sinceStep(s.states, func(st *barrier.State) bool { return len(st.RecQ[e]) > j })
	if k == 0 {
		return "restored"
	}
	if s.steps[k-1].Action.Kind == barrier.ActProcess {
		return fmt.Sprintf("logged by %s at step %d", s.cfg.Nodes[s.cfg.Edges[e][1]], k)
	}
	return fmt.Sprintf("overtaken by %s's barrier, persisted at step %d", s.cfg.Nodes[s.cfg.Edges[e][0]], k)
}

// The steps of the run at which things happened, found in its states.

// recordStep is the step from which node n has recorded, 0 if it has
// not; for a node that recorded again (a late timeout), that step.
func (s *BarrierSession) recordStep(n int) int {
	at := s.firstRecord(n)
	for k := len(s.steps); k > at; k-- {
		if a := s.steps[k-1].Action; a.Kind == barrier.ActTimeout && a.Node == n {
			return k
		}
	}
	return at
}

// firstRecord is the step from which node n has recorded, 0 if it has
// not.
func (s *BarrierSession) firstRecord(n int) int {
	return sinceStep(s.states, func(st *barrier.State) bool { return st.Has(n) })
}

// switchStep is the step at which node n switched, 0 if it has not.
func (s *BarrierSession) switchStep(n int) int {
	return sinceStep(s.states, func(st *barrier.State) bool { return st.Switched&(1<<n) != 0 })
}

// alignStart is the step from which node n has had an input's barrier
// (bar[n] # {}), 0 if none.
func (s *BarrierSession) alignStart(n int) int {
	return sinceStep(s.states, func(st *barrier.State) bool { return st.Bar[n] != 0 })
}

// completeStep is the step from which the snapshot is complete, 0 if it
// is not.
func (s *BarrierSession) completeStep() int {
	return sinceStep(s.states, func(st *barrier.State) bool { return barrier.Complete(s.cfg, st) })
}
