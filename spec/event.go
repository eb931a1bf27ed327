package spec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

// Action names a step of the algorithm; each is a TLA+ action of
// tla/ChandyLamport.tla with the same name.
type Action string

const (
	// SendApp(p, q, a): p sends amount a to q on channel <<p, q>>.
	SendApp Action = "SendApp"
	// RecvApp(p, q): q receives the application message at the head of <<p, q>>.
	RecvApp Action = "RecvApp"
	// Initiate(s): the initiator of snapshot s records its state and sends
	// markers on all its outgoing channels (the Initiator Rule).
	Initiate Action = "Initiate"
	// RecvMarker(p, q): q receives the marker at the head of <<p, q>> (the
	// Receiving Rule, both cases).
	RecvMarker Action = "RecvMarker"
)

// The failure handling of tla/ChandyLamportFaults.tla, as one node takes
// it (line numbers refer to that module). Peer names the process the
// step is about.
const (
	// Suspect(q): Proc's failure detector suspects Peer: Detect(q) when
	// Peer crashed, FalseSuspect(q) when it did not (lines 110-124).
	// From then on Proc sends Peer no transfer (SendAppF, line 66).
	Suspect Action = "Suspect"
	// Unsuspect(q): Proc heard from Peer again and withdraws its
	// suspicion. The spec's suspicions are permanent; a real detector's
	// are not, and withdrawing one only lets later sends and snapshots
	// through.
	Unsuspect Action = "Unsuspect"
	// Abort(s, q): Proc aborts snapshot Snap, Peer's suspicion the cause
	// (lines 132-138): Proc's recording of Snap is released and Snap's
	// markers are dropped from now on.
	Abort Action = "Abort"
	// DropMarker(p, q): q drops the marker of the aborted snapshot Snap
	// at the head of <<p, q>> (lines 90-97).
	DropMarker Action = "DropMarker"
)

// Valid reports whether a is one of the spec's actions (those of
// tla/ChandyLamport.tla or, Fault, of tla/ChandyLamportFaults.tla).
func (a Action) Valid() bool {
	switch a {
	case SendApp, RecvApp, Initiate, RecvMarker:
		return true
	}
	return a.Fault()
}

// Fault reports whether a is an action of the failure handling
// (tla/ChandyLamportFaults.tla) rather than of the algorithm itself.
func (a Action) Fault() bool {
	switch a {
	case Suspect, Unsuspect, Abort, DropMarker:
		return true
	}
	return false
}

// Event is one step of one process, in the spec's vocabulary. Channel
// actions name the channel <<From, To>>; Proc is the process that took the
// step (From for SendApp, To for receives, the initiator for Initiate).
type Event struct {
	Proc   ProcID `json:"proc"`
	Seq    uint64 `json:"seq"` // per-process, from 1, no gaps
	Action Action `json:"action"`
	From   ProcID `json:"from,omitempty"`
	To     ProcID `json:"to,omitempty"`
	Snap   SnapID `json:"snap,omitempty"`  // Initiate and RecvMarker
	Amount int64  `json:"amount"`          // SendApp and RecvApp
	Msg    uint64 `json:"msg,omitempty"`   // SendApp and RecvApp: the message's seq on its channel
	First  bool   `json:"first,omitempty"` // RecvMarker: the first marker of Snap at Proc (case 1)
	// Peer is the process suspected (Suspect, Unsuspect) or whose
	// suspicion caused the abort (Abort).
	Peer ProcID `json:"peer,omitempty"`
	// Payload is the application's own encoding of the message, if any.
	Payload json.RawMessage `json:"payload,omitempty"`
	// After is the abstraction of Proc's state after the step.
	After LocalState `json:"after"`
	// VC is Proc's vector clock after the step, indexed like the trace
	// header's Procs. Optional: a trace whose order is already causal needs
	// none (an outside implementation may leave it out); merging per-node
	// logs (MergeCausal) and telling an incomplete trace need them.
	VC []uint64 `json:"vc,omitempty"`
}

// Chan is the event's channel, for channel actions.
func (e Event) Chan() Channel { return Channel{From: e.From, To: e.To} }

// String renders the event as its TLA+ action, e.g. "RecvMarker(P1, P2) [snap 1]".
func (e Event) String() string {
	switch e.Action {
	case SendApp:
		return fmt.Sprintf("SendApp(%s, %s, %d) #%d", string(e.From), string(e.To), e.Amount, e.Msg)
	case RecvApp:
		return fmt.Sprintf("RecvApp(%s, %s) %d#%d", string(e.From), string(e.To), e.Amount, e.Msg)
	case Initiate:
		return fmt.Sprintf("Initiate(%d) at %s", e.Snap, string(e.Proc))
	case RecvMarker:
		return fmt.Sprintf("RecvMarker(%s, %s) [snap %d]", string(e.From), string(e.To), e.Snap)
	case DropMarker:
		return fmt.Sprintf("DropMarker(%s, %s) [snap %d]", string(e.From), string(e.To), e.Snap)
	case Suspect, Unsuspect:
		return fmt.Sprintf("%s(%s) at %s", string(e.Action), string(e.Peer), string(e.Proc))
	case Abort:
		return fmt.Sprintf("Abort(%d, %s) at %s", e.Snap, string(e.Peer), string(e.Proc))
	}
	return fmt.Sprintf("%s?", string(e.Action))
}

// Validate checks the event's fields against the topology.
func (e Event) Validate(t *Topology) error {
	if !t.Has(e.Proc) {
		return fmt.Errorf("unknown process %q", string(e.Proc))
	}
	if e.Seq == 0 {
		return fmt.Errorf("seq must be >= 1")
	}
	if err := e.validateAction(t); err != nil {
		return err
	}
	if len(e.VC) != 0 && len(e.VC) != len(t.Procs) {
		return fmt.Errorf("vector clock has %d entries, want %d (or none)", len(e.VC), len(t.Procs))
	}
	return nil
}

// validateAction checks the fields e's action has.
func (e Event) validateAction(t *Topology) error {
	switch e.Action {
	case SendApp, RecvApp, RecvMarker, DropMarker:
		return e.validateChannelStep(t)
	case Initiate:
		if e.Snap == 0 {
			return fmt.Errorf("action Initiate without a snapshot id%s", snapZero)
		}
		return nil
	case Suspect, Unsuspect, Abort:
		return e.validatePeer(t)
	}
	return fmt.Errorf("unknown action %q", string(e.Action))
}

// validateChannelStep: a step on a channel of the topology, taken by its
// sender (SendApp) or receiver, a marker's with its snapshot, a
// message's with its positive amount and seq.
func (e Event) validateChannelStep(t *Topology) error {
	c := e.Chan()
	if !t.HasChan(c) {
		return fmt.Errorf("%s on unknown channel %s", string(e.Action), c)
	}
	if owner := e.taker(); e.Proc != owner {
		return fmt.Errorf("%s on %s taken by %s, want %s", string(e.Action), c, string(e.Proc), string(owner))
	}
	return e.validateCarried()
}

// taker is the process that takes channel step e: the sender of a
// SendApp, else the receiver.
func (e Event) taker() ProcID {
	if e.Action == SendApp {
		return e.From
	}
	return e.To
}

// validateCarried checks what channel step e carries: a marker its
// snapshot, a message its positive amount and seq.
func (e Event) validateCarried() error {
	marker := e.Action == RecvMarker || e.Action == DropMarker
	if marker && e.Snap == 0 {
		return fmt.Errorf("%s without a snapshot id%s", string(e.Action), snapZero)
	}
	if !marker && (e.Msg == 0 || e.Amount <= 0) {
		return fmt.Errorf("%s needs a positive amount and message seq", string(e.Action))
	}
	return nil
}

// validatePeer: a suspicion or an abort names another process, an abort
// its snapshot.
func (e Event) validatePeer(t *Topology) error {
	if !t.Has(e.Peer) || e.Peer == e.Proc {
		return fmt.Errorf("%s names peer %q, want another process of the topology", string(e.Action), string(e.Peer))
	}
	if e.Action == Abort && e.Snap == 0 {
		return fmt.Errorf("action Abort without a snapshot id%s", snapZero)
	}
	return nil
}

// snapZero explains a missing snapshot id: in this format "snap" is
// missing or 0, and 0 means none.
const snapZero = ` (field "snap" missing or 0: ` + TraceFormat + ` numbers snapshots from 1; the outsider format, ` + OutsiderFormat + `, takes any id, 0 too)`

// Header opens a trace file: the topology, the model constants the run
// used, and what produced it.
type Header struct {
	Format   string            `json:"format"` // TraceFormat
	Topology *Topology         `json:"topology"`
	InitBal  map[ProcID]int64  `json:"init_bal"`
	Budget   map[ProcID]int    `json:"budget,omitempty"`
	Snaps    map[SnapID]ProcID `json:"snaps,omitempty"` // snapshot id -> initiator
	// Drained claims the run ended with every channel empty: every
	// initiated snapshot must then be complete.
	Drained bool   `json:"drained,omitempty"`
	Source  string `json:"source,omitempty"`
	Note    string `json:"note,omitempty"`
	// RestoredFrom is, in the log of one node of a restored run, the
	// snapshot the node was restored from (0: a fresh start). Merging
	// node logs (conformance.MergeNodeLogs) chains the incarnations by it.
	RestoredFrom SnapID `json:"restored_from,omitempty"`
}

// TraceFormat is the version tag of the JSON-lines trace format.
const TraceFormat = "markerwave-trace/3"

// Trace is a header, its events in a causally consistent order, and the
// snapshots the implementation reported recorded.
type Trace struct {
	Header Header
	Events []Event
	// Recorded lists what the implementation reported for every snapshot
	// it completed. Empty: the trace does not say, and a reader derives
	// the recorded states from the events.
	Recorded []RecordedSnapshot
	// Restores are the restarts from a snapshot, in order (see Restore);
	// empty for a run of one incarnation.
	Restores []Restore
}

// RecordedStates is t.Recorded by snapshot id; nil if t carries none.
func (t Trace) RecordedStates() map[SnapID]GlobalState {
	if len(t.Recorded) == 0 {
		return nil
	}
	out := make(map[SnapID]GlobalState, len(t.Recorded))
	for _, r := range t.Recorded {
		out[r.Snap] = r.State()
	}
	return out
}

// recordedLine is the form of a recorded-snapshot line.
type recordedLine struct {
	Recorded *RecordedSnapshot `json:"recorded"`
}

// WriteTrace writes t as JSON lines: the header, one event a line, then
// one {"recorded": ...} line per recorded snapshot.
func WriteTrace(w io.Writer, t Trace) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	h := t.Header
	h.Format = TraceFormat
	if err := enc.Encode(h); err != nil {
		return err
	}
	next := 0 // the next restore
	for i, e := range t.Events {
		var err error
		if next, err = encodeRestores(enc, t.Restores, next, i); err != nil {
			return err
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if _, err := encodeRestores(enc, t.Restores, next, math.MaxInt); err != nil {
		return err
	}
	for i := range t.Recorded {
		if err := enc.Encode(recordedLine{Recorded: &t.Recorded[i]}); err != nil {
			return err
		}
	}
	return nil
}

// encodeRestores writes the restores rs[next:] that come before event at
// (At <= at), one {"restore": ...} line each, and returns the index of the
// first one left.
func encodeRestores(enc *json.Encoder, rs []Restore, next, at int) (int, error) {
	for ; next < len(rs) && rs[next].At <= at; next++ {
		if err := enc.Encode(restoreLine{Restore: &rs[next]}); err != nil {
			return next, err
		}
	}
	return next, nil
}

// MaxTraceLine bounds one line of a trace file.
const MaxTraceLine = 16 << 20

// TraceLines numbers the lines (from 1) ReadTraceLines read a trace's
// events, recorded snapshots and restores from: Events[i] is the line of
// event i, Recorded[i] that of recorded snapshot i, Restores[i] that of
// restore i.
type TraceLines struct {
	Events   []int
	Recorded []int
	Restores []int
}

// WriteTraceFile writes t to the file at path (created or truncated) in
// the form WriteTrace writes.
func WriteTraceFile(path string, t Trace) error {
	var b bytes.Buffer
	if err := WriteTrace(&b, t); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadTrace reads a JSON-lines trace strictly (see ReadTraceLines).
func ReadTrace(r io.Reader) (Trace, error) {
	t, _, err := ReadTraceLines(r)
	return t, err
}

// ReadTraceLines reads a JSON-lines trace strictly and numbers its lines.
// The first non-blank line is the header; every later one is an event or,
// if its first key is "recorded", a recorded snapshot, or if it is
// "restore", a restore (incarnations 2, 3, ... in order). Unknown fields are
// errors; events and recorded snapshots are validated against the
// topology, recorded snapshot ids must be distinct and their initiators
// agree with the header's snaps. Errors name the line.
func ReadTraceLines(r io.Reader) (Trace, TraceLines, error) {
	return ReadTraceLinesProgress(r, nil)
}

// ReadTraceLinesProgress is ReadTraceLines calling progress, if not nil,
// with the number of events read so far after every line: the caller
// reports from it as seldom as it likes (markerwave audit --progress,
// every 100,000 events).
func ReadTraceLinesProgress(r io.Reader, progress func(events int)) (Trace, TraceLines, error) {
	tr := &traceReader{seen: map[SnapID]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxTraceLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := tr.readLine(b, line); err != nil {
			return tr.t, tr.lines, fmt.Errorf("trace line %d: %w", line, err)
		}
		if progress != nil {
			progress(len(tr.t.Events))
		}
	}
	if err := sc.Err(); err != nil {
		return tr.t, tr.lines, scanErr(err, line+1)
	}
	if tr.t.Header.Topology == nil {
		return tr.t, tr.lines, fmt.Errorf("trace: empty, no header line")
	}
	return tr.t, tr.lines, nil
}

// traceReader is a trace being read: what it read so far, the line of
// each, and the line each recorded snapshot's id was first seen on.
type traceReader struct {
	t     Trace
	lines TraceLines
	seen  map[SnapID]int
}

// readLine reads line b, number line: the header first, then a restore,
// a recorded snapshot or an event.
func (tr *traceReader) readLine(b []byte, line int) error {
	switch {
	case tr.t.Header.Topology == nil:
		return tr.readHeader(b)
	case isRestoreLine(b):
		r, err := readRestoreLine(b, tr.t.Restores, len(tr.t.Events))
		if err != nil {
			return err
		}
		tr.t.Restores = append(tr.t.Restores, r)
		tr.lines.Restores = append(tr.lines.Restores, line)
		return nil
	case isRecordedLine(b):
		return tr.readRecorded(b, line)
	}
	return tr.readEvent(b, line)
}

// readHeader reads the header: this format, with a topology.
func (tr *traceReader) readHeader(b []byte) error {
	h := &tr.t.Header
	if err := checkFormat(b, TraceFormat); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := decodeLine(b, h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if h.Format != TraceFormat {
		return fmt.Errorf("format %q, want %q", h.Format, TraceFormat)
	}
	if h.Topology == nil {
		return fmt.Errorf("header has no topology")
	}
	return nil
}

// readRecorded reads a recorded snapshot: valid for the topology, its id
// not seen before, its initiator the header's.
func (tr *traceReader) readRecorded(b []byte, line int) error {
	var rl recordedLine
	if err := decodeLine(b, &rl); err != nil {
		return fmt.Errorf("recorded snapshot: %w", err)
	}
	if rl.Recorded == nil {
		return fmt.Errorf("recorded snapshot is null")
	}
	rs := *rl.Recorded
	if err := rs.Validate(tr.t.Header.Topology); err != nil {
		return fmt.Errorf("recorded snapshot: %w", err)
	}
	if prev, dup := tr.seen[rs.Snap]; dup {
		return fmt.Errorf("snapshot %d recorded twice (also line %d)", rs.Snap, prev)
	}
	if p, ok := tr.t.Header.Snaps[rs.Snap]; ok && p != rs.Initiator {
		return fmt.Errorf("snapshot %d recorded with initiator %s, the header's snaps say %s", rs.Snap, string(rs.Initiator), string(p))
	}
	tr.seen[rs.Snap] = line
	tr.t.Recorded = append(tr.t.Recorded, rs)
	tr.lines.Recorded = append(tr.lines.Recorded, line)
	return nil
}

// readEvent reads an event, valid for the topology.
func (tr *traceReader) readEvent(b []byte, line int) error {
	var e Event
	if err := decodeLine(b, &e); err != nil {
		return err
	}
	if err := e.Validate(tr.t.Header.Topology); err != nil {
		return err
	}
	tr.t.Events = append(tr.t.Events, e)
	tr.lines.Events = append(tr.lines.Events, line)
	return nil
}

// decodeLine decodes one JSON value, b with no surrounding space, into v
// strictly: unknown fields and trailing data are errors.
func decodeLine(b []byte, v any) error { return DecodeStrict(b, v) }

// isRecordedLine reports whether the object on line b (trimmed) has
// "recorded" as its first key. Other keys on such a line, or "recorded"
// elsewhere on an event line, are unknown fields to the decoder.
func isRecordedLine(b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(b[1:], " \t\r\n"), []byte(`"recorded"`))
}
