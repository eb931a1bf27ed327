package explorer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// Why is, for the run on screen, the steps that make a property hold or
// fail and what they show. Steps are 1-based numbers of the schedule's
// steps (step i leads from states[i-1] to states[i]); the page jumps to
// them. Every fact is read from the model's states: its ghost variables
// (nSent, got, cutSent, cutGot) and the recording variables.
type Why struct {
	Steps []int  `json:"steps"`
	Text  string `json:"text"`
}

// why explains property p, which holds (or not) in the current state.
func (s *Session) why(p spec.Property, holds bool) Why {
	if !holds {
		if f, ok := failsWhy[p]; ok {
			return f(s)
		}
		return s.firstFalse(p)
	}
	if k := s.falseAt(p); k >= 0 {
		return s.heldAgain(k)
	}
	if f, ok := holdsWhy[p]; ok {
		return f(s)
	}
	return s.holdsThroughout()
}

// failsWhy are the properties whose failure the page explains beyond the
// step it starts at (firstFalse).
var failsWhy = map[spec.Property]func(*Session) Why{
	spec.PropConsistentCut: (*Session).orphan,
}

// holdsWhy are the properties whose holding the page explains by the
// steps it rests on; every other holds in every state of the run
// (holdsThroughout).
var holdsWhy = map[spec.Property]func(*Session) Why{
	spec.PropConsistentCut:        (*Session).behindTheMarker,
	spec.PropExactChannelState:    (*Session).channelClosed,
	spec.PropConservation:         (*Session).conserved,
	spec.PropChandyLamportTheorem: (*Session).completedSnapshot,
	spec.PropTheoremUnlessAborted: (*Session).completedSnapshot,
	spec.PropStableCatalogue:      (*Session).completedSnapshot,
}

// firstFalse is the step from which invariant p is false: the first
// state of the run in which the model's definition of it fails.
func (s *Session) firstFalse(p spec.Property) Why {
	if k := s.falseAt(p); k >= 0 {
		return s.becameFalse(k)
	}
	return Why{Steps: []int{}}
}

// falseAt is the first state of the run (0 the initial one, i after step
// i) in which the model's definition of invariant p fails, -1 if none.
func (s *Session) falseAt(p spec.Property) int {
	inv, ok := model.InvariantByName(p)
	if !ok {
		return -1
	}
	for i, st := range s.states {
		if !inv(s.cfg, st) {
			return i
		}
	}
	return -1
}

// heldAgain says that an invariant true now was false after step k (a
// recovery of SpecRecoverAny can make it so).
func (s *Session) heldAgain(k int) Why {
	if k == 0 {
		return Why{Steps: []int{}, Text: "holds now, but was false in the initial state"}
	}
	return Why{Steps: []int{k}, Text: fmt.Sprintf("holds now, but was false after step %d, %s", k, s.steps[k-1].Label)}
}

// becameFalse says that step i made the property false.
func (s *Session) becameFalse(i int) Why {
	if i == 0 {
		return Why{Steps: []int{}, Text: "false in the initial state"}
	}
	return Why{Steps: []int{i}, Text: fmt.Sprintf("false from step %d on, %s", i, s.steps[i-1].Label)}
}

// holdsThroughout says the invariant held in every state of the run.
func (s *Session) holdsThroughout() Why {
	return Why{Steps: []int{}, Text: fmt.Sprintf("holds in every state of the run (%s)", plural(len(s.states), "state"))}
}

// orphan names the message that breaks ConsistentCut (lines 287-292) and
// the steps that sent and received it: a message received before its
// receiver recorded (it is in cutGot[s][c]) and sent after its sender
// recorded (its number exceeds cutSent[s][c]), or, failing that, one
// received out of order before the cut.
func (s *Session) orphan() Why {
	cfg, st := s.cfg, s.state()
	for si := range cfg.Snap {
		for c := range cfg.Topo.Chans {
			if !s.bothRecorded(si, c) {
				continue
			}
			if seq, ok := orphanSeq(st.CutGot[si][c], st.CutSent[si][c]); ok {
				return s.orphanWhy(si, c, seq)
			}
			if seq, ok := outOfOrder(st.CutGot[si][c]); ok {
				return s.outOfOrderWhy(si, c, seq)
			}
		}
	}
	return s.firstFalse(spec.PropConsistentCut)
}

// bothRecorded is c[1] \in recorded[s] /\ c[2] \in recorded[s].
func (s *Session) bothRecorded(si, c int) bool {
	from, to := s.ends(c)
	rec := s.state().Recorded[si]
	return rec.Has(from) && rec.Has(to)
}

// ends are channel c's sender and receiver indexes.
func (s *Session) ends(c int) (from, to int) {
	ch := s.cfg.Topo.Chans[c]
	return s.cfg.Topo.ProcIndex(ch.From), s.cfg.Topo.ProcIndex(ch.To)
}

// orphanSeq is the first number the receiver had consumed at its cut
// that the sender had not sent at its own: Len(cutGot) <= cutSent fails
// on it.
func orphanSeq(got []uint64, cutSent uint64) (uint64, bool) {
	for _, g := range got {
		if g > cutSent {
			return g, true
		}
	}
	return 0, false
}

// outOfOrder is the first number of got that breaks cutGot = 1..k.
func outOfOrder(got []uint64) (uint64, bool) {
	for j, g := range got {
		if g != uint64(j+1) {
			return g, true
		}
	}
	return 0, false
}

func (s *Session) orphanWhy(si, c int, seq uint64) Why {
	from, to := s.ends(c)
	send, recv := s.sendStep(c, seq), s.recvStep(c, seq)
	return Why{Steps: steps(send, recv), Text: fmt.Sprintf(
		"the orphan #%d on %s: sent at step %d, after %s recorded for snapshot %d (step %d); received at step %d, before %s recorded (step %d)",
		seq, s.cfg.Topo.Chans[c], send, s.cfg.Topo.Procs[from], s.cfg.Snap[si], s.recordStep(si, from),
		recv, s.cfg.Topo.Procs[to], s.recordStep(si, to))}
}

func (s *Session) outOfOrderWhy(si, c int, seq uint64) Why {
	_, to := s.ends(c)
	recv := s.recvStep(c, seq)
	return Why{Steps: steps(recv), Text: fmt.Sprintf(
		"#%d on %s was received at step %d, ahead of an earlier message, before %s recorded for snapshot %d (step %d): what it had consumed is no prefix of what was sent",
		seq, s.cfg.Topo.Chans[c], recv, s.cfg.Topo.Procs[to], s.cfg.Snap[si], s.recordStep(si, to))}
}

// behindTheMarker shows why ConsistentCut holds: on a channel both of
// whose ends recorded, the first message sent after the sender recorded
// travels behind the sender's marker (FIFO), so the receiver records,
// on that marker, before it can receive the message.
func (s *Session) behindTheMarker() Why {
	cfg, st := s.cfg, s.state()
	first := Why{Steps: []int{}, Text: "no channel has both its ends recorded yet: there is nothing to check"}
	for si := range cfg.Snap {
		for c := range cfg.Topo.Chans {
			if !s.bothRecorded(si, c) {
				continue
			}
			if seq := st.CutSent[si][c] + 1; seq <= st.NSent[c] {
				return s.postMarkerWhy(si, c, seq)
			}
			if len(first.Steps) == 0 {
				first = s.noPostMarkerWhy(si, c)
			}
		}
	}
	return first
}

func (s *Session) postMarkerWhy(si, c int, seq uint64) Why {
	from, to := s.ends(c)
	send, rec := s.sendStep(c, seq), s.recordStep(si, to)
	because := "it travels behind that marker, so %s recorded at step %d, before it could receive it"
	if s.cfg.Variant == model.VariantNonFIFO {
		because = "the channel is not FIFO, and this run happened to deliver the marker first: %s recorded at step %d, before receiving it"
	}
	text := fmt.Sprintf("#%d on %s was sent at step %d, after %s recorded for snapshot %d (step %d): "+because,
		seq, s.cfg.Topo.Chans[c], send, s.cfg.Topo.Procs[from], s.cfg.Snap[si], s.recordStep(si, from), s.cfg.Topo.Procs[to], rec)
	if recv := s.recvStep(c, seq); recv > 0 {
		text += fmt.Sprintf(" (it did at step %d)", recv)
	}
	return Why{Steps: steps(rec, send), Text: text}
}

func (s *Session) noPostMarkerWhy(si, c int) Why {
	from, to := s.ends(c)
	rf, rt := s.recordStep(si, from), s.recordStep(si, to)
	return Why{Steps: steps(rf, rt), Text: fmt.Sprintf(
		"both ends of %s recorded for snapshot %d (%s at step %d, %s at step %d) and nothing was sent on it after %s recorded: every message %s consumed before its cut was sent before the sender's",
		s.cfg.Topo.Chans[c], s.cfg.Snap[si], s.cfg.Topo.Procs[from], rf, s.cfg.Topo.Procs[to], rt, s.cfg.Topo.Procs[from], s.cfg.Topo.Procs[to])}
}

// channelClosed shows why ExactChannelState holds: the channel whose
// recording was closed (done) last, by the marker, recorded exactly the
// messages numbered Len(cutGot)+1 .. cutSent (lines 297-302).
func (s *Session) channelClosed() Why {
	cfg, st := s.cfg, s.state()
	best, bs, bc := 0, -1, -1
	for si := range cfg.Snap {
		for c := range cfg.Topo.Chans {
			if st.RecChan[si][c] != model.Done {
				continue
			}
			if k := s.doneStep(si, c); k >= best {
				best, bs, bc = k, si, c
			}
		}
	}
	if bs < 0 {
		return Why{Steps: []int{}, Text: "no channel's recording is done yet: there is nothing to check"}
	}
	return s.closedWhy(bs, bc, best)
}

func (s *Session) closedWhy(si, c, step int) Why {
	st := s.state()
	from, to := s.ends(c)
	k, sent := uint64(len(st.CutGot[si][c])), st.CutSent[si][c]
	rec := "nothing: no message crossed the cut"
	if sent > k {
		rec = fmt.Sprintf("#%d..#%d, the messages sent before %s recorded and received after %s did", k+1, sent, s.cfg.Topo.Procs[from], s.cfg.Topo.Procs[to])
	}
	because := "FIFO, the marker follows every message sent before the cut, so"
	if s.cfg.Variant == model.VariantNonFIFO {
		because = "the channel is not FIFO, but in this run"
	}
	return Why{Steps: steps(step), Text: fmt.Sprintf("%s's recording for snapshot %d was closed by the marker at step %d; %s it recorded %s",
		s.cfg.Topo.Chans[c], s.cfg.Snap[si], step, because, rec)}
}

// conserved shows why Conservation holds: the snapshot completed last
// recorded all the money (lines 306-309).
func (s *Session) conserved() Why {
	si, step := s.lastCompleted()
	if si < 0 {
		return Why{Steps: []int{}, Text: "no snapshot is complete yet: there is nothing to check"}
	}
	sv := s.snapView(si)
	return Why{Steps: steps(step), Text: fmt.Sprintf("snapshot %d completed at step %d and recorded %s, the system's %s: each transfer is in one recorded balance or in one recorded channel, never both, never neither",
		sv.ID, step, sv.Total, sv.Of)}
}

// completedSnapshot shows the step from which the property is checked
// of a complete snapshot's recorded state.
func (s *Session) completedSnapshot() Why {
	si, step := s.lastCompleted()
	if si < 0 {
		return Why{Steps: []int{}, Text: "no snapshot is complete yet: the property constrains complete snapshots"}
	}
	return Why{Steps: steps(step), Text: fmt.Sprintf("snapshot %d completed at step %d, and the property holds of its recorded state in every state since", s.cfg.Snap[si], step)}
}

// lastCompleted is the snapshot that completed last and its step, -1 if
// none is complete.
func (s *Session) lastCompleted() (si, step int) {
	si = -1
	for i := range s.cfg.Snap {
		if k := s.completeStep(i); k > 0 && k >= step {
			si, step = i, k
		}
	}
	return si, step
}

// endedWhy shows why the temporal property holds where a fair
// behaviour ends: the steps that completed (or aborted) each initiated
// snapshot.
func (s *Session) endedWhy() Why {
	var at []int
	for si := range s.cfg.Snap {
		at = append(at, s.endStep(si))
	}
	return Why{Steps: steps(at...), Text: "every initiated snapshot ended at the steps shown: fairness has every marker in a channel received"}
}

// stalledWhy shows why the temporal property fails: the steps at that
// keep the snapshot from ending (stalled), else the last step, after
// which no action under fairness is enabled.
func (s *Session) stalledWhy(at []int) Why {
	if len(at) == 0 {
		return Why{Steps: steps(len(s.steps)), Text: fmt.Sprintf("after step %d no action under fairness is enabled, and the snapshot has not ended", len(s.steps))}
	}
	return Why{Steps: steps(at...), Text: "the steps shown keep the snapshot from ever ending"}
}

// stalled says what keeps snapshot index i from ending, when the run
// shows it, and the steps that did it: a marker the channel lost, a
// crashed process nothing suspects.
func (s *Session) stalled(i int) (string, []int) {
	var out []string
	var at []int
	for k, t := range s.steps {
		if a := t.Action; a.Kind == model.ActLose {
			if m := s.states[k].Chan[a.Chan][0]; m.Kind == model.KindMarker && m.Snap == i {
				out = append(out, fmt.Sprintf("its marker was lost on %s (step %d)", s.cfg.Topo.Chans[a.Chan], k+1))
				at = append(at, k+1)
			}
		}
	}
	crashed, cat := s.unsuspected()
	return strings.Join(append(out, crashed...), "; "), append(at, cat...)
}

// unsuspected names the crashed processes nothing suspects, in the faults
// specifications, and the steps they crashed at.
func (s *Session) unsuspected() ([]string, []int) {
	cfg, st := s.cfg, s.state()
	if !cfg.Faults() {
		return nil, nil
	}
	var out []string
	var at []int
	for p, id := range cfg.Topo.Procs {
		if !st.Alive.Has(p) && !st.Suspected.Has(p) {
			k := s.crashStep(p)
			out = append(out, fmt.Sprintf("%s crashed and nothing suspects it, so nothing aborts the snapshot (the crash: step %d)", string(id), k))
			at = append(at, k)
		}
	}
	return out, at
}

// The steps of the run at which things happened, found in its states.

// recordStep is the step at which process q recorded for snapshot index
// si (recorded[s] gained q), 0 if it has not.
func (s *Session) recordStep(si, q int) int {
	return s.firstStep(func(st *model.State) bool { return st.Recorded[si].Has(q) })
}

// completeStep is the step at which snapshot index si became complete, 0
// if it is not.
func (s *Session) completeStep(si int) int {
	return s.firstStep(func(st *model.State) bool { return model.Complete(s.cfg, st, si) })
}

// endStep is the step at which snapshot index si became complete or
// aborted, 0 if neither.
func (s *Session) endStep(si int) int {
	return s.firstStep(func(st *model.State) bool {
		return model.Complete(s.cfg, st, si) || (s.cfg.Faults() && model.Aborted(st, si))
	})
}

// doneStep is the step at which channel c's recording for snapshot index
// si became done, 0 if it is not.
func (s *Session) doneStep(si, c int) int {
	return s.firstStep(func(st *model.State) bool { return st.RecChan[si][c] == model.Done })
}

// crashStep is the step at which process p last crashed, 0 if none.
func (s *Session) crashStep(p int) int {
	at := 0
	for k, t := range s.steps {
		if t.Action.Kind == model.ActCrash && t.Action.Proc == p {
			at = k + 1
		}
	}
	return at
}

// firstStep is the step after which cond holds from then to now, 0 if it
// does not hold now or held from the initial state.
func (s *Session) firstStep(cond func(*model.State) bool) int { return sinceStep(s.states, cond) }

// sinceStep is, for the states of a run (states[0] the initial one,
// states[i] after step i), the step after which cond holds from then to
// the last state, 0 if it does not hold there or held from the initial
// state: of the Chandy-Lamport sessions and the barrier ones.
func sinceStep[S any](states []S, cond func(S) bool) int {
	at := len(states)
	for at > 0 && cond(states[at-1]) {
		at--
	}
	if at == len(states) {
		return 0
	}
	return at
}

// sendStep is the step that sent message number seq on channel c (the
// send that made nSent[c] = seq), 0 if none did.
func (s *Session) sendStep(c int, seq uint64) int {
	for k, t := range s.steps {
		if isSend(t.Action.Kind) && t.Action.Chan == c && s.states[k+1].NSent[c] == seq {
			return k + 1
		}
	}
	return 0
}

// recvStep is the step that received message number seq of channel c, 0
// if none did.
func (s *Session) recvStep(c int, seq uint64) int {
	for k, t := range s.steps {
		a := t.Action
		if !isRecvApp(a.Kind) || a.Chan != c {
			continue
		}
		if m := s.states[k].Chan[c][max(a.Pos, 1)-1]; m.Kind == model.KindApp && m.Seq == seq {
			return k + 1
		}
	}
	return 0
}

func isSend(k model.ActionKind) bool { return k == model.ActSendApp || k == model.ActSendAppF }

func isRecvApp(k model.ActionKind) bool { return chanLetters[k] == "R" }

func isRecvMarker(k model.ActionKind) bool { return chanLetters[k] == "M" }

// steps are the positive step numbers of ks, sorted, once each.
func steps(ks ...int) []int {
	out := []int{}
	for _, k := range ks {
		if k > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// plural renders n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
