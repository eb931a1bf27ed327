package explorer

import (
	"fmt"

	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// View is what the page shows of a session: the schedule, the enabled
// actions, the state, every snapshot, the spec's properties in the state,
// and the space-time diagram.
type View struct {
	Variant  model.Variant `json:"variant"`
	Schedule string        `json:"schedule"`
	History  []Step        `json:"history"`
	Enabled  []Step        `json:"enabled"`
	Procs    []ProcView    `json:"procs"`
	Chans    []ChanView    `json:"chans"`
	// SystemTotal is the money in the system now: balances plus
	// transfers in flight.
	SystemTotal string     `json:"system_total"`
	Snapshots   []SnapView `json:"snapshots"`
	Properties  []PropView `json:"properties"`
	Violated    []PropView `json:"violated"`
	Diagram     string     `json:"diagram"`
	Constants   Constants  `json:"constants"`
	// Partial says what the diagram and the trace leave out of the run
	// (Session.Partial), "" if nothing.
	Partial string `json:"partial"`
}

// Step is an action instance: its schedule token and its TLA+ label;
// for a step taken, its event's number in the diagram (data-index), 0
// if the diagram draws it not.
type Step struct {
	Token string `json:"token"`
	Label string `json:"label"`
	Event int    `json:"event,omitempty"`
}

// ProcView is a process's state.
type ProcView struct {
	ID  spec.ProcID `json:"id"`
	Bal string      `json:"bal"`
	spec.LocalState
}

// ChanView is a channel and the messages in it, head first.
type ChanView struct {
	Name string   `json:"name"`
	Msgs []string `json:"msgs"`
}

// SnapView is one snapshot: who recorded what, each channel's recording,
// and the recorded total against the system's.
type SnapView struct {
	ID        spec.SnapID   `json:"id"`
	Initiator spec.ProcID   `json:"initiator"`
	Initiated bool          `json:"initiated"`
	Complete  bool          `json:"complete"`
	Procs     []RecProcView `json:"procs"`
	Chans     []RecChanView `json:"chans"`
	Total     string        `json:"total"`  // the recorded total so far
	Of        string        `json:"of"`     // the system's money, TotalMoney
	Status    string        `json:"status"` // one sentence
}

// RecProcView is a process's recorded state for one snapshot.
type RecProcView struct {
	ID       spec.ProcID `json:"id"`
	Recorded bool        `json:"recorded"`
	Bal      string      `json:"bal,omitempty"`
}

// RecChanView is a channel's recording for one snapshot.
type RecChanView struct {
	Name   string   `json:"name"`
	Status string   `json:"status"` // idle, recording, done
	Msgs   []string `json:"msgs"`
}

// PropView is one property of the spec in the current state.
type PropView struct {
	Name   spec.Property `json:"name"`
	Holds  bool          `json:"holds"`
	Detail string        `json:"detail"`
	// Anchor is the property's section in docs/properties.md (Anchor).
	Anchor string `json:"anchor"`
	// Why is, for the run on screen, the steps that make it hold or fail.
	Why Why `json:"why"`
}

// View renders the session for the page.
func (s *Session) View() (View, error) {
	cfg := s.cfg
	v := View{Variant: cfg.Variant, Schedule: s.Schedule(), Constants: s.k,
		History: s.history(), Enabled: s.enabled(), Violated: []PropView{}, Partial: s.Partial(),
		Procs: s.procs(), Chans: s.chans(), SystemTotal: money(s.systemTotal())}
	for i := range cfg.Snap {
		v.Snapshots = append(v.Snapshots, s.snapView(i))
	}
	v.Properties = s.properties()
	for _, p := range v.Properties {
		if !p.Holds {
			v.Violated = append(v.Violated, p)
		}
	}
	d, err := s.Diagram(export.View{})
	if err != nil {
		return v, err
	}
	v.Diagram = d
	return v, nil
}

// history are the steps taken, each with its event in the diagram.
func (s *Session) history() []Step {
	out := []Step{}
	events := s.events()
	for i, t := range s.steps {
		out = append(out, Step{Token(s.cfg, t.Action), t.Label, events[i]})
	}
	return out
}

// enabled are the steps enabled now.
func (s *Session) enabled() []Step {
	out := []Step{}
	for _, t := range s.Enabled() {
		out = append(out, Step{Token: Token(s.cfg, t.Action), Label: t.Label})
	}
	return out
}

// procs are the processes' states.
func (s *Session) procs() []ProcView {
	st := s.state()
	out := make([]ProcView, 0, len(st.Proc))
	for i, p := range s.cfg.Topo.Procs {
		out = append(out, ProcView{ID: p, Bal: money(st.Proc[i].Bal), LocalState: st.Proc[i]})
	}
	return out
}

// chans are the channels and the messages in them.
func (s *Session) chans() []ChanView {
	st := s.state()
	out := make([]ChanView, 0, len(st.Chan))
	for c, ch := range s.cfg.Topo.Chans {
		cv := ChanView{Name: ch.String(), Msgs: []string{}}
		for _, m := range st.Chan[c] {
			cv.Msgs = append(cv.Msgs, msgText(s.cfg, m))
		}
		out = append(out, cv)
	}
	return out
}

// systemTotal is the money in the system now: balances plus transfers in
// flight.
func (s *Session) systemTotal() int64 {
	st := s.state()
	var total int64
	for _, l := range st.Proc {
		total += l.Bal
	}
	for _, ch := range st.Chan {
		for _, m := range ch {
			if m.Kind == model.KindApp {
				total += m.Amt
			}
		}
	}
	return total
}

// msgText renders a message in a channel: $30 #1, or marker 1.
func msgText(cfg *model.Config, m model.Msg) string {
	if m.Kind == model.KindMarker {
		return fmt.Sprintf("marker %d", cfg.Snap[m.Snap])
	}
	return fmt.Sprintf("%s #%d", money(m.Amt), m.Seq)
}

// snapView renders snapshot index i from the model's recording variables
// (recorded, recProc, recChan, recMsgs).
func (s *Session) snapView(i int) SnapView {
	cfg, st := s.cfg, s.state()
	sv := SnapView{ID: cfg.Snap[i], Initiator: cfg.Topo.Procs[cfg.Initiator[i]],
		Initiated: model.Initiated(cfg, st, i), Complete: model.Complete(cfg, st, i), Of: money(cfg.TotalMoney())}
	procs, inProcs := s.recProcs(i)
	chans, inChans := s.recChans(i)
	sv.Procs, sv.Chans, sv.Total = procs, chans, money(inProcs+inChans)
	sv.Status = s.snapStatus(i, sv, inProcs+inChans)
	return sv
}

// recProcs are the processes' recorded states for snapshot index i and
// the money they recorded.
func (s *Session) recProcs(i int) ([]RecProcView, int64) {
	st := s.state()
	var out []RecProcView
	var total int64
	for p, id := range s.cfg.Topo.Procs {
		rp := RecProcView{ID: id, Recorded: st.Recorded[i].Has(p)}
		if rp.Recorded {
			rp.Bal = money(st.RecProc[i][p].Bal)
			total += st.RecProc[i][p].Bal
		}
		out = append(out, rp)
	}
	return out, total
}

// recChans are the channels' recordings for snapshot index i and the
// money in them.
func (s *Session) recChans(i int) ([]RecChanView, int64) {
	st := s.state()
	var out []RecChanView
	var total int64
	for c, ch := range s.cfg.Topo.Chans {
		rc := RecChanView{Name: ch.String(), Status: st.RecChan[i][c].String(), Msgs: []string{}}
		for _, m := range st.RecMsgs[i][c] {
			rc.Msgs = append(rc.Msgs, fmt.Sprintf("%s #%d", money(m.Amt), m.Seq))
			total += m.Amt
		}
		out = append(out, rc)
	}
	return out, total
}

// snapStatus says in one sentence where snapshot index i stands.
func (s *Session) snapStatus(i int, sv SnapView, total int64) string {
	cfg, st := s.cfg, s.state()
	switch {
	case cfg.Faults() && model.Aborted(st, i):
		return fmt.Sprintf("aborted: %s suspected", string(cfg.Topo.Procs[abortCause(st.AbortedBy[i])]))
	case sv.Complete && total == cfg.TotalMoney():
		return fmt.Sprintf("complete: recorded %s, the system's %s", sv.Total, sv.Of)
	case sv.Complete:
		return fmt.Sprintf("complete: recorded %s, but the system holds %s", sv.Total, sv.Of)
	case sv.Initiated:
		return fmt.Sprintf("in progress: %s recorded so far", sv.Total)
	}
	return "not initiated"
}

// abortCause is the process of abortedBy[s] = {cause}.
func abortCause(by model.ProcSet) int {
	for p := 0; p < model.MaxProcs; p++ {
		if by.Has(p) {
			return p
		}
	}
	return 0
}

// properties evaluates the model's invariants (Config.Invariants, with
// the model's definitions) in the current state, then the temporal
// property (liveness), each with its section of docs/properties.md and
// the steps of the run that make it hold or fail (Session.why).
func (s *Session) properties() []PropView {
	var out []PropView
	for _, name := range s.cfg.Invariants {
		inv, ok := model.InvariantByName(name)
		if !ok {
			out = append(out, PropView{Name: name, Detail: "the model has no definition of it", Anchor: Anchor(name), Why: Why{Steps: []int{}}})
			continue
		}
		pv := PropView{Name: name, Holds: inv(s.cfg, s.state()), Anchor: Anchor(name)}
		if !pv.Holds {
			pv.Detail = violationDetail(name)
		}
		pv.Why = s.why(name, pv.Holds)
		out = append(out, pv)
	}
	return append(out, s.liveness())
}

// liveness is the temporal property as the explorer checks it: in a fair
// variant, a state with no fair action enabled (model.FairEnabled: a
// receive, and in the faults specifications a detection or an abort)
// ends a fair behaviour, and every initiated snapshot must be complete in
// it (SnapshotsComplete), or complete or aborted (SnapshotsEnd); the
// non-FIFO, no-recording and recover-any specifications have no fairness
// and claim no liveness.
func (s *Session) liveness() PropView {
	cfg, st := s.cfg, s.state()
	prop, i := model.LiveSnapshot(cfg, st)
	live := PropView{Name: prop, Holds: true, Anchor: Anchor(prop), Why: Why{Steps: []int{}}}
	ended := "complete"
	if cfg.Faults() {
		ended = "complete or aborted"
	}
	switch {
	case !cfg.Fair():
		live.Detail = string(cfg.Variant) + " has no fairness and claims no liveness"
	case model.FairEnabled(cfg, st):
		live.Detail = "an action under fairness is still enabled: the behaviour goes on"
	case i >= 0:
		live.Holds = false
		live.Detail = fmt.Sprintf("snapshot %d was initiated and is never %s: no action under fairness is enabled, so every fair behaviour from here stutters in this state", cfg.Snap[i], ended)
		why, at := s.stalled(i)
		if why != "" {
			live.Detail += "; " + why
		}
		live.Why = s.stalledWhy(at)
	default:
		live.Detail = "no action under fairness is enabled and every initiated snapshot is " + ended
		live.Why = s.endedWhy()
	}
	return live
}

// violationDetail says what a violated invariant means, in the words of
// the spec's comments.
func violationDetail(p spec.Property) string { return violationDetails[p] }

var violationDetails = map[spec.Property]string{
	spec.PropConsistentCut:         "an orphan message: received before its receiver recorded, sent after its sender recorded",
	spec.PropExactChannelState:     "a done channel's recorded messages are not exactly those in flight across the cut",
	spec.PropConservation:          "a complete snapshot does not hold all the money",
	spec.PropChandyLamportTheorem:  "the recorded state is not reachable from the initial state, or the current state not from it",
	spec.PropStableCatalogue:       "a stable predicate of the catalogue detected in the snapshot does not hold now",
	spec.PropTypeOK:                "a variable left its type",
	spec.PropFaultTypeOK:           "a variable left its type",
	spec.PropTheoremUnlessAborted:  "a snapshot that was not aborted recorded a state not reachable from the initial state, or the current state is not reachable from it",
	spec.PropMoneyConserved:        "the balances and the transfers in flight no longer hold the initial money",
	spec.PropExactlyOnce:           "a transfer was applied twice, skipped or never sent",
	spec.PropAbortSound:            "an aborted snapshot is complete, or its cause is not suspected",
	spec.PropRecoveredFromComplete: "the system recovered from a snapshot that was aborted or not complete",
	spec.PropRecoveryReachable:     "the state the system recovered to is not reachable from the initial state",
}
