// Package export turns a spec.Trace into views of the run: a space-time
// diagram (SVG or HTML) with every snapshot's cut, a ShiViz log, and a TLC
// trace-validation model (MCTrace.tla/.cfg for tla/TraceChandyLamport.tla)
// that asks TLC whether the run is a behaviour of tla/ChandyLamport.tla.
//
// The exports read only the trace. They do not trust it: Analyze reports
// orphan and missing messages instead of assuming the run was correct, and
// TLC is the judge of whether it was. When the trace carries the
// snapshots the implementation reported (spec.Trace.Recorded), a
// snapshot's channel states are the reported ones, checked against the
// cut the events draw: a message in flight across the cut and not
// reported is missing, a reported message not in flight is spurious.
// The classification is spec's cut analysis (spec/cut.go), the one the
// audit verdict (conformance.CheckRun) reads too, so the diagram marks a
// message orphan, missing or spurious exactly when the verdict names it.
package export

import (
	"fmt"
	"maps"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// Status is what a message is with respect to one snapshot's cut: the
// cut analysis's spec.MsgStatus, which the verdict (conformance.CheckRun)
// reads too.
type Status = spec.MsgStatus

// The statuses, as spec defines them. When the trace carries the
// implementation's report of a snapshot (spec.Trace.Recorded), the
// recorded state is the reported one; without, the one the events imply.
const (
	Orphan   = spec.MsgOrphan
	Recorded = spec.MsgRecorded
	Missing  = spec.MsgMissing
	Spurious = spec.MsgSpurious
	Pending  = spec.MsgPending
)

// Message is one application message, matched by channel and sequence
// number. Send and Recv are event indices in the trace, -1 if absent.
type Message struct {
	Chan   spec.Channel
	Seq    uint64
	Amount int64
	Send   int
	Recv   int
	// Status maps each snapshot for which the message is notable
	// (orphan, in flight at the cut) to its status.
	Status map[spec.SnapID]Status
}

// Worst is the message's most serious status over all snapshots, and the
// snapshot it belongs to: orphan, then missing, spurious, recorded,
// pending.
func (m Message) Worst() (Status, spec.SnapID) {
	rank := map[Status]int{Orphan: 5, Missing: 4, Spurious: 3, Recorded: 2, Pending: 1}
	var best Status
	var bs spec.SnapID
	for _, s := range slices.Sorted(maps.Keys(m.Status)) {
		if st := m.Status[s]; rank[st] > rank[best] {
			best, bs = st, s
		}
	}
	return best, bs
}

// Marker is one marker of snapshot Snap on Chan: sent at the sender's
// recording event, received at a RecvMarker event; -1 if absent.
type Marker struct {
	Chan spec.Channel
	Snap spec.SnapID
	Send int
	Recv int
}

// Cut is one snapshot's cut: each process's recording point (its Initiate
// or first RecvMarker of Snap), -1 if the process never recorded.
type Cut struct {
	Snap      spec.SnapID
	Initiator spec.ProcID // "" if unknown
	Rec       map[spec.ProcID]int
	// Complete: every process recorded and every channel's marker arrived.
	Complete bool
	// Recorded is the global state the events imply the algorithm
	// recorded, if Complete: each process's state at its recording point
	// and each channel's messages received while it was recorded.
	Recorded spec.GlobalState
	// Reported is the state the implementation reported for the
	// snapshot, nil if the trace carries no report of it.
	Reported *spec.GlobalState
	// Aborted lists the Abort events of the snapshot (a run with
	// failures, tla/ChandyLamportFaults.tla): each node that aborted it,
	// and the suspected process that caused it (Event.Peer).
	Aborted []spec.Event
	// Spurious lists the recorded channel messages (reported, or, without
	// a report, the events' own) that were not in flight at the cut, in
	// channel order: orphans, messages sent after the sender's cut or
	// received before the receiver's, and messages the events never send.
	Spurious []ChanMsg
}

// ChanMsg is an application message on a channel.
type ChanMsg struct {
	Chan spec.Channel
	Msg  spec.AppMsg
}

// String renders the message as "P1->P2 #1 (30)".
func (m ChanMsg) String() string { return fmt.Sprintf("%s #%d (%d)", m.Chan, m.Msg.Seq, m.Msg.Amt) }

// Total is the snapshot's total as shown: the reported state's, if the
// trace carries a report, else the one the events imply (0 if the cut is
// incomplete).
func (c Cut) Total() int64 {
	if c.Reported != nil {
		return c.Reported.Total()
	}
	return c.Recorded.Total()
}

// Analysis is a trace with its messages, markers and cuts matched up.
type Analysis struct {
	Trace    spec.Trace
	Top      *spec.Topology
	Messages []Message
	Markers  []Marker
	Cuts     []Cut
	// Problems lists what does not match up: sends out of sequence,
	// receives without a send, markers without a recording sender,
	// duplicate messages and markers, reported messages never sent.
	Problems []string

	index *spec.CutIndex
}

// Analyze matches the trace's sends with receives and markers with their
// recording events, and classifies messages against every snapshot's cut
// with the cut analysis (spec.CutIndex, spec.SnapCut): a snapshot the
// trace reports is judged on its report (spec.SnapCut.JudgeReport), any
// other on the events' own recording (JudgeEvents). Positions are indices
// into tr.Events, whose order is causal. In order: index the events,
// list the messages, cut every snapshot, then match the markers.
func Analyze(tr spec.Trace) (*Analysis, error) {
	top := tr.Header.Topology
	if top == nil {
		return nil, fmt.Errorf("export: trace has no topology")
	}
	x := spec.NewCutIndex(top, tr.Events)
	a := &Analysis{Trace: tr, Top: top, index: x}
	a.Problems = append(append(a.Problems, x.SendProblems...), x.Problems...)
	for _, m := range x.Msgs {
		a.Messages = append(a.Messages, Message{Chan: m.Chan, Seq: m.Seq, Amount: m.Amt, Send: m.Send, Recv: m.Recv})
	}
	reported := reports(tr)
	cuts := map[spec.SnapID]spec.SnapCut{}
	initiator := snapshots(tr, x)
	for _, s := range slices.Sorted(maps.Keys(initiator)) {
		k := x.Cut(s)
		cuts[s] = k
		a.Cuts = append(a.Cuts, a.cut(k, initiator[s], reported[s]))
	}
	a.Markers = markers(tr.Events, top, cuts)
	return a, nil
}

// reports is the state the trace reports for each snapshot it reports.
func reports(tr spec.Trace) map[spec.SnapID]*spec.GlobalState {
	out := map[spec.SnapID]*spec.GlobalState{}
	for _, r := range tr.Recorded {
		g := r.State()
		out[r.Snap] = &g
	}
	return out
}

// snapshots lists every snapshot the trace names, in the header, its
// reports or its events, with its initiator ("" if unknown): the header's,
// else the report's, else the first Initiate's.
func snapshots(tr spec.Trace, x *spec.CutIndex) map[spec.SnapID]spec.ProcID {
	out := map[spec.SnapID]spec.ProcID{}
	for s, p := range tr.Header.Snaps {
		out[s] = p
	}
	for _, r := range tr.Recorded {
		if out[r.Snap] == "" {
			out[r.Snap] = r.Initiator
		}
	}
	for _, s := range x.Snaps {
		if out[s] == "" {
			out[s] = x.Initiator(s)
		}
	}
	return out
}

// cut is snapshot k's Cut, its messages' statuses marked.
func (a *Analysis) cut(k spec.SnapCut, initiator spec.ProcID, reported *spec.GlobalState) Cut {
	c := Cut{Snap: k.Snap, Initiator: initiator, Rec: k.Rec, Complete: k.Complete(), Reported: reported, Aborted: a.aborts(k.Snap)}
	if c.Complete {
		c.Recorded = k.Implied()
	}
	verdicts := k.JudgeEvents()
	if reported != nil {
		verdicts = k.JudgeReport(reported.Chans)
	}
	for _, f := range spec.Findings(verdicts) {
		a.mark(&c, f)
	}
	return c
}

// aborts are the trace's Abort events of snapshot s.
func (a *Analysis) aborts(s spec.SnapID) []spec.Event {
	var out []spec.Event
	for _, e := range a.Trace.Events {
		if e.Action == spec.Abort && e.Snap == s {
			out = append(out, e)
		}
	}
	return out
}

// mark records finding f of snapshot c on its message; a spurious one
// also in c.Spurious, and as a problem if the events never send it.
func (a *Analysis) mark(c *Cut, f spec.MsgFinding) {
	i := a.index.Find(f.Chan, f.Msg.Seq)
	if f.Status == Spurious {
		c.Spurious = append(c.Spurious, ChanMsg{Chan: f.Chan, Msg: f.Msg})
		if i < 0 {
			what := "recorded"
			if c.Reported != nil {
				what = "reported"
			}
			a.Problems = append(a.Problems, fmt.Sprintf("snapshot %d: the %s state of %s holds message #%d (%d), which the events never send", c.Snap, what, f.Chan, f.Msg.Seq, f.Msg.Amt))
			return
		}
		if a.Messages[i].Status[c.Snap] != "" {
			return
		}
	}
	m := &a.Messages[i]
	if m.Status == nil {
		m.Status = map[spec.SnapID]Status{}
	}
	m.Status[c.Snap] = f.Status
}

// markers lists the markers: one per RecvMarker event, sent at its
// sender's recording point (-1 if the sender had not recorded), then,
// by snapshot and channel, those a recorded sender sent and nobody
// received.
func markers(events []spec.Event, top *spec.Topology, cuts map[spec.SnapID]spec.SnapCut) []Marker {
	var out []Marker
	for i, e := range events {
		if e.Action != spec.RecvMarker {
			continue
		}
		send := -1
		if r := cuts[e.Snap].Rec[e.From]; r >= 0 && r < i {
			send = r
		}
		out = append(out, Marker{Chan: e.Chan(), Snap: e.Snap, Send: send, Recv: i})
	}
	for _, s := range slices.Sorted(maps.Keys(cuts)) {
		out = append(out, unreceivedMarkers(s, cuts[s])...)
	}
	return out
}

// unreceivedMarkers are the markers of snapshot s, whose cut is k, that a
// recorded sender sent and nobody received, by channel.
func unreceivedMarkers(s spec.SnapID, k spec.SnapCut) []Marker {
	var out []Marker
	for _, v := range k.Chans {
		if r := k.Rec[v.Chan.From]; r >= 0 && v.Marker < 0 {
			out = append(out, Marker{Chan: v.Chan, Snap: s, Send: r, Recv: -1})
		}
	}
	return out
}

// Count is how many messages have status st for snapshot s; for
// Spurious, how many reported messages were not in flight at the cut,
// including those the events never send.
func (a *Analysis) Count(s spec.SnapID, st Status) int {
	if st == Spurious {
		return a.spurious(s)
	}
	n := 0
	for _, m := range a.Messages {
		if m.Status[s] == st {
			n++
		}
	}
	return n
}

// spurious is how many reported messages of snapshot s were not in
// flight at its cut.
func (a *Analysis) spurious(s spec.SnapID) int {
	for _, c := range a.Cuts {
		if c.Snap == s {
			return len(c.Spurious)
		}
	}
	return 0
}

// countAny is how many messages have status st for some snapshot.
func (a *Analysis) countAny(st Status) int {
	n := 0
	for _, m := range a.Messages {
		for _, x := range m.Status {
			if x == st {
				n++
				break
			}
		}
	}
	return n
}

// Orphans lists the messages that are orphans of some snapshot.
func (a *Analysis) Orphans() []Message {
	var out []Message
	for _, m := range a.Messages {
		for _, st := range m.Status {
			if st == Orphan {
				out = append(out, m)
				break
			}
		}
	}
	return out
}
