package spec

import "fmt"

// AbortVerdict says that snapshot Snap was aborted and why: its share of
// Abort(s, q) in tla/ChandyLamportFaults.tla (lines 132-138), Cause the
// suspected process q. It is the one description of an abort: a node's
// log, the store's record of it (markerwave snapshots) and the audit
// (conformance) all render it with String, so the three say the same
// words of one event.
type AbortVerdict struct {
	Snap SnapID `json:"snap"`
	// Cause is the suspected process the snapshot waited for.
	Cause ProcID `json:"cause"`
	// Initiator is the process that initiated the snapshot, "" if not
	// known.
	Initiator ProcID `json:"initiator,omitempty"`
	// By is the node that aborted it ("" for the audit's own abort, which
	// the spec's fairness takes).
	By ProcID `json:"by,omitempty"`
}

// Reason is why the snapshot was aborted: "its initiator P1 is suspected
// (crashed or unreachable)", or "P3 is suspected (crashed or
// unreachable)" when the cause did not initiate it.
func (v AbortVerdict) Reason() string {
	who := string(v.Cause)
	if v.Cause == v.Initiator {
		who = "its initiator " + who
	}
	return who + " is suspected (crashed or unreachable)"
}

// String is the verdict: "snapshot 3 aborted: its initiator P1 is
// suspected (crashed or unreachable)".
func (v AbortVerdict) String() string {
	return fmt.Sprintf("snapshot %d aborted: %s", v.Snap, v.Reason())
}
