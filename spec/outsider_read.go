package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// ReadOutsider reads an outsider trace strictly: unknown fields, a key
// given twice in one object or in another case than its field's
// ("Amount"), text that is not UTF-8, a missing required field and a field the observation's
// kind does not have are errors, each naming its line and its JSON path
// ("trace line 4: field \"amount\": missing: a send needs the amount it
// transfers").
func ReadOutsider(r io.Reader) (OutsiderLog, error) {
	or := &outsiderReader{}
	err := readTraceFile(r, or.readHeader, or.readLine)
	return or.log, err
}

// outsiderReader is an outsider trace being read.
type outsiderReader struct {
	log OutsiderLog
}

// readLine reads line b after the header: a snapshot, a restore or an
// event.
func (or *outsiderReader) readLine(b []byte, line int) error {
	if err := notAnObject(b); err != nil {
		return err
	}
	switch {
	case hasFirstKey(b, "snapshot"):
		return or.readSnapshot(b, line)
	case hasFirstKey(b, "restore"):
		return or.readRestore(b, line)
	}
	return or.readEvent(b, line)
}

// hasFirstKey reports whether the object on line b (trimmed) has key as
// its first key.
func hasFirstKey(b []byte, key string) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	return bytes.HasPrefix(bytes.TrimLeft(b[1:], " \t\r\n"), []byte(`"`+key+`"`))
}

// notAnObject refuses line b (trimmed) when it is not a JSON object:
// encoding/json reads null into a struct as an object with every field
// missing, which would be reported as the first field missing.
func notAnObject(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		return nil
	}
	kind := truncateJSON(b)
	switch {
	case string(b) == "null":
		kind = "null"
	case b[0] == '[':
		kind = "an array"
	case b[0] == '"':
		kind = "a string"
	}
	return fmt.Errorf("the line is %s, not a JSON object", kind)
}

// decodeOutsider decodes line b into v as DecodeStrict does, and
// refuses counts out of the outsider format's range (checkKeys with
// counts), which its schema bounds below the uint64s they are read into.
func decodeOutsider(b []byte, v any) error {
	if err := checkKeys(b, reflect.TypeOf(v), true); err != nil {
		return err
	}
	return decodeJSON(b, v)
}

// readHeader reads and checks the header.
func (or *outsiderReader) readHeader(b []byte) error {
	h := &or.log.Header
	if err := notAnObject(b); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := checkFormat(b, OutsiderFormat); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := decodeOutsider(b, h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := h.Validate(); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	return nil
}

// Validate checks the header's required fields: this format, a
// topology, every process's initial balance, a known node and known
// initiators.
func (h OutsiderHeader) Validate() error {
	switch {
	case h.Format != OutsiderFormat:
		return fmt.Errorf("field \"format\": %q, want %q", h.Format, OutsiderFormat)
	case h.Topology == nil:
		return fmt.Errorf("field \"topology\": missing")
	case h.InitBal == nil:
		return fmt.Errorf("field \"init_bal\": missing: every process's initial balance")
	case h.Node != "" && !h.Topology.Has(h.Node):
		return fmt.Errorf("field \"node\": %q is no process of the topology", string(h.Node))
	}
	if err := h.validateInitBal(); err != nil {
		return err
	}
	return h.validateInitiators()
}

// validateInitiators checks that every initiator snaps names is a
// process of the topology.
func (h OutsiderHeader) validateInitiators() error {
	for s, p := range h.Snaps {
		if !h.Topology.Has(p) {
			return fmt.Errorf("field \"snaps.%s\": initiator %q is no process of the topology", string(s), string(p))
		}
	}
	return nil
}

// validateInitBal checks that init_bal has every process of the
// topology and no other.
func (h OutsiderHeader) validateInitBal() error {
	for _, p := range h.Topology.Procs {
		if _, ok := h.InitBal[p]; !ok {
			return fmt.Errorf("field \"init_bal.%s\": missing: every process of the topology needs its initial balance", string(p))
		}
	}
	for p := range h.InitBal {
		if !h.Topology.Has(p) {
			return fmt.Errorf("field \"init_bal.%s\": no process of the topology", string(p))
		}
	}
	return nil
}

// ownNode sets e's node to the header's when e names none; the two must
// agree when both name one, and one of them must.
func (e *OutsiderEvent) ownNode(h OutsiderHeader) error {
	switch {
	case h.Node != "" && e.Node != "" && e.Node != h.Node:
		return fmt.Errorf("field \"node\": %s, but the header says this is %s's log", string(e.Node), string(h.Node))
	case e.Node == "" && h.Node == "":
		return fmt.Errorf("field \"node\": missing: the header names no node, so every event must")
	case e.Node == "":
		e.Node = h.Node
	}
	return nil
}

// obsFieldSet is the fields one kind of observation requires and those
// it may have.
type obsFieldSet struct{ required, optional []string }

// readEvent reads and checks an observation.
func (or *outsiderReader) readEvent(b []byte, line int) error {
	var e OutsiderEvent
	if err := decodeOutsider(b, &e); err != nil {
		return err
	}
	h := or.log.Header
	if err := e.ownNode(h); err != nil {
		return err
	}
	if err := e.Validate(h.Topology); err != nil {
		return err
	}
	or.log.Events = append(or.log.Events, e)
	or.log.EventLines = append(or.log.EventLines, line)
	return nil
}

// obsFields says which fields each kind of observation has: those it
// needs (required) and those it may have (optional), besides the ones
// every kind may have (node, ev, step, after, vc).
var obsFields = map[ObsKind]obsFieldSet{
	ObsSend:       {[]string{"to", "amount"}, []string{"id", "payload", "seq"}},
	ObsRecv:       {[]string{"from"}, []string{"id", "amount", "payload", "seq"}},
	ObsMarkerSend: {[]string{"to", "snap"}, nil},
	ObsMarkerRecv: {[]string{"from", "snap"}, []string{"first"}},
	ObsRecord:     {[]string{"snap"}, []string{"state"}},
	ObsSuspect:    {[]string{"peer"}, nil},
	ObsUnsuspect:  {[]string{"peer"}, nil},
	ObsAbort:      {[]string{"snap", "peer"}, nil},
	ObsMarkerDrop: {[]string{"from", "snap"}, nil},
}

// obsWhat says, for errors, what each field is for.
var obsWhat = map[string]string{
	"to": "the peer it sent to", "from": "the peer it received from", "amount": "the amount it transfers",
	"snap": "the snapshot's id", "peer": "the process it is about",
}

// present lists the kind-specific fields e has.
func (e OutsiderEvent) present() map[string]bool {
	return map[string]bool{
		"to": e.To != "", "from": e.From != "", "id": e.ID != nil, "amount": e.Amount != nil,
		"payload": len(e.Payload) > 0, "seq": e.Seq != 0, "snap": e.Snap != nil, "peer": e.Peer != "",
		"state": e.State != nil, "first": e.First != nil,
	}
}

// Validate checks e against the topology: a known node and kind, the
// fields its kind needs and no field it does not have, known peers and
// channels, positive amounts, a clock of the topology's size.
func (e OutsiderEvent) Validate(t *Topology) error {
	if !t.Has(e.Node) {
		return fmt.Errorf("field \"node\": %q is no process of the topology", string(e.Node))
	}
	f, ok := obsFields[e.Ev]
	if !ok {
		return fmt.Errorf("field \"ev\": %q, want one of send, recv, marker_send, marker_recv, record, suspect, unsuspect, abort, marker_drop", string(e.Ev))
	}
	if err := e.validateFields(f); err != nil {
		return err
	}
	return e.validateValues(t)
}

// validateFields checks that e has every field its kind requires (f)
// and none that its kind does not have.
func (e OutsiderEvent) validateFields(f obsFieldSet) error {
	have := e.present()
	for _, k := range f.required {
		if !have[k] {
			return fmt.Errorf("field %q: missing: a %s needs %s", k, string(e.Ev), obsWhat[k])
		}
		delete(have, k)
	}
	for _, k := range f.optional {
		delete(have, k)
	}
	for _, k := range []string{"to", "from", "id", "amount", "payload", "seq", "snap", "peer", "state", "first"} {
		if have[k] {
			return fmt.Errorf("field %q: a %s has none", k, string(e.Ev))
		}
	}
	return nil
}

// validateValues checks the values of e's fields.
func (e OutsiderEvent) validateValues(t *Topology) error {
	if err := e.validatePeers(t); err != nil {
		return err
	}
	if e.Amount != nil && *e.Amount <= 0 {
		return fmt.Errorf("field \"amount\": %d, want a positive amount", *e.Amount)
	}
	if err := e.State.validate("state"); err != nil {
		return err
	}
	if err := e.After.validate("after"); err != nil {
		return err
	}
	if len(e.VC) != 0 && len(e.VC) != len(t.Procs) {
		return fmt.Errorf("field \"vc\": %d entries, want %d (one per process) or none", len(e.VC), len(t.Procs))
	}
	return nil
}

// validatePeers checks that e's channel is the topology's and its peer
// another process.
func (e OutsiderEvent) validatePeers(t *Topology) error {
	if e.To != "" && !t.HasChan(Channel{From: e.Node, To: e.To}) {
		return fmt.Errorf("field \"to\": no channel %s->%s in the topology", string(e.Node), string(e.To))
	}
	if e.From != "" && !t.HasChan(Channel{From: e.From, To: e.Node}) {
		return fmt.Errorf("field \"from\": no channel %s->%s in the topology", string(e.From), string(e.Node))
	}
	if e.Peer != "" && (!t.Has(e.Peer) || e.Peer == e.Node) {
		return fmt.Errorf("field \"peer\": %q, want another process of the topology", string(e.Peer))
	}
	return nil
}

// validate checks a state given at path: its balance is required.
func (s *ObsState) validate(path string) error {
	switch {
	case s == nil:
		return nil
	case s.Bal == nil:
		return fmt.Errorf("field %q: missing: a state needs its balance", path+".bal")
	case s.Sent != nil && *s.Sent < 0:
		return fmt.Errorf("field %q: %d, want a count >= 0", path+".sent", *s.Sent)
	case s.Rcvd != nil && *s.Rcvd < 0:
		return fmt.Errorf("field %q: %d, want a count >= 0", path+".rcvd", *s.Rcvd)
	}
	return nil
}

// readSnapshot reads a reported snapshot (or part of one).
func (or *outsiderReader) readSnapshot(b []byte, line int) error {
	var sl struct {
		Snapshot *OutsiderSnapshot `json:"snapshot"`
	}
	if err := decodeOutsider(b, &sl); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if sl.Snapshot == nil {
		return fmt.Errorf("field \"snapshot\": null")
	}
	if err := sl.Snapshot.Validate(or.log.Header.Topology); err != nil {
		return err
	}
	or.log.Snapshots = append(or.log.Snapshots, *sl.Snapshot)
	or.log.SnapshotLines = append(or.log.SnapshotLines, line)
	return nil
}

// Validate checks a reported snapshot against the topology, naming a bad
// field by its JSON path.
func (s OutsiderSnapshot) Validate(t *Topology) error {
	if s.Snap == nil {
		return fmt.Errorf("field \"snapshot.snap\": missing: the snapshot's id")
	}
	if s.Initiator != "" && !t.Has(s.Initiator) {
		return fmt.Errorf("field \"snapshot.initiator\": %q is no process of the topology", string(s.Initiator))
	}
	if err := s.validateProcs(t); err != nil {
		return err
	}
	for k, c := range s.Chans {
		if err := c.validate(t, k); err != nil {
			return err
		}
	}
	return nil
}

// validateProcs checks the snapshot's process states: each of a process
// of the topology, each with its balance.
func (s OutsiderSnapshot) validateProcs(t *Topology) error {
	for p, st := range s.Procs {
		if !t.Has(p) {
			return fmt.Errorf("field \"snapshot.procs.%s\": no process of the topology", string(p))
		}
		if err := st.validate("snapshot.procs." + string(p)); err != nil {
			return err
		}
	}
	return nil
}

// validate checks channel k's entry of a reported snapshot.
func (c ObsChan) validate(t *Topology, k string) error {
	if _, err := ParseChanKey(t, k); err != nil {
		return fmt.Errorf("field \"snapshot.chans.%s\": %w", k, err)
	}
	if len(c.IDs) > 0 && len(c.Amounts) > 0 {
		return fmt.Errorf("field \"snapshot.chans.%s\": both ids and amounts: give one", k)
	}
	for i, a := range c.Amounts {
		if a <= 0 {
			return fmt.Errorf("field \"snapshot.chans.%s.amounts[%d]\": %d, want a positive amount", k, i, a)
		}
	}
	return nil
}

// ParseChanKey reads a channel key "FROM->TO" of topology t.
func ParseChanKey(t *Topology, k string) (Channel, error) {
	from, to, ok := strings.Cut(k, "->")
	if !ok || from == "" || to == "" {
		return Channel{}, fmt.Errorf("want a channel \"FROM->TO\"")
	}
	c := Channel{From: ProcID(from), To: ProcID(to)}
	if !t.HasChan(c) {
		return c, fmt.Errorf("no channel %s in the topology", c)
	}
	return c, nil
}

// readRestore reads a restore line.
func (or *outsiderReader) readRestore(b []byte, line int) error {
	var rl struct {
		Restore *OutsiderRestore `json:"restore"`
	}
	if err := decodeOutsider(b, &rl); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if rl.Restore == nil || rl.Restore.Snap == nil {
		return fmt.Errorf("field \"restore.snap\": missing: the snapshot restored from")
	}
	or.log.Restores = append(or.log.Restores, OutsiderRestoreAt{Snap: *rl.Restore.Snap, At: len(or.log.Events), Line: line})
	return nil
}

// WriteOutsider writes l as JSON lines: the header, the events with the
// restore lines between them, then the snapshots.
func WriteOutsider(w io.Writer, l OutsiderLog) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	h := l.Header
	h.Format = OutsiderFormat
	if err := enc.Encode(h); err != nil {
		return err
	}
	next := 0
	var err error
	for i, e := range l.Events {
		if next, err = writeRestores(enc, l.Restores, next, i); err != nil {
			return err
		}
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	if _, err = writeRestores(enc, l.Restores, next, len(l.Events)); err != nil {
		return err
	}
	for i := range l.Snapshots {
		if err := enc.Encode(map[string]*OutsiderSnapshot{"snapshot": &l.Snapshots[i]}); err != nil {
			return err
		}
	}
	return nil
}

// writeRestores writes the restore lines rs[next:] that stand before
// event at, and returns the next restore to write.
func writeRestores(enc *json.Encoder, rs []OutsiderRestoreAt, next, at int) (int, error) {
	for ; next < len(rs) && rs[next].At <= at; next++ {
		snap := rs[next].Snap
		if err := enc.Encode(map[string]OutsiderRestore{"restore": {Snap: &snap}}); err != nil {
			return next, err
		}
	}
	return next, nil
}
