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
	var l ledger
	sent := map[transferID]int64{}    // kept sends: amount
	rcvd := map[transferID]int{}      // kept receptions: how many
	rcvdAmt := map[transferID]int64{} // kept receptions: amount
	var recorded map[spec.ProcID]int64
	for k, inc := range incs {
		procs := make([]spec.ProcID, 0, len(inc.Logs))
		for p := range inc.Logs {
			procs = append(procs, p)
		}
		sort.Slice(procs, func(i, j int) bool { return procs[i] < procs[j] })
		if recorded != nil {
			// The restored nodes must resume where they recorded.
			money := int64(0)
			for _, p := range procs {
				evs := inc.Logs[p]
				if len(evs) == 0 {
					l.Problems = append(l.Problems, fmt.Sprintf("incarnation %d: %s made no step: its restored balance is unknown", k+1, p))
					continue
				}
				if b := startBalance(evs); b != recorded[p] {
					l.Problems = append(l.Problems, fmt.Sprintf("incarnation %d: %s resumed with balance %d, recorded %d", k+1, p, b, recorded[p]))
				}
				money += startBalance(evs)
			}
			for id, amt := range sent {
				if rcvd[id] == 0 {
					money += amt
				}
			}
			l.AfterRecovery = append(l.AfterRecovery, money)
		}
		recorded = map[spec.ProcID]int64{}
		for _, p := range procs {
			evs := inc.Logs[p]
			cut := len(evs)
			if inc.EndedBy != 0 {
				cut = recordIndex(evs, inc.EndedBy)
				if cut < 0 {
					l.Problems = append(l.Problems, fmt.Sprintf("incarnation %d: %s never recorded snapshot %d, restored from", k+1, p, inc.EndedBy))
					cut = len(evs)
				} else {
					recorded[p] = evs[cut].After.Bal
				}
			}
			for i, e := range evs {
				id := transferID{From: e.From, To: e.To, Msg: e.Msg}
				switch {
				case e.Action == spec.SendApp && i >= cut:
					l.Made++
					l.RolledBack++
				case e.Action == spec.SendApp:
					l.Made++
					l.Kept++
					if _, dup := sent[id]; dup {
						l.Problems = append(l.Problems, fmt.Sprintf("incarnation %d: transfer %s sent again after being kept", k+1, id))
					}
					sent[id] = e.Amount
				case e.Action == spec.RecvApp && i < cut:
					rcvd[id]++
					rcvdAmt[id] = e.Amount
				}
			}
		}
	}
	ids := make([]transferID, 0, len(rcvd)+len(sent))
	seen := map[transferID]bool{}
	for id := range sent {
		ids, seen[id] = append(ids, id), true
	}
	for id := range rcvd {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.To != b.To {
			return a.To < b.To
		}
		return a.Msg < b.Msg
	})
	for _, id := range ids {
		amt, ok := sent[id]
		switch n := rcvd[id]; {
		case !ok:
			l.Unsent = append(l.Unsent, id)
		case n == 0:
			l.Lost = append(l.Lost, id)
		case n > 1:
			l.Duplicated = append(l.Duplicated, id)
		default:
			l.Delivered++
			if rcvdAmt[id] != amt {
				l.Problems = append(l.Problems, fmt.Sprintf("transfer %s sent %d, received %d", id, amt, rcvdAmt[id]))
			}
		}
	}
	return l
}
