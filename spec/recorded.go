package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// RecordedSnapshot is what the implementation reported for one snapshot:
// its id and initiator, every process's recorded local state, every
// channel's recorded application messages (a channel left out of Chans
// recorded none) and every channel's cut seqs. A trace carries one per
// line, {"recorded": {...}}, in the form
//
//	{"snap": 1, "initiator": "P1",
//	 "procs": {"P1": {"bal": 70, "sent": 1, "rcvd": 0}, ...},
//	 "chans": {"P1->P2": {"msgs": [{"amt": 30, "seq": 1}], "sent": 1, "got": 0},
//	           "P2->P1": {"msgs": [], "sent": 0, "got": 0}, ...}}
//
// where every channel of the topology has an entry.
type RecordedSnapshot struct {
	Snap      SnapID
	Initiator ProcID
	Procs     map[ProcID]LocalState
	Chans     map[Channel][]AppMsg
	// Cut holds every channel's cut seqs; a trace must give every
	// channel's.
	Cut map[Channel]ChanCut
}

// ChanCut is where a snapshot's cut crosses channel c = <<p, q>>: Sent is
// the number of application messages p had sent on c when p recorded
// (the spec's ghost cutSent[s][c]; impl/core LocalSnapshot.NextSend-1),
// Got the number q had received on c when q recorded (Len(cutGot[s][c]);
// core ChanRecording.NextRecv-1). Restoring the snapshot resumes c at
// them: p's next send is Sent+1, q's next receive Got+1, and the channel
// holds messages Got+1 .. Sent.
type ChanCut struct {
	Sent uint64
	Got  uint64
}

func (k ChanCut) String() string { return fmt.Sprintf("sent %d, got %d", k.Sent, k.Got) }

// NewRecordedSnapshot is snapshot s, initiated by initiator, that recorded
// g with cut seqs cut (both copied).
func NewRecordedSnapshot(s SnapID, initiator ProcID, g GlobalState, cut map[Channel]ChanCut) RecordedSnapshot {
	c := g.Clone()
	k := make(map[Channel]ChanCut, len(cut))
	for ch, v := range cut {
		k[ch] = v
	}
	return RecordedSnapshot{Snap: s, Initiator: initiator, Procs: c.Procs, Chans: c.Chans, Cut: k}
}

// CutProblems lists, by channel in topology order, where r's record
// breaks the cut properties on its own (ChanCut.Check): a channel whose
// receiver got more than its sender sent (an orphan: ConsistentCut), and
// a channel whose recorded messages are not numbers Got+1 .. Sent in
// order (ExactChannelState). A channel with no cut seqs is not checked.
func (r RecordedSnapshot) CutProblems(t *Topology) (orphans, inexact []string) {
	for _, c := range t.Chans {
		k, ok := r.Cut[c]
		if !ok {
			continue
		}
		o, x := k.Check(c, r.Chans[c])
		if o != nil {
			orphans = append(orphans, fmt.Sprintf("%s (cut: %s): %v", c, k, o))
		}
		if x != nil {
			inexact = append(inexact, fmt.Sprintf("%s recorded %s (cut: %s): %v", c, FormatMsgs(r.Chans[c]), k, x))
		}
	}
	return orphans, inexact
}

// State is the recorded global state (a copy).
func (r RecordedSnapshot) State() GlobalState {
	return GlobalState{Procs: r.Procs, Chans: r.Chans}.Clone()
}

// Validate checks r against the topology: a snapshot id, a known
// initiator, a state for every process and no other, known channels, cut
// seqs for every channel. Whether the messages agree with the cut seqs
// is a property of the run, not of the form (CutProblems).
func (r RecordedSnapshot) Validate(t *Topology) error {
	if r.Snap == 0 {
		return fmt.Errorf("snapshot id 0")
	}
	if !t.Has(r.Initiator) {
		return fmt.Errorf("snapshot %d: unknown initiator %q", r.Snap, string(r.Initiator))
	}
	if err := r.validateProcs(t); err != nil {
		return err
	}
	return r.validateChans(t)
}

// validateProcs checks that r holds a state for every process of t and
// for no other.
func (r RecordedSnapshot) validateProcs(t *Topology) error {
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
	return nil
}

// validateChans checks that every channel r names is one of t's (the
// first unknown one in name order is reported) and that every channel of
// t has its cut seqs.
func (r RecordedSnapshot) validateChans(t *Topology) error {
	var bad []string
	for _, c := range r.channels() {
		if !t.HasChan(c) {
			bad = append(bad, c.String())
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("snapshot %d: unknown channel %s", r.Snap, bad[0])
	}
	for _, c := range t.Chans {
		if _, ok := r.Cut[c]; !ok {
			return fmt.Errorf("snapshot %d: channel %s has no cut seqs (sent, got)", r.Snap, c)
		}
	}
	return nil
}

// channels lists the channels r names in Chans or Cut, each once, in no
// particular order.
func (r RecordedSnapshot) channels() []Channel {
	cs := make([]Channel, 0, len(r.Cut))
	for c := range r.Chans {
		cs = append(cs, c)
	}
	for c := range r.Cut {
		if _, dup := r.Chans[c]; !dup {
			cs = append(cs, c)
		}
	}
	return cs
}

// recordedJSON is RecordedSnapshot's JSON form: channels keyed "P1->P2".
type recordedJSON struct {
	Snap      SnapID                `json:"snap"`
	Initiator ProcID                `json:"initiator"`
	Procs     map[ProcID]LocalState `json:"procs"`
	Chans     map[string]chanJSON   `json:"chans"`
}

// chanJSON is one channel of a recorded snapshot as read: its recorded
// messages and cut seqs. Sent and Got are pointers so that a missing one
// is an error, and signed so that a negative one is reported as such.
type chanJSON struct {
	Msgs []AppMsg `json:"msgs"`
	Sent *int64   `json:"sent"`
	Got  *int64   `json:"got"`
}

// chanOut is one channel of a recorded snapshot as written.
type chanOut struct {
	Msgs []AppMsg `json:"msgs"`
	Sent *uint64  `json:"sent,omitempty"`
	Got  *uint64  `json:"got,omitempty"`
}

// recordedOut is recordedJSON as written.
type recordedOut struct {
	Snap      SnapID                `json:"snap"`
	Initiator ProcID                `json:"initiator"`
	Procs     map[ProcID]LocalState `json:"procs"`
	Chans     map[string]chanOut    `json:"chans"`
}

// MarshalJSON writes the form above, every channel in Chans or Cut; an
// empty channel's messages as []. An encoder must not escape HTML for the
// keys to read "P1->P2" (WriteTrace does not).
func (r RecordedSnapshot) MarshalJSON() ([]byte, error) {
	j := recordedOut{Snap: r.Snap, Initiator: r.Initiator, Procs: r.Procs, Chans: make(map[string]chanOut, len(r.Chans))}
	if j.Procs == nil {
		j.Procs = map[ProcID]LocalState{}
	}
	for _, c := range r.channels() {
		j.Chans[c.String()] = r.chanOut(c)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "P1->P2", not "P1-\u003eP2"
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// chanOut is channel c of r as written: its messages ([] when none) and
// its cut seqs when r has them.
func (r RecordedSnapshot) chanOut(c Channel) chanOut {
	cj := chanOut{Msgs: r.Chans[c]}
	if cj.Msgs == nil {
		cj.Msgs = []AppMsg{}
	}
	if k, ok := r.Cut[c]; ok {
		cj.Sent, cj.Got = &k.Sent, &k.Got
	}
	return cj
}

// UnmarshalJSON reads the form above strictly: unknown fields are errors,
// and so are a channel key not of the form "FROM->TO", a channel without
// both cut seqs, and a negative one.
func (r *RecordedSnapshot) UnmarshalJSON(b []byte) error {
	var j recordedJSON
	if err := DecodeStrict(b, &j); err != nil {
		return err
	}
	out := RecordedSnapshot{Snap: j.Snap, Initiator: j.Initiator, Procs: j.Procs,
		Chans: make(map[Channel][]AppMsg, len(j.Chans)), Cut: make(map[Channel]ChanCut, len(j.Chans))}
	if out.Procs == nil {
		out.Procs = map[ProcID]LocalState{}
	}
	keys := make([]string, 0, len(j.Chans))
	for k := range j.Chans {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c, cut, err := j.Chans[k].read(k)
		if err != nil {
			return err
		}
		out.Chans[c] = j.Chans[k].Msgs
		out.Cut[c] = cut
	}
	*r = out
	return nil
}

// read checks channel key k ("FROM->TO") and cj's cut seqs (both given,
// neither negative) and returns the channel and its cut.
func (cj chanJSON) read(k string) (Channel, ChanCut, error) {
	from, to, ok := strings.Cut(k, "->")
	if !ok || from == "" || to == "" {
		return Channel{}, ChanCut{}, fmt.Errorf("channel key %q: want \"FROM->TO\"", k)
	}
	switch {
	case cj.Sent == nil || cj.Got == nil:
		return Channel{}, ChanCut{}, fmt.Errorf("channel %s: want its cut seqs \"sent\" and \"got\"", k)
	case *cj.Sent < 0 || *cj.Got < 0:
		return Channel{}, ChanCut{}, fmt.Errorf("channel %s: negative cut seq (sent %d, got %d)", k, *cj.Sent, *cj.Got)
	}
	return Channel{From: ProcID(from), To: ProcID(to)}, ChanCut{Sent: uint64(*cj.Sent), Got: uint64(*cj.Got)}, nil
}
