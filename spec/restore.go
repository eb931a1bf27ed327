package spec

import (
	"bytes"
	"fmt"
)

// Restore marks in a trace where the whole system restarted from a
// snapshot, as a new incarnation: tla/ChandyLamportFaults.tla's Recover
// (lines 188-193) taking RestoreFrom(Snap) (lines 176-178), which
// restarts every process in its recorded state and every channel with its
// recorded messages, delivered first. A trace carries one per restore, as
// a line {"restore": {"snap": 7, "incarnation": 2}} between the last
// event of the incarnation before and the first of the new one.
//
// Snap must be a snapshot of the incarnation before, complete there
// (RecoveredFromComplete, line 280); the audit checks it, and that every
// process resumes in exactly its recorded state with the recorded
// messages delivered first (RecoveryReachable, line 284), and keeps a
// ledger of transfers across the restores (MoneyConserved, line 258;
// ExactlyOnce, lines 262-265). Events of the new incarnation number their
// process's steps (Seq) and clocks (VC) afresh; message numbers (Msg) go
// on from the snapshot's cut, as the restored nodes do.
type Restore struct {
	Snap        SnapID `json:"snap"`
	Incarnation int    `json:"incarnation"` // the new incarnation: 2 for the first restore, then 3, ...
	// At is the index in Trace.Events of the new incarnation's first
	// event (len(Events) if it has none); the line's place in the file.
	At int `json:"-"`
}

// restoreLine is the form of a restore line.
type restoreLine struct {
	Restore *Restore `json:"restore"`
}

// isRestoreLine reports whether the object on line b (trimmed) has
// "restore" as its first key.
func isRestoreLine(b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(b[1:], " \t\r\n"), []byte(`"restore"`))
}

// readRestoreLine decodes restore line b, the next after the restores
// prev, placed before event at.
func readRestoreLine(b []byte, prev []Restore, at int) (Restore, error) {
	var rl restoreLine
	if err := decodeLine(b, &rl); err != nil {
		return Restore{}, fmt.Errorf("restore: %w", err)
	}
	if rl.Restore == nil {
		return Restore{}, fmt.Errorf("restore is null")
	}
	r := *rl.Restore
	want := len(prev) + 2
	switch {
	case r.Snap == 0:
		return r, fmt.Errorf("restore without a snapshot id")
	case r.Incarnation != want:
		return r, fmt.Errorf("restore to incarnation %d, want %d (the incarnations are 1, then 2, 3, ... one per restore)", r.Incarnation, want)
	}
	r.At = at
	return r, nil
}

// Segments splits t's events at its restores: segment 0 is the first
// incarnation's events, segment k those of the incarnation t.Restores[k-1]
// started.
func (t Trace) Segments() [][]Event {
	out := make([][]Event, 0, len(t.Restores)+1)
	from := 0
	for _, r := range t.Restores {
		out = append(out, t.Events[from:r.At])
		from = r.At
	}
	return append(out, t.Events[from:])
}
