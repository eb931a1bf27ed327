package core

import "github.com/markerwave/markerwave/spec"

// ChanStatus is where one incoming channel stands in one snapshot at this
// node: spec's Status (tla/ChandyLamport.tla line 60), the one type the
// model and the dataflow core use too.
type ChanStatus = spec.Status

// The statuses (spec.Idle, spec.Recording, spec.Done).
const (
	// Idle: the node has not recorded its state for the snapshot yet.
	Idle = spec.Idle
	// Recording: the node recorded its state and awaits the channel's marker;
	// application messages arriving on it are recorded.
	Recording = spec.Recording
	// Done: the channel's marker arrived (or, for the channel that brought the
	// first marker, the channel was recorded empty).
	Done = spec.Done
)

// Phase is where a snapshot stands at this node.
type Phase uint8

const (
	// Unknown: the node has not recorded its state for the snapshot.
	Unknown Phase = iota
	// Active: recorded, some incoming channel is still recording.
	Active
	// Complete: every incoming channel is done; awaiting TakeCompleted.
	Complete
	// Released: handed out by TakeCompleted (or retired by Restore); only
	// the id is remembered.
	Released
	// Aborted: aborted here (Node.Abort); only the id is remembered, and
	// the snapshot's markers are dropped.
	Aborted
)

// phaseNames names each Phase.
var phaseNames = [...]string{Unknown: "unknown", Active: "active", Complete: "complete", Released: "released", Aborted: "aborted"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "Phase(?)"
}

// RecordedMsg is an application message recorded as channel state.
type RecordedMsg struct {
	Seq     uint64 // its seq on the channel
	Amt     int64  // the application's abstraction of Payload
	Payload []byte // a private copy of the frame's payload
}

// ChanRecording is one incoming channel's part of a local snapshot.
type ChanRecording struct {
	Chan   spec.Channel
	Status ChanStatus
	// NextRecv is the seq the node expected next on Chan when it recorded
	// its state; recorded messages are numbered from it without gaps.
	NextRecv uint64
	Msgs     []RecordedMsg
}

// AppMsgs abstracts the recorded messages to the spec's channel contents.
func (c ChanRecording) AppMsgs() []spec.AppMsg {
	out := make([]spec.AppMsg, len(c.Msgs))
	for i, m := range c.Msgs {
		out[i] = spec.AppMsg{Amt: m.Amt, Seq: m.Seq}
	}
	return out
}

// ChanSeq pairs an outgoing channel with the seq its next message gets.
type ChanSeq struct {
	Chan spec.Channel
	Next uint64
}

// LocalSnapshot is one node's part of a snapshot: its recorded state and
// the state of each of its incoming channels, in topology order.
type LocalSnapshot struct {
	Snap  spec.SnapID
	Proc  spec.ProcID
	App   []byte          // the application's captured state
	State spec.LocalState // its abstraction, with the core's counters
	// Opaque: the application is no Quantities, so State.Bal counts
	// messages (OpaqueBalance + Rcvd - Sent), no quantity of its own.
	Opaque bool
	Chans  []ChanRecording // incoming channels, sorted as in spec.Topology
	// NextSend is, per outgoing channel, the seq of the first message sent
	// after the node recorded its state.
	NextSend []ChanSeq
}

// Chan returns the recording of incoming channel c.
func (ls *LocalSnapshot) Chan(c spec.Channel) (ChanRecording, bool) {
	for _, r := range ls.Chans {
		if r.Chan == c {
			return r, true
		}
	}
	return ChanRecording{}, false
}

// Checkpoint is what Restore needs to rebuild this node as recorded. The
// runtime must then re-deliver each channel's recorded messages first.
func (ls *LocalSnapshot) Checkpoint() Checkpoint {
	cp := Checkpoint{
		App:       ls.App,
		State:     ls.State,
		NextSend:  make(map[spec.Channel]uint64, len(ls.NextSend)),
		NextRecv:  make(map[spec.Channel]uint64, len(ls.Chans)),
		SnapFloor: ls.Snap,
	}
	for _, cs := range ls.NextSend {
		cp.NextSend[cs.Chan] = cs.Next
	}
	for _, r := range ls.Chans {
		cp.NextRecv[r.Chan] = r.NextRecv
	}
	return cp
}

// snapState is a snapshot this node has recorded and not yet released.
type snapState struct {
	id      spec.SnapID
	app     []byte
	state   spec.LocalState
	status  []ChanStatus    // by incoming index
	recs    [][]RecordedMsg // by incoming index
	recvAt  []uint64        // next expected seq per incoming channel at record time
	sendAt  []uint64        // next seq per outgoing channel at record time
	pending int             // incoming channels not yet done
}

// Cut is a snapshot's cut seqs assembled from its local parts, what
// Restore resumes every channel at: a channel's Sent is the messages its
// sender had sent on it when it recorded (NextSend less one), its Got the
// messages its receiver had received (NextRecv less one). In the spec these
// are cutSent[s][c] and Len(cutGot[s][c]).
func Cut(parts ...LocalSnapshot) map[spec.Channel]spec.ChanCut {
	k := map[spec.Channel]spec.ChanCut{}
	for _, ls := range parts {
		for _, cs := range ls.NextSend {
			c := k[cs.Chan]
			c.Sent = seqsBefore(cs.Next)
			k[cs.Chan] = c
		}
		for _, r := range ls.Chans {
			c := k[r.Chan]
			c.Got = seqsBefore(r.NextRecv)
			k[r.Chan] = c
		}
	}
	return k
}

// seqsBefore is how many seqs come before next (seqs count from 1).
func seqsBefore(next uint64) uint64 {
	if next == 0 {
		return 0
	}
	return next - 1
}
