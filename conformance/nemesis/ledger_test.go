package nemesis

import (
	"fmt"
	"sort"

	"github.com/markerwave/markerwave/spec"
)

// transferID names a transfer: its channel and its number there. Numbers
// go on from the snapshot's cut after a restore, so a kept transfer's id
// is unique over the whole history.
type transferID struct {
	From, To spec.ProcID
	Msg      uint64
}

func (id transferID) String() string { return fmt.Sprintf("%s->%s #%d", id.From, id.To, id.Msg) }

// incarnation is one incarnation's node logs and the snapshot the next
// incarnation was restored from (0 for the last one: nothing of it is
// rolled back).
type incarnation struct {
	Logs    map[spec.ProcID][]spec.Event
	EndedBy spec.SnapID
}

// ledger is the account of every transfer over a run's incarnations.
type ledger struct {
	Made       int // SendApp events in every log
	RolledBack int // sends after their sender's cut: undone by a recovery, by design
	Kept       int // sends before their sender's cut, or in the last incarnation
	Delivered  int // kept transfers received exactly once in the kept history
	Lost       []transferID
	Duplicated []transferID
	// Unsent are kept receptions of a transfer no kept send made.
	Unsent []transferID
	// AfterRecovery is, for each restore, the money the restored cluster
	// holds: every node's balance as it resumed plus the kept transfers
	// in flight at the cut (to be delivered first).
	AfterRecovery []int64
	// Problems lists what else contradicts the history (a node that did
	// not resume in its recorded state, amounts that differ, ...).
	Problems []string
}

// recordIndex is the index in evs of p's recording of snapshot s: its
// Initiate(s), or the first marker of s it received.
func recordIndex(evs []spec.Event, s spec.SnapID) int {
	for i, e := range evs {
		if e.Snap == s && (e.Action == spec.Initiate || e.Action == spec.RecvMarker && e.First) {
			return i
		}
	}
	return -1
}

// startBalance is the balance p had before its first step of evs, from
// that step's state after it.
func startBalance(evs []spec.Event) int64 {
	e := evs[0]
	switch e.Action {
	case spec.SendApp:
		return e.After.Bal + e.Amount
	case spec.RecvApp:
		return e.After.Bal - e.Amount
	}
	return e.After.Bal
}

// account builds the ledger of incs, in order. Each incarnation but the last keeps, at every
// node, the steps before the node's recording of the snapshot that ended
// it (the kept history); the last keeps all its steps.
func account(incs []incarnation) ledger {
	a := accountant{sent: map[transferID]int64{}, rcvd: map[transferID]int{}, rcvdAmt: map[transferID]int64{}}
	var recorded map[spec.ProcID]int64
	for k, inc := range incs {
		procs := sortedProcs(inc.Logs)
		if recorded != nil {
			// The restored nodes must resume where they recorded.
			a.l.AfterRecovery = append(a.l.AfterRecovery, a.resumed(k, inc, procs, recorded))
		}
		recorded = map[spec.ProcID]int64{}
		for _, p := range procs {
			a.keep(k, inc, p, recorded)
		}
	}
	for _, id := range a.transfers() {
		a.settle(id)
	}
	return a.l
}

// accountant is account's work in progress: the ledger so far and the
// kept transfers seen so far.
type accountant struct {
	l       ledger
	sent    map[transferID]int64 // kept sends: amount
	rcvd    map[transferID]int   // kept receptions: how many
	rcvdAmt map[transferID]int64 // kept receptions: amount
}

// sortedProcs lists the processes of logs in order.
func sortedProcs(logs map[spec.ProcID][]spec.Event) []spec.ProcID {
	procs := make([]spec.ProcID, 0, len(logs))
	for p := range logs {
		procs = append(procs, p)
	}
	sort.Slice(procs, func(i, j int) bool { return procs[i] < procs[j] })
	return procs
}

// resumed checks that each node of incarnation k+1 (inc, restored)
// resumed with the balance it recorded, and returns the money the
// restored cluster holds: the balances it resumed with plus the kept
// transfers in flight.
func (a *accountant) resumed(k int, inc incarnation, procs []spec.ProcID, recorded map[spec.ProcID]int64) int64 {
	money := int64(0)
	for _, p := range procs {
		evs := inc.Logs[p]
		if len(evs) == 0 {
			a.l.Problems = append(a.l.Problems, fmt.Sprintf("incarnation %d: %s made no step: its restored balance is unknown", k+1, p))
			continue
		}
		if b := startBalance(evs); b != recorded[p] {
			a.l.Problems = append(a.l.Problems, fmt.Sprintf("incarnation %d: %s resumed with balance %d, recorded %d", k+1, p, b, recorded[p]))
		}
		money += startBalance(evs)
	}
	for id, amt := range a.sent {
		if a.rcvd[id] == 0 {
			money += amt
		}
	}
	return money
}

// keep accounts for p's steps in incarnation k+1 (inc), keeping those
// before its cut, and notes in recorded the balance p recorded there.
func (a *accountant) keep(k int, inc incarnation, p spec.ProcID, recorded map[spec.ProcID]int64) {
	evs := inc.Logs[p]
	cut := len(evs)
	if inc.EndedBy != 0 {
		cut = recordIndex(evs, inc.EndedBy)
		if cut < 0 {
			a.l.Problems = append(a.l.Problems, fmt.Sprintf("incarnation %d: %s never recorded snapshot %d, restored from", k+1, p, inc.EndedBy))
			cut = len(evs)
		} else {
			recorded[p] = evs[cut].After.Bal
		}
	}
	for i, e := range evs {
		a.step(k, e, i < cut)
	}
}

// step accounts for one step e of incarnation k+1: a send is kept or
// rolled back, a kept one must not have been kept before, and a kept
// reception is counted.
func (a *accountant) step(k int, e spec.Event, kept bool) {
	id := transferID{From: e.From, To: e.To, Msg: e.Msg}
	switch {
	case e.Action == spec.SendApp && !kept:
		a.l.Made++
		a.l.RolledBack++
	case e.Action == spec.SendApp:
		a.l.Made++
		a.l.Kept++
		if _, dup := a.sent[id]; dup {
			a.l.Problems = append(a.l.Problems, fmt.Sprintf("incarnation %d: transfer %s sent again after being kept", k+1, id))
		}
		a.sent[id] = e.Amount
	case e.Action == spec.RecvApp && kept:
		a.rcvd[id]++
		a.rcvdAmt[id] = e.Amount
	}
}

// transfers lists the transfers kept sent or received, by channel, then
// number.
func (a *accountant) transfers() []transferID {
	ids := make([]transferID, 0, len(a.rcvd)+len(a.sent))
	seen := map[transferID]bool{}
	for id := range a.sent {
		ids, seen[id] = append(ids, id), true
	}
	for id := range a.rcvd {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		x, y := ids[i], ids[j]
		if x.From != y.From {
			return x.From < y.From
		}
		if x.To != y.To {
			return x.To < y.To
		}
		return x.Msg < y.Msg
	})
	return ids
}

// settle checks that the kept transfer id was received exactly once, for
// its amount, if sent: else it is unsent, lost or duplicated.
func (a *accountant) settle(id transferID) {
	amt, ok := a.sent[id]
	switch n := a.rcvd[id]; {
	case !ok:
		a.l.Unsent = append(a.l.Unsent, id)
	case n == 0:
		a.l.Lost = append(a.l.Lost, id)
	case n > 1:
		a.l.Duplicated = append(a.l.Duplicated, id)
	default:
		a.l.Delivered++
		if a.rcvdAmt[id] != amt {
			a.l.Problems = append(a.l.Problems, fmt.Sprintf("transfer %s sent %d, received %d", id, amt, a.rcvdAmt[id]))
		}
	}
}
