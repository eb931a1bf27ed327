package nemesis

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/markerwave/markerwave/spec"
)

// A two-node history, P1 -> P2 only: P1 starts with 100, P2 with 0.
func send(msg uint64, amt, balAfter int64) spec.Event {
	return spec.Event{Proc: "P1", Action: spec.SendApp, From: "P1", To: "P2", Msg: msg, Amount: amt, After: spec.LocalState{Bal: balAfter}}
}

func recv(msg uint64, amt, balAfter int64) spec.Event {
	return spec.Event{Proc: "P2", Action: spec.RecvApp, From: "P1", To: "P2", Msg: msg, Amount: amt, After: spec.LocalState{Bal: balAfter}}
}

func record(p spec.ProcID, s spec.SnapID, bal int64) spec.Event {
	if p == "P1" {
		return spec.Event{Proc: p, Action: spec.Initiate, Snap: s, After: spec.LocalState{Bal: bal}}
	}
	return spec.Event{Proc: p, Action: spec.RecvMarker, From: "P1", To: p, Snap: s, First: true, After: spec.LocalState{Bal: bal}}
}

// history is: incarnation 1 sends #1 (10) and #2 (20), records snapshot
// 7 (P1 at 70; P2 at 10 after receiving #1, so #2 is in flight), sends
// #3 (5, rolled back), P2 receives #2 after its cut (rolled back);
// incarnation 2 resumes there, delivers #2 first and sends #3 (1) anew.
// tamper edits incarnation 2's P2 log.
func history(tamper func([]spec.Event) []spec.Event) []incarnation {
	inc1 := incarnation{EndedBy: 7, Logs: map[spec.ProcID][]spec.Event{
		"P1": {send(1, 10, 90), send(2, 20, 70), record("P1", 7, 70), send(3, 5, 65)},
		"P2": {recv(1, 10, 10), record("P2", 7, 10), recv(2, 20, 30), recv(3, 5, 35)},
	}}
	p2 := []spec.Event{recv(2, 20, 30), recv(3, 1, 31)}
	inc2 := incarnation{Logs: map[spec.ProcID][]spec.Event{
		"P1": {send(3, 1, 69)},
		"P2": tamper(p2),
	}}
	return []incarnation{inc1, inc2}
}

func TestLedger(t *testing.T) {
	l := account(history(func(evs []spec.Event) []spec.Event { return evs }))
	assert.Equal(t, 4, l.Made)
	assert.Equal(t, 1, l.RolledBack, "#3 of incarnation 1, sent after P1's cut")
	assert.Equal(t, 3, l.Kept)
	assert.Equal(t, 3, l.Delivered)
	assert.Empty(t, l.Lost)
	assert.Empty(t, l.Duplicated)
	assert.Empty(t, l.Unsent)
	assert.Empty(t, l.Problems)
	assert.Equal(t, []int64{100}, l.AfterRecovery, "70 + 10 + 20 in flight")
}

// The ledger has teeth: each fault of a restore is named.
func TestLedgerFaults(t *testing.T) {
	two := transferID{From: "P1", To: "P2", Msg: 2}
	three := transferID{From: "P1", To: "P2", Msg: 3}

	// The recorded message is not delivered after the restore: lost.
	l := account(history(func(evs []spec.Event) []spec.Event {
		return []spec.Event{recv(3, 1, 11)}
	}))
	assert.Equal(t, []transferID{two}, l.Lost)
	assert.Empty(t, l.Problems, "P2 resumed at 10 as recorded")

	// Delivered twice: duplicated.
	l = account(history(func(evs []spec.Event) []spec.Event {
		return append([]spec.Event{recv(2, 20, 30)}, evs[0], recv(3, 1, 51))
	}))
	assert.Equal(t, []transferID{two}, l.Duplicated)

	// A reception under a number no kept send has: received unsent, and
	// the #3 kept is then never received: lost.
	l = account(history(func(evs []spec.Event) []spec.Event {
		return []spec.Event{evs[0], recv(4, 5, 35)}
	}))
	assert.Equal(t, []transferID{three}, l.Lost)
	assert.Equal(t, []transferID{{From: "P1", To: "P2", Msg: 4}}, l.Unsent)

	// A node that does not resume in its recorded state.
	l = account(history(func(evs []spec.Event) []spec.Event {
		return []spec.Event{recv(2, 20, 50), recv(3, 1, 51)}
	}))
	assert.Equal(t, []string{"incarnation 2: P2 resumed with balance 30, recorded 10"}, l.Problems)
	assert.Equal(t, []int64{120}, l.AfterRecovery)
}
