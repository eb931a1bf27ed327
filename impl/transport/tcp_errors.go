package transport

import (
	"errors"
	"fmt"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// ConnError describes a failed or rejected connection.
type ConnError struct {
	Op     string       // "dial", "tls" (a peer refused by mutual TLS), "handshake", "accept", "read", "write", "ack"
	Chan   spec.Channel // zero if not known yet
	Remote string       // remote address, if known
	Err    error
}

func (e *ConnError) Error() string {
	s := "transport: " + e.Op
	if e.Chan != (spec.Channel{}) {
		s += " " + e.Chan.String()
	}
	if e.Remote != "" {
		s += " (" + e.Remote + ")"
	}
	return s + ": " + e.Err.Error()
}

func (e *ConnError) Unwrap() error { return e.Err }

// ErrRejected is wrapped by dial errors when the receiver refused the hello.
var ErrRejected = errors.New("transport: hello rejected")

// ErrPeerRestarted is matched by a *PeerRestartedError: a channel one of
// whose ends restarted, so that its state is lost. It wraps
// wire.ErrProtocol.
var ErrPeerRestarted = fmt.Errorf("transport: peer restarted (channel state lost): %w", wire.ErrProtocol)

// Side is one end of a channel.
type Side uint8

const (
	SideUnknown  Side = iota
	SideSender        // the channel's From
	SideReceiver      // the channel's To
)

func (s Side) String() string {
	switch s {
	case SideSender:
		return "sender"
	case SideReceiver:
		return "receiver"
	}
	return "unknown side"
}

// PeerRestartedError reports a channel stopped by a restart, seen by the
// end At. Restarted is the end that restarted: its incarnation was Was the
// first time this end saw it on the channel and is Now (0 if not known: a
// sender told by the receiver that a later incarnation of its own process
// took the channel over). Restarted is
// SideUnknown (and Was, Now 0) when the incarnations agreed but the
// receiver's Last did not fit: Last must lie in [Acked, Sent], the frames
// the sender had acknowledged and sent. Acked, Sent and Unacked are set
// when At is SideSender; Last when the receiver's count is known. Pending
// frames stay unacknowledged and are listed by Close. Mismatch is set
// (and Restarted SideUnknown) when the channel's ends were restored from
// different snapshots, SenderFrom and ReceiverFrom (0: started fresh):
// the receiver refuses the sender's hello, and the channel cannot resume
// until every node restarts from one snapshot.
type PeerRestartedError struct {
	Chan        spec.Channel
	At          Side   // the end reporting
	Restarted   Side   // the end that restarted
	Was, Now    uint64 // its incarnation: first seen, seen now
	Acked, Sent uint64 // the range Last had to lie in
	Last        uint64 // what the receiver holds
	Unacked     int    // frames kept, never to be delivered

	Mismatch                 bool
	SenderFrom, ReceiverFrom spec.SnapID
}

func (e *PeerRestartedError) Error() string {
	s := "transport: channel " + e.Chan.String() + " stopped: "
	switch {
	case e.Mismatch:
		s += fmt.Sprintf("sender %s was %s, receiver %s %s: nodes restored from different snapshots cannot resume a channel; restart every node from one snapshot",
			string(e.Chan.From), restoredFrom(e.SenderFrom), string(e.Chan.To), restoredFrom(e.ReceiverFrom))
	case e.Restarted == SideSender || e.Restarted == SideReceiver:
		s += e.restart()
	default:
		s += fmt.Sprintf("receiver holds %d frames, expected %d..%d (%d acknowledged, %d sent): peer restarted, its channel state is lost",
			e.Last, e.Acked, e.Sent, e.Acked, e.Sent)
	}
	if e.At == SideSender {
		s += fmt.Sprintf("; %d frames kept unacknowledged", e.Unacked)
	}
	return s
}

// restart says which end restarted, as Error does.
func (e *PeerRestartedError) restart() string {
	p := e.Chan.From
	if e.Restarted == SideReceiver {
		p = e.Chan.To
	}
	var s string
	if e.Now == 0 {
		s = fmt.Sprintf("another incarnation of %s %s (this one is %016x) reached the receiver", e.Restarted, string(p), e.Was)
	} else {
		s = fmt.Sprintf("%s %s restarted (incarnation %016x, was %016x)", e.Restarted, string(p), e.Now, e.Was)
	}
	s += ": its channel state is lost"
	if e.At == SideReceiver {
		s += fmt.Sprintf("; its hellos are refused, %d frames were delivered", e.Last)
	}
	return s
}

func (e *PeerRestartedError) Unwrap() error { return ErrPeerRestarted }

// restoredFrom says what a node started from: "restored from snapshot
// N", or "started fresh" for 0.
func restoredFrom(id spec.SnapID) string {
	if id == 0 {
		return "started fresh (restored from no snapshot)"
	}
	return fmt.Sprintf("restored from snapshot %d", id)
}
