package conformance

import (
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// CheckHistory checks the run-wide properties of a run with restores over
// its whole history, from its events and restores alone (independently
// of the model replay), with a ledger of transfer ids: a transfer is
// channel c's message number n (spec.Event.Msg), numbered on from the
// cut after a restore.
//
//   - ExactlyOnce (tla/ChandyLamportFaults.tla lines 262-265): on every
//     channel the numbers sent are 1, 2, ... in order, and those received
//     are a prefix of them, in order, with the amounts sent: none applied
//     twice, skipped or never sent. A restore from snapshot s rolls the
//     ledger back to s's cut: on each channel the messages sent before the
//     sender recorded s stay sent, those received before the receiver
//     recorded s stay received, and the rest (in flight at the cut) must
//     still be received, first.
//   - MoneyConserved (line 258): after every restore, and at the end, the
//     processes' balances plus the transfers in flight are the initial
//     total.
//
// A restore from a snapshot that is not complete in the incarnation
// before ends the ledger there (Replay reports RecoveredFromComplete).
// The violations name snapshot 0.
func CheckHistory(tr spec.Trace) []Violation {
	top := tr.Header.Topology
	if top == nil {
		return nil
	}
	l := newLedger(tr.Header)
	var out []Violation
	segs := tr.Segments()
	for k, seg := range segs {
		if k > 0 {
			r := tr.Restores[k-1]
			if checkRestorable(top, segs[k-1], r, 0) != nil {
				return out
			}
			l.restore(segs[k-1], r.Snap)
			if v := l.conserved(fmt.Sprintf("after the restore from snapshot %d (incarnation %d)", r.Snap, r.Incarnation)); v != nil {
				out = append(out, *v)
			}
		}
		for _, e := range seg {
			if v := l.step(e, k+1); v != nil {
				return append(out, *v)
			}
		}
	}
	if v := l.conserved("at the end of the run"); v != nil {
		out = append(out, *v)
	}
	return out
}

// ledger is the history's transfers, by channel, and every process's
// state.
type ledger struct {
	h     spec.Header
	sent  map[spec.Channel][]int64 // amounts of messages 1, 2, ...
	got   map[spec.Channel]int     // messages received: 1..got
	state map[spec.ProcID]spec.LocalState
}

func newLedger(h spec.Header) *ledger {
	l := &ledger{h: h, sent: map[spec.Channel][]int64{}, got: map[spec.Channel]int{}, state: map[spec.ProcID]spec.LocalState{}}
	for _, p := range h.Topology.Procs {
		l.state[p] = spec.LocalState{Bal: h.InitBal[p]}
	}
	return l
}

// step enters event e of incarnation inc, or says how it breaks
// ExactlyOnce.
func (l *ledger) step(e spec.Event, inc int) *Violation {
	c := e.Chan()
	bad := func(format string, a ...any) *Violation {
		return &Violation{Property: spec.PropExactlyOnce, Detail: fmt.Sprintf("incarnation %d, %s: ", inc, e) + fmt.Sprintf(format, a...)}
	}
	switch e.Action {
	case spec.SendApp:
		if want := uint64(len(l.sent[c])) + 1; e.Msg != want {
			return bad("transfer %s#%d sent, but the ledger's next transfer on %s is #%d (a transfer id reused or skipped)", c, e.Msg, c, want)
		}
		l.sent[c] = append(l.sent[c], e.Amount)
	case spec.RecvApp:
		got, sent := uint64(l.got[c]), uint64(len(l.sent[c]))
		switch {
		case e.Msg <= got:
			return bad("transfer %s#%d applied twice (the ledger has it received already)", c, e.Msg)
		case e.Msg > sent:
			return bad("transfer %s#%d received, but the history sent only %d on %s", c, e.Msg, sent, c)
		case e.Msg > got+1:
			return bad("transfers %s#%d..#%d lost: #%d received next", c, got+1, e.Msg-1, e.Msg)
		case l.sent[c][e.Msg-1] != e.Amount:
			return bad("transfer %s#%d received with amount %d, sent with %d", c, e.Msg, e.Amount, l.sent[c][e.Msg-1])
		}
		l.got[c]++
	}
	if e.Action == spec.SendApp || e.Action == spec.RecvApp {
		l.state[e.Proc] = e.After
	}
	return nil
}

// restore rolls the ledger back to snapshot s's cut, taken in seg (the
// incarnation before): each process's state when it recorded s, each
// channel's messages sent before its sender recorded and received before
// its receiver recorded.
func (l *ledger) restore(seg []spec.Event, s spec.SnapID) {
	recorded := map[spec.ProcID]bool{}
	sentAfter := map[spec.Channel]int{}
	gotAfter := map[spec.Channel]int{}
	stateAt := map[spec.ProcID]spec.LocalState{}
	for p, st := range l.state {
		stateAt[p] = st
	}
	// Each process's state when it recorded is its marker step's After;
	// what it sent and received after that is rolled back.
	for _, e := range seg {
		if (e.Action == spec.Initiate || e.Action == spec.RecvMarker) && e.Snap == s && !recorded[e.Proc] {
			recorded[e.Proc] = true
			stateAt[e.Proc] = e.After
		}
		if !recorded[e.Proc] {
			continue
		}
		switch e.Action {
		case spec.SendApp:
			sentAfter[e.Chan()]++
		case spec.RecvApp:
			gotAfter[e.Chan()]++
		}
	}
	for c, n := range sentAfter {
		l.sent[c] = l.sent[c][:len(l.sent[c])-n]
	}
	for c, n := range gotAfter {
		l.got[c] -= n
	}
	l.state = stateAt
}

// conserved checks MoneyConserved in the ledger's state, when.
func (l *ledger) conserved(when string) *Violation {
	var want, bal, flight int64
	for _, p := range l.h.Topology.Procs {
		want += l.h.InitBal[p]
		bal += l.state[p].Bal
	}
	for _, c := range l.h.Topology.Chans {
		for _, a := range l.sent[c][min(l.got[c], len(l.sent[c])):] {
			flight += a
		}
	}
	if bal+flight == want {
		return nil
	}
	return &Violation{Property: spec.PropMoneyConserved, Detail: fmt.Sprintf("%s the system holds %d (%d in balances + %d in flight), the initial total is %d", when, bal+flight, bal, flight, want)}
}

// checkRestorable: the snapshot restore r names is complete in seg, the
// incarnation before (RecoveredFromComplete): every process recorded it
// and every channel's marker was received. Line is the restore's line.
func checkRestorable(t *spec.Topology, seg []spec.Event, r spec.Restore, line int) *Divergence {
	recorded := map[spec.ProcID]bool{}
	closed := map[spec.Channel]bool{}
	initiated := false
	for _, e := range seg {
		if e.Snap != r.Snap {
			continue
		}
		switch e.Action {
		case spec.Initiate:
			initiated = true
			recorded[e.Proc] = true
		case spec.RecvMarker:
			recorded[e.Proc] = true
			closed[e.Chan()] = true
		}
	}
	var miss []string
	for _, p := range t.Procs {
		if !recorded[p] {
			miss = append(miss, string(p)+" never recorded")
		}
	}
	for _, c := range t.Chans {
		if !closed[c] {
			miss = append(miss, "channel "+c.String()+" never closed")
		}
	}
	if len(miss) == 0 {
		return nil
	}
	why := "it was never initiated there"
	if initiated {
		why = "it never completed there (aborted, or interrupted by the crash): " + strings.Join(miss, ", ")
	}
	return &Divergence{Step: r.At + 1, Line: line, Action: restoreLabel(r), Property: spec.PropRecoveredFromComplete,
		Detail:   fmt.Sprintf("incarnation %d is restored from snapshot %d, but %s in incarnation %d; only a complete snapshot's recorded state is reachable and conserves money", r.Incarnation, r.Snap, why, r.Incarnation-1),
		Expected: "a snapshot complete in incarnation " + fmt.Sprint(r.Incarnation-1), Reported: fmt.Sprintf("restored from snapshot %d", r.Snap)}
}
