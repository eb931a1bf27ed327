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
package export

import (
	"fmt"
	"sort"

	"github.com/markerwave/markerwave/spec"
)

// Status is what a message is with respect to one snapshot's cut.
type Status string

const (
	// Orphan: received before the receiver's cut but sent after the
	// sender's cut (or never sent): the cut is inconsistent.
	Orphan Status = "orphan"
	// Recorded: in flight at the cut (sent before the sender's cut,
	// received after the receiver's) and received while the receiver was
	// recording its channel: it is part of the recorded channel state.
	// When the trace carries the implementation's report of the
	// snapshot: in flight at the cut and in the reported channel state.
	Recorded Status = "recorded"
	// Missing: in flight at the cut but received after the channel's
	// marker (or never, though the marker came): the snapshot lost it.
	// When the trace carries the implementation's report of the
	// snapshot: in flight at the cut but not in the reported state of
	// its channel.
	Missing Status = "missing"
	// Spurious: in the reported state of its channel but not in flight
	// at the cut (sent after the sender's cut, or received before the
	// receiver's): the implementation recorded a message it should not
	// have. Only with a report of the snapshot.
	Spurious Status = "spurious"
	// Pending: in flight at the cut and the channel's recording is still
	// open when the trace ends.
	Pending Status = "pending"
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
	for _, s := range sortedSnaps(m.Status) {
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
	// Spurious lists the reported channel messages that were not in
	// flight at the cut, in channel order: orphans, messages sent after
	// the sender's cut or received before the receiver's, and messages
	// the events never send.
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
	// Problems lists what does not match up: receives without a send,
	// markers without a recording sender, duplicate messages.
	Problems []string
}

// Analyze matches the trace's sends with receives and markers with their
// recording events, and classifies messages against every snapshot's cut.
// Positions are indices into tr.Events, whose order is causal.
func Analyze(tr spec.Trace) (*Analysis, error) {
	top := tr.Header.Topology
	if top == nil {
		return nil, fmt.Errorf("export: trace has no topology")
	}
	a := &Analysis{Trace: tr, Top: top}

	type key struct {
		c   spec.Channel
		seq uint64
	}
	msgIdx := map[key]int{}
	msg := func(c spec.Channel, seq uint64, amt int64) *Message {
		k := key{c, seq}
		i, ok := msgIdx[k]
		if !ok {
			i = len(a.Messages)
			msgIdx[k] = i
			a.Messages = append(a.Messages, Message{Chan: c, Seq: seq, Amount: amt, Send: -1, Recv: -1})
		}
		return &a.Messages[i]
	}

	// Snapshots: from the header and from the events.
	snapSet := map[spec.SnapID]spec.ProcID{}
	for s, p := range tr.Header.Snaps {
		snapSet[s] = p
	}
	reported := map[spec.SnapID]spec.GlobalState{}
	for _, r := range tr.Recorded {
		reported[r.Snap] = r.State()
		if snapSet[r.Snap] == "" {
			snapSet[r.Snap] = r.Initiator
		}
	}
	rec := map[spec.SnapID]map[spec.ProcID]int{}
	recOf := func(s spec.SnapID) map[spec.ProcID]int {
		if rec[s] == nil {
			rec[s] = map[spec.ProcID]int{}
		}
		return rec[s]
	}
	for k, e := range tr.Events {
		switch e.Action {
		case spec.SendApp:
			m := msg(e.Chan(), e.Msg, e.Amount)
			if m.Send >= 0 {
				a.Problems = append(a.Problems, fmt.Sprintf("event %d: %s sent twice (first at event %d)", k+1, e, m.Send+1))
				continue
			}
			m.Send = k
		case spec.RecvApp:
			m := msg(e.Chan(), e.Msg, e.Amount)
			if m.Recv >= 0 {
				a.Problems = append(a.Problems, fmt.Sprintf("event %d: %s received twice (first at event %d)", k+1, e, m.Recv+1))
				continue
			}
			m.Recv = k
		case spec.Initiate, spec.RecvMarker:
			if e.Action == spec.Initiate {
				if _, ok := snapSet[e.Snap]; !ok || snapSet[e.Snap] == "" {
					snapSet[e.Snap] = e.Proc
				}
			} else if _, ok := snapSet[e.Snap]; !ok {
				snapSet[e.Snap] = ""
			}
			r := recOf(e.Snap)
			if _, ok := r[e.Proc]; !ok {
				r[e.Proc] = k
			}
		}
	}
	for i := range a.Messages {
		if a.Messages[i].Send < 0 {
			m := a.Messages[i]
			a.Problems = append(a.Problems, fmt.Sprintf("event %d: message %s #%d received but never sent", m.Recv+1, m.Chan, m.Seq))
		}
	}

	// Markers: one per RecvMarker event, plus those sent and never received.
	got := map[spec.SnapID]map[spec.Channel]int{}
	for k, e := range tr.Events {
		if e.Action != spec.RecvMarker {
			continue
		}
		send := -1
		if r, ok := rec[e.Snap][e.From]; ok && r < k {
			send = r
		} else {
			a.Problems = append(a.Problems, fmt.Sprintf("event %d: %s: %s had not recorded for snapshot %d, so sent no marker", k+1, e, string(e.From), e.Snap))
		}
		a.Markers = append(a.Markers, Marker{Chan: e.Chan(), Snap: e.Snap, Send: send, Recv: k})
		if got[e.Snap] == nil {
			got[e.Snap] = map[spec.Channel]int{}
		}
		if _, dup := got[e.Snap][e.Chan()]; dup {
			a.Problems = append(a.Problems, fmt.Sprintf("event %d: %s: second marker of snapshot %d on %s", k+1, e, e.Snap, e.Chan()))
			continue
		}
		got[e.Snap][e.Chan()] = k
	}
	snaps := sortedSnaps(snapSet)
	for _, s := range snaps {
		for _, c := range top.Chans {
			if r, ok := rec[s][c.From]; ok {
				if _, ok := got[s][c]; !ok {
					a.Markers = append(a.Markers, Marker{Chan: c, Snap: s, Send: r, Recv: -1})
				}
			}
		}
	}

	// Cuts and message statuses.
	const inf = int(^uint(0) >> 1)
	pos := func(s spec.SnapID, p spec.ProcID) int {
		if r, ok := rec[s][p]; ok {
			return r
		}
		return inf
	}
	for _, s := range snaps {
		cut := Cut{Snap: s, Initiator: snapSet[s], Rec: map[spec.ProcID]int{}, Complete: true}
		for _, p := range top.Procs {
			if r, ok := rec[s][p]; ok {
				cut.Rec[p] = r
			} else {
				cut.Rec[p] = -1
				cut.Complete = false
			}
		}
		for _, c := range top.Chans {
			if _, ok := got[s][c]; !ok {
				cut.Complete = false
			}
		}
		// implied lists the messages the events imply s recorded.
		var implied []ChanMsg
		rep, hasRep := reported[s]
		// used marks the reported messages matched by one in flight.
		used := map[spec.Channel][]bool{}
		if hasRep {
			cut.Reported = &rep
			for c, ms := range rep.Chans {
				used[c] = make([]bool, len(ms))
			}
		}
		inReport := func(m *Message) bool {
			for j, rm := range rep.Chans[m.Chan] {
				if !used[m.Chan][j] && rm.Seq == m.Seq && rm.Amt == m.Amount {
					used[m.Chan][j] = true
					return true
				}
			}
			return false
		}
		for i := range a.Messages {
			m := &a.Messages[i]
			rs, rr := pos(s, m.Chan.From), pos(s, m.Chan.To)
			sentBefore := m.Send >= 0 && m.Send < rs
			recvBefore := m.Recv >= 0 && m.Recv < rr
			var st Status
			switch {
			case recvBefore && !sentBefore:
				st = Orphan
			case sentBefore && !recvBefore:
				mk, markerIn := got[s][m.Chan]
				switch {
				case rr == inf:
					st = Pending
				case m.Recv >= 0 && (!markerIn || m.Recv < mk):
					st = Recorded
				case markerIn:
					st = Missing
				default:
					st = Pending
				}
				if st == Recorded {
					implied = append(implied, ChanMsg{Chan: m.Chan, Msg: spec.AppMsg{Amt: m.Amount, Seq: m.Seq}})
				}
				if hasRep {
					st = Missing
					if inReport(m) {
						st = Recorded
					}
				}
			}
			if st != "" {
				if m.Status == nil {
					m.Status = map[spec.SnapID]Status{}
				}
				m.Status[s] = st
			}
		}
		if hasRep {
			chans := append([]spec.Channel(nil), top.Chans...)
			for c := range rep.Chans {
				if !top.HasChan(c) {
					chans = append(chans, c)
				}
			}
			for _, c := range chans {
				for j, rm := range rep.Chans[c] {
					if used[c][j] {
						continue
					}
					cut.Spurious = append(cut.Spurious, ChanMsg{Chan: c, Msg: rm})
					i, ok := msgIdx[key{c, rm.Seq}]
					if !ok {
						a.Problems = append(a.Problems, fmt.Sprintf("snapshot %d: the reported state of %s holds message #%d (%d), which the events never send", s, c, rm.Seq, rm.Amt))
						continue
					}
					if m := &a.Messages[i]; m.Status[s] == "" {
						if m.Status == nil {
							m.Status = map[spec.SnapID]Status{}
						}
						m.Status[s] = Spurious
					}
				}
			}
		}
		if cut.Complete {
			g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
			for _, p := range top.Procs {
				g.Procs[p] = tr.Events[cut.Rec[p]].After
			}
			for _, m := range implied {
				g.Chans[m.Chan] = append(g.Chans[m.Chan], m.Msg)
			}
			for c := range g.Chans {
				ms := g.Chans[c]
				sort.Slice(ms, func(i, j int) bool { return ms[i].Seq < ms[j].Seq })
			}
			cut.Recorded = g
		}
		a.Cuts = append(a.Cuts, cut)
	}
	return a, nil
}

// Count is how many messages have status st for snapshot s; for
// Spurious, how many reported messages were not in flight at the cut,
// including those the events never send.
func (a *Analysis) Count(s spec.SnapID, st Status) int {
	if st == Spurious {
		for _, c := range a.Cuts {
			if c.Snap == s {
				return len(c.Spurious)
			}
		}
		return 0
	}
	n := 0
	for _, m := range a.Messages {
		if m.Status[s] == st {
			n++
		}
	}
	return n
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

func sortedSnaps[V any](m map[spec.SnapID]V) []spec.SnapID {
	out := make([]spec.SnapID, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
