package explorer

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// Session is one run of a model in the page: the constants, the variant,
// and the states reached by the schedule taken so far. Every step is the
// model's (model.Next); the session only remembers the way back.
type Session struct {
	k   Constants
	cfg *model.Config
	// the run: states[0] is Init, states[i] after step i (model.Next's
	// transitions)
	walk[model.Transition, *model.State]
}

// NewSession starts constants k under variant v in the initial state.
func NewSession(k Constants, v model.Variant) (*Session, error) {
	cfg, err := k.config(v)
	if err != nil {
		return nil, err
	}
	token := func(t model.Transition) string { return Token(cfg, t.Action) }
	next := func(st *model.State) []model.Transition { return model.Next(cfg, st) }
	after := func(t model.Transition) *model.State { return t.State }
	return &Session{k: k, cfg: cfg, walk: newWalk(model.Init(cfg), next, token, after)}, nil
}

// NewScenario starts scenario id under variant v, or under the
// scenario's own (Scenario.Variant) for v "".
func NewScenario(id string, v model.Variant) (*Session, error) {
	sc, err := scenario(id)
	if err != nil {
		return nil, err
	}
	if v == "" {
		v = sc.Variant
	}
	return NewSession(sc.Constants, v)
}

// Token names an action instance for a schedule, the same in every variant
// the page offers, so that a schedule replays under another variant:
//
//	S<c>x<a>  SendApp on channel index c of amount a
//	R<c>      receive the application message at the head of channel c
//	R<c>@<i>  receive the one at position i (non-FIFO)
//	I<s>      Initiate snapshot id s
//	M<c>      receive the marker at the head of channel c
//	M<c>@<i>  receive the marker at position i (non-FIFO)
//	L<c>      channel c loses its head (lossy channels)
//	D<c>      drop the marker of an aborted snapshot at the head of c
//	C<p>      process index p crashes
//	X<p>      the failure detector suspects crashed process p (Detect)
//	Y<p>      it suspects live process p (FalseSuspect)
//	A<s>p<p>  abort snapshot id s, process p's suspicion the cause
//	V         recover from the latest complete snapshot
//	V<s>      recover from snapshot id s (RecoverAny)
//
// The faults specifications' SendAppF, RecvAppF, InitiateF and
// RecvMarkerF take the letters of the actions they extend. Channels and
// processes are indexed in the topology's sorted order. A schedule is its
// tokens joined by dots.
func Token(cfg *model.Config, a model.Action) string {
	if letter, ok := chanLetters[a.Kind]; ok {
		if a.Pos > 1 {
			return fmt.Sprintf("%s%d@%d", letter, a.Chan, a.Pos)
		}
		return fmt.Sprintf("%s%d", letter, a.Chan)
	}
	if letter, ok := procLetters[a.Kind]; ok {
		return fmt.Sprintf("%s%d", letter, a.Proc)
	}
	switch a.Kind {
	case model.ActSendApp, model.ActSendAppF:
		return fmt.Sprintf("S%dx%d", a.Chan, a.Amt)
	case model.ActInitiate, model.ActInitiateF:
		return fmt.Sprintf("I%d", cfg.Snap[a.Snap])
	case model.ActAbort:
		return fmt.Sprintf("A%dp%d", cfg.Snap[a.Snap], a.Proc)
	case model.ActRecover:
		return "V"
	case model.ActRecoverAny:
		return fmt.Sprintf("V%d", cfg.Snap[a.Snap])
	}
	return a.Label(cfg)
}

// chanLetters are the tokens' letters of the actions on a channel's
// message (Token).
var chanLetters = map[model.ActionKind]string{
	model.ActRecvApp: "R", model.ActRecvAppAt: "R", model.ActRecvAppNoRecord: "R", model.ActRecvAppF: "R",
	model.ActRecvMarker: "M", model.ActRecvMarkerAt: "M", model.ActRecvMarkerNoForward: "M", model.ActRecvMarkerF: "M",
	model.ActLose: "L", model.ActDropMarker: "D",
}

// procLetters are the tokens' letters of the actions on a process.
var procLetters = map[model.ActionKind]string{model.ActCrash: "C", model.ActDetect: "X", model.ActFalseSuspect: "Y"}

// Take takes the enabled instance named by token, or says why it cannot:
// no such instance is enabled now (with the model's reason when the token
// names an action of the variant), or the schedule is at its limit.
func (s *Session) Take(token string) error {
	if ok, err := s.takeToken(token); ok || err != nil {
		return err
	}
	return fmt.Errorf("step %d, %s: not enabled in %s (enabled: %s)", len(s.steps)+1, token, s.cfg.Variant, s.enabledTokens())
}

// Replay takes every step of schedule in order (dot-separated tokens),
// stopping at the first that cannot be taken.
func (s *Session) Replay(schedule string) error { return s.replay(schedule, s.Take) }

// Trace is the run so far as a trace in the project's format: one event
// per step, in the order taken (which is causal), and the recorded state
// of every snapshot the model completed, as the model recorded it. What
// the model does not record (the in-flight $30 of the no-recording
// variant) is then missing from the trace's report, and the diagram and
// the audit show it so. A lost message (Lose) is a send never received;
// the steps of a process, a failure detector and a system that no process
// takes in the trace format's terms (Crash, Detect, FalseSuspect, the
// global Abort, and recovery) are left out, and the trace ends at a
// recovery: Partial says so.
func (s *Session) Trace() spec.Trace {
	tr := spec.Trace{Header: s.header(), Events: make([]spec.Event, 0, len(s.steps))}
	seq := make([]uint64, len(s.cfg.Topo.Procs))
	for i, t := range s.steps {
		kind := inTrace(t.Action.Kind)
		if kind == stepEndsTrace {
			break
		}
		if kind == stepLeftOut {
			continue
		}
		e := s.event(i)
		p := s.cfg.Topo.ProcIndex(e.Proc)
		seq[p]++
		e.Seq, e.After = seq[p], s.states[i+1].Proc[p]
		tr.Events = append(tr.Events, e)
	}
	tr.Header.Drained = s.drained()
	tr.Recorded = s.recorded()
	return tr
}

// header is the trace's header: the constants.
func (s *Session) header() spec.Header {
	cfg, topo := s.cfg, s.cfg.Topo
	h := spec.Header{
		Format: spec.TraceFormat, Topology: topo, InitBal: map[spec.ProcID]int64{}, Budget: map[spec.ProcID]int{},
		Snaps:  map[spec.SnapID]spec.ProcID{},
		Source: "markerwave explorer page (the Go model, " + string(cfg.Variant) + ")",
	}
	for i, p := range topo.Procs {
		h.InitBal[p] = cfg.InitBal[i]
		h.Budget[p] = cfg.Budget[i]
	}
	for i, id := range cfg.Snap {
		h.Snaps[id] = topo.Procs[cfg.Initiator[i]]
	}
	return h
}

// event is step i as a trace event, but for its process's sequence
// number and state after (Trace numbers them).
func (s *Session) event(i int) spec.Event {
	cfg, prev, next, a := s.cfg, s.states[i], s.states[i+1], s.steps[i].Action
	switch a.Kind {
	case model.ActInitiate, model.ActInitiateF:
		return spec.Event{Proc: cfg.Topo.Procs[cfg.Initiator[a.Snap]], Action: spec.Initiate, Snap: cfg.Snap[a.Snap]}
	case model.ActSendApp, model.ActSendAppF:
		c := cfg.Topo.Chans[a.Chan]
		return spec.Event{Proc: c.From, Action: spec.SendApp, From: c.From, To: c.To, Amount: a.Amt, Msg: next.NSent[a.Chan]}
	}
	c, m := cfg.Topo.Chans[a.Chan], prev.Chan[a.Chan][max(a.Pos, 1)-1]
	e := spec.Event{Proc: c.To, From: c.From, To: c.To}
	switch {
	case isRecvApp(a.Kind):
		e.Action, e.Amount, e.Msg = spec.RecvApp, m.Amt, m.Seq
	case isRecvMarker(a.Kind):
		e.Action, e.Snap, e.First = spec.RecvMarker, cfg.Snap[m.Snap], !prev.Recorded[m.Snap].Has(cfg.Topo.ProcIndex(c.To))
	case a.Kind == model.ActDropMarker:
		e.Action, e.Snap = spec.DropMarker, cfg.Snap[m.Snap]
	default:
		panic("explorer: the page offers no variant with action " + a.Kind.String())
	}
	return e
}

// drained reports whether every channel is empty now.
func (s *Session) drained() bool {
	for _, ch := range s.state().Chan {
		if len(ch) > 0 {
			return false
		}
	}
	return true
}

// recorded is the recorded state of every snapshot the model completed,
// as the model recorded it.
func (s *Session) recorded() []spec.RecordedSnapshot {
	cfg, st := s.cfg, s.state()
	var out []spec.RecordedSnapshot
	for i, id := range cfg.Snap {
		if !model.Complete(cfg, st, i) {
			continue
		}
		cut := map[spec.Channel]spec.ChanCut{}
		for c, ch := range cfg.Topo.Chans {
			cut[ch] = spec.ChanCut{Sent: st.CutSent[i][c], Got: uint64(len(st.CutGot[i][c]))}
		}
		out = append(out, spec.NewRecordedSnapshot(id, cfg.Topo.Procs[cfg.Initiator[i]], conformance.RecordedState(cfg, st, i), cut))
	}
	return out
}

// How Trace writes a step.
const (
	stepEvent     = iota // one event
	stepLeftOut          // no event: Lose, and the steps no process takes
	stepEndsTrace        // the trace ends before it: a recovery
)

// inTrace is how Trace writes a step of kind k.
func inTrace(k model.ActionKind) int {
	switch k {
	case model.ActLose, model.ActCrash, model.ActDetect, model.ActFalseSuspect, model.ActAbort:
		return stepLeftOut
	case model.ActRecover, model.ActRecoverAny:
		return stepEndsTrace
	}
	return stepEvent
}

// events are, for each step taken, its event's number in Trace (the
// diagram's data-index, from 1), 0 for a step Trace leaves out.
func (s *Session) events() []int {
	out := make([]int, len(s.steps))
	n := 0
	for i, t := range s.steps {
		switch inTrace(t.Action.Kind) {
		case stepEvent:
			n++
			out[i] = n
		case stepEndsTrace:
			return out
		}
	}
	return out
}

// Partial says what Trace leaves out of the run so far ("" if nothing):
// the steps of the faults specifications no process takes in the trace
// format, and everything from a recovery on.
func (s *Session) Partial() string {
	for _, t := range s.steps {
		switch t.Action.Kind {
		case model.ActCrash, model.ActDetect, model.ActFalseSuspect, model.ActAbort, model.ActRecover, model.ActRecoverAny:
			return "the diagram and the trace leave out crashes, suspicions and aborts, and end at a recovery: the page writes no failure events (markerwave audit reads them from the runtime's node logs)"
		}
	}
	return ""
}

// TraceJSONL is Trace in the trace file format, for download.
func (s *Session) TraceJSONL() (string, error) {
	var b bytes.Buffer
	if err := spec.WriteTrace(&b, s.Trace()); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Diagram draws the run so far as conformance/export draws a trace (SVG),
// "" before the first step.
func (s *Session) Diagram(v export.View) (string, error) {
	if len(s.steps) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	if err := export.Diagram(s.Trace(), &b, export.SVG, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// money renders an amount as the page shows it.
func money(a int64) string { return "$" + strconv.FormatInt(a, 10) }
