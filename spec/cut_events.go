package spec

import (
	"fmt"
	"sort"
)

// RunMsg is one application message of a run, matched by channel and
// number: the event indices of its send and of its first receive, -1 if
// absent.
type RunMsg struct {
	Chan Channel
	AppMsg
	Send, Recv int
}

// receipt is one RecvApp event: its index and its message.
type receipt struct {
	at  int
	msg AppMsg
}

// msgKey names a message: its channel and number.
type msgKey struct {
	c   Channel
	seq uint64
}

// CutIndex is a run's events indexed for the cut analysis: every
// application message with its send and receive, and every snapshot's
// recording points and markers. Build it once with NewCutIndex, then ask
// Cut(s) for each snapshot. Positions are indices into Events, whose order
// must be causally consistent.
type CutIndex struct {
	Topo   *Topology
	Events []Event
	// Msgs lists every application message the events send or receive,
	// in order of first appearance.
	Msgs []RunMsg
	// Snaps lists, by id, every snapshot an Initiate or RecvMarker names.
	Snaps []SnapID
	// SendProblems lists the sends that break the spec's numbering: each
	// channel's messages are numbers 1, 2, ... in send order (nSent).
	SendProblems []string
	// Problems lists what else does not match up: a message received
	// twice or never sent, a marker from a process that had not recorded,
	// a second marker of a snapshot on a channel.
	Problems []string

	byKey     map[msgKey]int            // index into Msgs
	sent      map[Channel][]int         // indices into Msgs, in send order
	recvs     map[Channel][]receipt     // every RecvApp, in order
	rec       map[SnapID]map[ProcID]int // recording points
	marker    map[SnapID]map[Channel]int
	initiator map[SnapID]ProcID
}

// NewCutIndex indexes events of a run on topology t.
func NewCutIndex(t *Topology, events []Event) *CutIndex {
	x := &CutIndex{Topo: t, Events: events, byKey: map[msgKey]int{}, sent: map[Channel][]int{}, recvs: map[Channel][]receipt{},
		rec: map[SnapID]map[ProcID]int{}, marker: map[SnapID]map[Channel]int{}, initiator: map[SnapID]ProcID{}}
	for i, e := range events {
		switch e.Action {
		case SendApp:
			x.addSend(i, e)
		case RecvApp:
			x.addRecv(i, e)
		case Initiate, RecvMarker:
			x.addRecording(i, e)
		}
	}
	for _, m := range x.Msgs {
		if m.Send < 0 {
			x.Problems = append(x.Problems, fmt.Sprintf("event %d: message %s #%d received but never sent", m.Recv+1, m.Chan, m.Seq))
		}
	}
	sort.Slice(x.Snaps, func(i, j int) bool { return x.Snaps[i] < x.Snaps[j] })
	return x
}

// msg is message (c, seq), added with amount amt if new.
func (x *CutIndex) msg(c Channel, seq uint64, amt int64) *RunMsg {
	k := msgKey{c, seq}
	i, ok := x.byKey[k]
	if !ok {
		i = len(x.Msgs)
		x.byKey[k] = i
		x.Msgs = append(x.Msgs, RunMsg{Chan: c, AppMsg: AppMsg{Amt: amt, Seq: seq}, Send: -1, Recv: -1})
	}
	return &x.Msgs[i]
}

func (x *CutIndex) addSend(i int, e Event) {
	c := e.Chan()
	m := x.msg(c, e.Msg, e.Amount)
	if next := uint64(len(x.sent[c]) + 1); e.Msg != next || m.Send >= 0 || !x.Topo.HasChan(c) {
		x.SendProblems = append(x.SendProblems, fmt.Sprintf("%s sends %d#%d on %s out of sequence", string(e.Proc), e.Amount, e.Msg, c))
	}
	if m.Send >= 0 {
		x.Problems = append(x.Problems, fmt.Sprintf("event %d: %s sent twice (first at event %d)", i+1, e, m.Send+1))
		return
	}
	m.Send, m.Amt = i, e.Amount
	x.sent[c] = append(x.sent[c], x.byKey[msgKey{c, e.Msg}])
}

func (x *CutIndex) addRecv(i int, e Event) {
	c := e.Chan()
	x.recvs[c] = append(x.recvs[c], receipt{at: i, msg: AppMsg{Amt: e.Amount, Seq: e.Msg}})
	m := x.msg(c, e.Msg, e.Amount)
	if m.Recv >= 0 {
		x.Problems = append(x.Problems, fmt.Sprintf("event %d: %s received twice (first at event %d)", i+1, e, m.Recv+1))
		return
	}
	m.Recv = i
}

// addRecording notes an Initiate or RecvMarker: the process's recording
// point if it is its first for the snapshot, and the channel's marker.
func (x *CutIndex) addRecording(i int, e Event) {
	s := e.Snap
	if x.rec[s] == nil {
		x.rec[s], x.marker[s] = map[ProcID]int{}, map[Channel]int{}
		x.Snaps = append(x.Snaps, s)
	}
	if _, ok := x.initiator[s]; !ok && e.Action == Initiate {
		x.initiator[s] = e.Proc
	}
	if _, ok := x.rec[s][e.Proc]; !ok {
		x.rec[s][e.Proc] = i
	}
	if e.Action == RecvMarker {
		x.addMarker(i, e)
	}
}

// addMarker notes the receipt of snapshot e.Snap's marker on e's channel
// at event i; a marker its sender could not have sent (not recorded yet)
// or a second one on the channel is a problem.
func (x *CutIndex) addMarker(i int, e Event) {
	s, c := e.Snap, e.Chan()
	if _, ok := x.rec[s][e.From]; !ok {
		x.Problems = append(x.Problems, fmt.Sprintf("event %d: %s: %s had not recorded for snapshot %d, so sent no marker", i+1, e, string(e.From), s))
	}
	if _, dup := x.marker[s][c]; dup {
		x.Problems = append(x.Problems, fmt.Sprintf("event %d: %s: second marker of snapshot %d on %s", i+1, e, s, c))
		return
	}
	x.marker[s][c] = i
}

// Initiator is the process whose Initiate(s) comes first, "" if none.
func (x *CutIndex) Initiator(s SnapID) ProcID { return x.initiator[s] }

// Find is the index in Msgs of message (c, seq), -1 if the events
// neither send nor receive it.
func (x *CutIndex) Find(c Channel, seq uint64) int {
	if i, ok := x.byKey[msgKey{c, seq}]; ok {
		return i
	}
	return -1
}

// SnapCut is one snapshot's cut through a run: every process's recording
// point and every channel's view of it.
type SnapCut struct {
	Snap SnapID
	// Rec is each process's recording point: the index of its Initiate(s)
	// or first RecvMarker of s; -1 if it has not recorded. A process
	// that has not recorded has its cut after the end of the run.
	Rec map[ProcID]int
	// Chans is the cut on every channel of the topology, in its order.
	Chans []ChanView

	procs  []ProcID // the topology's, in order
	events []Event
}

// ChanView is where one snapshot's cut crosses channel Chan = <<p, q>>,
// and what that makes of the channel's messages.
type ChanView struct {
	Chan Channel
	// Cut is the cut seqs the events say: Sent, the messages p sent on c
	// before it recorded (cutSent[s][c]); Got, the messages q received on
	// c before it recorded (Len(cutGot[s][c])). For a process that has
	// not recorded, they count to the end of the run.
	Cut ChanCut
	// Marker is the index of the receive of s's marker on c, -1 if none:
	// c's recording is done (recChan[s][c] = "done") when it is not -1.
	Marker int
	// InFlight lists the messages in flight at the cut, in send order:
	// sent before p recorded, not received before q recorded. They are
	// what ExactChannelState wants recorded (numbers Got+1 .. Sent when
	// the cut is consistent).
	InFlight []RunMsg
	// Orphans lists the receives before q recorded of messages p sent
	// after it recorded, or never sent: ConsistentCut fails.
	Orphans []RunMsg
	// Misnumbered lists the other receives before q recorded that are out
	// of numbering (cutGot[s][c] is not 1 .. Len(cutGot[s][c])).
	Misnumbered []Misnumbered
	// Received is the events' own recording of c: the messages q
	// received after it recorded and before the marker (all so far if no
	// marker yet; none if q has not recorded), in order.
	Received []RunMsg
}

// Misnumbered is a receive, before the receiver recorded, of message Got
// where Want was next.
type Misnumbered struct {
	At        int // event index
	Got, Want uint64
}

// Cut is snapshot s's cut through the run.
func (x *CutIndex) Cut(s SnapID) SnapCut {
	k := SnapCut{Snap: s, Rec: make(map[ProcID]int, len(x.Topo.Procs)), procs: x.Topo.Procs, events: x.Events}
	for _, p := range x.Topo.Procs {
		k.Rec[p] = -1
		if i, ok := x.rec[s][p]; ok {
			k.Rec[p] = i
		}
	}
	for _, c := range x.Topo.Chans {
		k.Chans = append(k.Chans, x.chanView(k, c))
	}
	return k
}

// before reports whether event i (-1: none) comes before a cut at
// recording point at (-1: after the end of the run).
func before(i, at int) bool { return i >= 0 && (at < 0 || i < at) }

// chanView is the cut k on channel c.
func (x *CutIndex) chanView(k SnapCut, c Channel) ChanView {
	v := ChanView{Chan: c, Marker: -1}
	if i, ok := x.marker[k.Snap][c]; ok {
		v.Marker = i
	}
	from, to := k.Rec[c.From], k.Rec[c.To]
	x.viewSends(&v, from, to)
	x.viewReceives(&v, from, to)
	return v
}

// viewSends counts into v the messages sent on v.Chan before the sender
// recorded at from (its cut's sent seq), and lists those that the
// receiver, recording at to, had not received then: in flight across the
// cut.
func (x *CutIndex) viewSends(v *ChanView, from, to int) {
	for _, i := range x.sent[v.Chan] {
		m := x.Msgs[i]
		if !before(m.Send, from) {
			continue
		}
		v.Cut.Sent++
		if !before(m.Recv, to) {
			v.InFlight = append(v.InFlight, m)
		}
	}
}

// viewReceives walks the receives on v.Chan: those after the receiver
// recorded at to and before the marker are what the channel recorded;
// those before count into the cut's got seq, each orphan (sent after the
// sender recorded at from) or misnumbered one listed.
func (x *CutIndex) viewReceives(v *ChanView, from, to int) {
	c, next := v.Chan, uint64(1)
	for _, r := range x.recvs[c] {
		m := x.Msgs[x.Find(c, r.msg.Seq)]
		switch {
		case !before(r.at, to):
			if to >= 0 && (v.Marker < 0 || r.at < v.Marker) {
				v.Received = append(v.Received, RunMsg{Chan: c, AppMsg: r.msg, Send: m.Send, Recv: r.at})
			}
			continue
		case !before(m.Send, from):
			v.Orphans = append(v.Orphans, RunMsg{Chan: c, AppMsg: r.msg, Send: m.Send, Recv: r.at})
		case r.msg.Seq != next:
			v.Misnumbered = append(v.Misnumbered, Misnumbered{At: r.at, Got: r.msg.Seq, Want: next})
		}
		v.Cut.Got++
		next = r.msg.Seq + 1
	}
}

// Chan is the view of channel c, nil if c is not the topology's.
func (k SnapCut) Chan(c Channel) *ChanView {
	for i := range k.Chans {
		if k.Chans[i].Chan == c {
			return &k.Chans[i]
		}
	}
	return nil
}

// Incomplete lists what keeps the snapshot from being complete in the
// events (Complete(s): every process recorded and every channel's
// recording done): the processes that never recorded, then the channels
// whose marker never arrived, in topology order. Empty: complete.
func (k SnapCut) Incomplete() []string {
	var out []string
	for _, p := range k.procs {
		if k.Rec[p] < 0 {
			out = append(out, string(p)+" never recorded")
		}
	}
	for _, c := range k.Chans {
		if c.Marker < 0 {
			out = append(out, "no marker received on "+c.Chan.String())
		}
	}
	return out
}

// Complete reports whether the events complete the snapshot.
func (k SnapCut) Complete() bool { return len(k.Incomplete()) == 0 }

// Implied is the global state the events say the algorithm recorded:
// each process's state at its recording point (the zero state if it has
// not recorded) and each channel's Received messages (channels with none
// left out).
func (k SnapCut) Implied() GlobalState {
	g := GlobalState{Procs: map[ProcID]LocalState{}, Chans: map[Channel][]AppMsg{}}
	for p, i := range k.Rec {
		if i >= 0 {
			g.Procs[p] = k.events[i].After
		}
	}
	for _, v := range k.Chans {
		for _, m := range v.Received {
			g.Chans[v.Chan] = append(g.Chans[v.Chan], m.AppMsg)
		}
	}
	return g
}
