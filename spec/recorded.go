package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// RecordedSnapshot is what the implementation reported for one snapshot:
// its id and initiator, every process's recorded local state and every
// channel's recorded application messages (a channel left out recorded
// none). A trace carries one per line, {"recorded": {...}}, in the form
//
//	{"snap": 1, "initiator": "P1",
//	 "procs": {"P1": {"bal": 70, "sent": 1, "rcvd": 0}, ...},
//	 "chans": {"P1->P2": [{"amt": 30, "seq": 1}], "P2->P1": [], ...}}
type RecordedSnapshot struct {
	Snap      SnapID
	Initiator ProcID
	Procs     map[ProcID]LocalState
	Chans     map[Channel][]AppMsg
}

// NewRecordedSnapshot is snapshot s, initiated by initiator, that recorded
// g (copied).
func NewRecordedSnapshot(s SnapID, initiator ProcID, g GlobalState) RecordedSnapshot {
	c := g.Clone()
	return RecordedSnapshot{Snap: s, Initiator: initiator, Procs: c.Procs, Chans: c.Chans}
}

// State is the recorded global state (a copy).
func (r RecordedSnapshot) State() GlobalState {
	return GlobalState{Procs: r.Procs, Chans: r.Chans}.Clone()
}

// Validate checks r against the topology: a snapshot id, a known
// initiator, a state for every process and no other, known channels.
func (r RecordedSnapshot) Validate(t *Topology) error {
	if r.Snap == 0 {
		return fmt.Errorf("snapshot id 0")
	}
	if !t.Has(r.Initiator) {
		return fmt.Errorf("snapshot %d: unknown initiator %q", r.Snap, string(r.Initiator))
	}
	for p := range r.Procs {
		if !t.Has(p) {
			return fmt.Errorf("snapshot %d: unknown process %q", r.Snap, string(p))
		}
	}
	for _, p := range t.Procs {
		if _, ok := r.Procs[p]; !ok {
			return fmt.Errorf("snapshot %d: no recorded state for %s", r.Snap, string(p))
		}
	}
	var bad []string
	for c := range r.Chans {
		if !t.HasChan(c) {
			bad = append(bad, c.String())
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("snapshot %d: unknown channel %s", r.Snap, bad[0])
	}
	return nil
}

// recordedJSON is RecordedSnapshot's JSON form: channels keyed "P1->P2".
type recordedJSON struct {
	Snap      SnapID                `json:"snap"`
	Initiator ProcID                `json:"initiator"`
	Procs     map[ProcID]LocalState `json:"procs"`
	Chans     map[string][]AppMsg   `json:"chans"`
}

// MarshalJSON writes the form above; an empty channel as []. An encoder
// must not escape HTML for the keys to read "P1->P2" (WriteTrace does not).
func (r RecordedSnapshot) MarshalJSON() ([]byte, error) {
	j := recordedJSON{Snap: r.Snap, Initiator: r.Initiator, Procs: r.Procs, Chans: make(map[string][]AppMsg, len(r.Chans))}
	if j.Procs == nil {
		j.Procs = map[ProcID]LocalState{}
	}
	for c, ms := range r.Chans {
		if ms == nil {
			ms = []AppMsg{}
		}
		j.Chans[c.String()] = ms
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "P1->P2", not "P1-\u003eP2"
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads the form above strictly: unknown fields are errors,
// and so is a channel key not of the form "FROM->TO".
func (r *RecordedSnapshot) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j recordedJSON
	if err := dec.Decode(&j); err != nil {
		return err
	}
	out := RecordedSnapshot{Snap: j.Snap, Initiator: j.Initiator, Procs: j.Procs, Chans: make(map[Channel][]AppMsg, len(j.Chans))}
	if out.Procs == nil {
		out.Procs = map[ProcID]LocalState{}
	}
	for k, ms := range j.Chans {
		from, to, ok := strings.Cut(k, "->")
		if !ok || from == "" || to == "" {
			return fmt.Errorf("channel key %q: want \"FROM->TO\"", k)
		}
		out.Chans[Channel{From: ProcID(from), To: ProcID(to)}] = ms
	}
	*r = out
	return nil
}
