package spec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// The outsider format (markerwave-outsider/1) is the trace an
// implementation that is not this project's can write from what each of
// its nodes observes, with nothing invented: docs/conformance.md
// ("Instrument your implementation in 15 minutes") walks through it and
// traces/outsider.schema.json is its JSON Schema. A file is JSON Lines:
//
//   - line 1, the header (OutsiderHeader): format, topology, init_bal and,
//     in one node's own log, node;
//   - one observation a line (OutsiderEvent), in the order the node made
//     them: "send", "recv" (application messages), "marker_send",
//     "marker_recv", "record" (the node recorded its local state), and
//     the failure handling's "suspect", "unsuspect", "abort",
//     "marker_drop";
//   - {"snapshot": {...}} lines (OutsiderSnapshot): what the
//     implementation reported recorded, whole or one node's part, in the
//     node logs or in a file of their own beside them;
//   - in a log holding several incarnations, {"restore": {"snap": ID}}
//     between them (or one log per node and incarnation, the header's
//     restored_from naming the snapshot).
//
// What a writer MUST emit: the header's format, topology and init_bal
// (and node in a node's own log); each event's ev, and its node when the
// header has none; a send's to and amount; a recv's from; a marker's
// from or to and snap; a record's snap. Everything else is optional:
// what is missing is derived from the rest of the log (message ids
// default to the per-channel count, a receive matches the channel's
// oldest message not yet received, the step numbers, the per-channel
// seqs, the vector clocks, the after states and counters, first, the cut
// counts), and what is given is checked against what the log and the
// model say. Snapshot and message ids are any JSON string or number; two
// ids are the same when their text is (7 and "7").

// OutsiderFormat is the version tag of the outsider trace format.
const OutsiderFormat = "markerwave-outsider/1"

// ObsID is an identifier chosen by the implementation: a snapshot's or a
// message's, written as a JSON string or number and compared by its text
// (the number 7 and the string "7" are one id). 0 and "" are ids like
// any other; a missing id is a nil *ObsID.
type ObsID string

// UnmarshalJSON reads a JSON string or number; anything else is an error.
func (id *ObsID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ObsID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil || len(b) == 0 || b[0] == 'n' {
		// A type error, so that encoding/json names the field's path.
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[ObsID]()}
	}
	*id = ObsID(n.String())
	return nil
}

// JSONKind names, for DecodeStrict's errors, what an ObsID is read from.
func (ObsID) JSONKind() string { return "a string or a number" }

// jsonValueKind names the kind of JSON value b.
func jsonValueKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '[':
		return "array"
	case b[0] == '{':
		return "object"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	case b[0] == 'n':
		return "null"
	}
	return truncateJSON(b)
}

// MarshalJSON writes the id as a JSON number when its text is a
// canonical integer, else as a string.
func (id ObsID) MarshalJSON() ([]byte, error) {
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil && strconv.FormatInt(n, 10) == string(id) {
		return []byte(string(id)), nil
	}
	return json.Marshal(string(id))
}

// String renders the id as the implementation wrote it: a number bare,
// a string quoted.
func (id ObsID) String() string {
	b, _ := id.MarshalJSON()
	return string(b)
}

// ObsKind is the kind of an observation.
type ObsKind string

// The observations a node logs.
const (
	// ObsSend: the node sent an application message (To, Amount, and
	// optionally ID, Payload, Seq).
	ObsSend ObsKind = "send"
	// ObsRecv: the node received (delivered to the application) a
	// message (From, optionally ID, Amount, Payload, Seq).
	ObsRecv ObsKind = "recv"
	// ObsMarkerSend: the node sent snapshot Snap's marker on <<node, To>>.
	ObsMarkerSend ObsKind = "marker_send"
	// ObsMarkerRecv: the node received snapshot Snap's marker from From
	// (optionally First).
	ObsMarkerRecv ObsKind = "marker_recv"
	// ObsRecord: the node recorded its local state for snapshot Snap
	// (optionally State, the state it recorded).
	ObsRecord ObsKind = "record"
	// ObsSuspect, ObsUnsuspect: the node's failure detector suspects
	// Peer, or withdraws the suspicion (tla/ChandyLamportFaults.tla).
	ObsSuspect   ObsKind = "suspect"
	ObsUnsuspect ObsKind = "unsuspect"
	// ObsAbort: the node aborted snapshot Snap for Peer's suspicion.
	ObsAbort ObsKind = "abort"
	// ObsMarkerDrop: the node dropped the aborted snapshot Snap's marker
	// from From.
	ObsMarkerDrop ObsKind = "marker_drop"
)

// Valid reports whether k is one of the observations above.
func (k ObsKind) Valid() bool {
	switch k {
	case ObsSend, ObsRecv, ObsMarkerSend, ObsMarkerRecv, ObsRecord, ObsSuspect, ObsUnsuspect, ObsAbort, ObsMarkerDrop:
		return true
	}
	return false
}

// OutsiderHeader opens an outsider trace file.
type OutsiderHeader struct {
	Format string `json:"format"` // OutsiderFormat
	// Run names the run; logs naming different runs are never merged
	// (optional: logs without it are told apart by their constants).
	Run string `json:"run,omitempty"`
	// Node is the process whose own log this is; empty for a file whose
	// events each name their node.
	Node     ProcID           `json:"node,omitempty"`
	Topology *Topology        `json:"topology"`
	InitBal  map[ProcID]int64 `json:"init_bal"`
	// Budget is optional: each process's number of sends by default.
	Budget map[ProcID]int `json:"budget,omitempty"`
	// Snaps is optional: snapshot id -> initiator; by default the node
	// that records a snapshot without having received its marker.
	Snaps map[ObsID]ProcID `json:"snaps,omitempty"`
	// Drained claims the run ended with every channel empty.
	Drained bool   `json:"drained,omitempty"`
	Source  string `json:"source,omitempty"`
	Note    string `json:"note,omitempty"`
	// RestoredFrom is, in one node's log of a restored incarnation, the
	// snapshot it was restored from.
	RestoredFrom *ObsID `json:"restored_from,omitempty"`
}

// ObsState is a node's local state in the application's terms: its
// balance, and optionally its counters (how many sends it made, how many
// messages it received), which are derived from the log when missing.
type ObsState struct {
	Bal  *int64 `json:"bal"`
	Sent *int   `json:"sent,omitempty"`
	Rcvd *int   `json:"rcvd,omitempty"`
}

// OutsiderEvent is one observation of one node. The fields each kind
// has are listed at ObsKind; Step, Seq, First, After and VC are optional
// everywhere and checked when given.
type OutsiderEvent struct {
	Node ProcID  `json:"node,omitempty"`
	Ev   ObsKind `json:"ev"`
	// Step numbers the node's observations from 1 (optional: the line
	// order is the step order). The reader refuses a 0 given (min) and
	// bounds it, as every count of the format, at 2^63-1.
	Step    uint64          `json:"step,omitempty" min:"1"`
	To      ProcID          `json:"to,omitempty"`
	From    ProcID          `json:"from,omitempty"`
	ID      *ObsID          `json:"id,omitempty"`
	Amount  *int64          `json:"amount,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Snap    *ObsID          `json:"snap,omitempty"`
	Peer    ProcID          `json:"peer,omitempty"`
	State   *ObsState       `json:"state,omitempty"`
	// Seq is the message's number on its channel, from 1 in send order
	// (a 0 given is refused, as for Step).
	Seq uint64 `json:"seq,omitempty" min:"1"`
	// First says a marker_recv is the node's first marker of Snap.
	First *bool `json:"first,omitempty"`
	// After is the node's state after the observation.
	After *ObsState `json:"after,omitempty"`
	// VC is the node's vector clock after the observation, indexed like
	// the topology's procs.
	VC []uint64 `json:"vc,omitempty"`
}

// ObsChan is what a snapshot recorded of one channel: its messages by
// the sender's ids, or by amount where the implementation has no ids,
// and optionally the cut counts (Sent: how many messages the sender had
// sent on it when it recorded; Got: how many the receiver had received).
type ObsChan struct {
	IDs     []ObsID `json:"ids,omitempty"`
	Amounts []int64 `json:"amounts,omitempty"`
	Sent    *uint64 `json:"sent,omitempty"`
	Got     *uint64 `json:"got,omitempty"`
}

// OutsiderSnapshot is a snapshot as the implementation reported it, or
// one node's part of it: the recorded local states of the nodes in
// Procs, and what it recorded of the channels in Chans ("FROM->TO"). A
// channel into a node of Procs that Chans leaves out recorded nothing.
type OutsiderSnapshot struct {
	Snap      *ObsID              `json:"snap"`
	Initiator ProcID              `json:"initiator,omitempty"`
	Procs     map[ProcID]ObsState `json:"procs,omitempty"`
	Chans     map[string]ObsChan  `json:"chans,omitempty"`
}

// OutsiderRestore separates two incarnations in one log: the system
// restarted from snapshot Snap.
type OutsiderRestore struct {
	Snap *ObsID `json:"snap"`
}

// OutsiderLog is one outsider trace file as read.
type OutsiderLog struct {
	Header    OutsiderHeader
	Events    []OutsiderEvent
	Snapshots []OutsiderSnapshot
	// Restores[i] is the index in Events of the first event after the
	// i-th restore line, with its snapshot.
	Restores []OutsiderRestoreAt
	// Lines numbers the lines (from 1) of the events and snapshots.
	EventLines, SnapshotLines []int
}

// OutsiderRestoreAt is a restore line and where it stands.
type OutsiderRestoreAt struct {
	Snap ObsID
	At   int
	Line int
}

// IsOutsiderTrace reports whether line (a trace's first non-blank line)
// is an outsider header: one naming the outsider format, of this version
// or another ("markerwave-outsider/2"), which ReadOutsider then refuses
// for its version, so that such a log is not read as a trace of another
// format and refused for a field that format does not have.
func IsOutsiderTrace(line []byte) bool {
	var h struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(line, &h) == nil && strings.HasPrefix(h.Format, outsiderFamily)
}

// outsiderFamily begins every version's tag of the outsider format.
const outsiderFamily = "markerwave-outsider/"
