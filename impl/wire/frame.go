package wire

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// Kind tells an application message from a marker.
type Kind uint8

const (
	// KindApp carries an application payload (TLA+ [kind |-> "app"]).
	KindApp Kind = 1
	// KindMarker carries a snapshot marker (TLA+ [kind |-> "marker"]).
	KindMarker Kind = 2
	// KindHeartbeat says the sender is alive; a runtime sends one on a
	// channel that has been idle for a while, and its failure detector
	// suspects a peer it has heard nothing from for too long. Seq carries
	// the sender's incarnation (0 if it has none). Not part of the
	// algorithm: the core never sees one.
	KindHeartbeat Kind = 3
	// KindDone says the sender sends no more application messages on this
	// channel (a graceful stop: everything it sent before is ahead of it,
	// FIFO). Seq carries the sender's incarnation, as for KindHeartbeat.
	// Not part of the algorithm: the core never sees one.
	KindDone Kind = 4
)

// Control reports whether k is a runtime's own kind (KindHeartbeat,
// KindDone) rather than one of the algorithm's.
func (k Kind) Control() bool { return k == KindHeartbeat || k == KindDone }

// Frame is one message on a directed channel.
type Frame struct {
	Kind Kind
	// Snap is the marker's snapshot id (KindMarker only).
	Snap spec.SnapID
	// Seq numbers application messages on their channel from 1 (KindApp);
	// for KindHeartbeat and KindDone it is the sender's incarnation.
	Seq uint64
	// Payload is the application's encoding of the message (KindApp only).
	Payload []byte
	// VC is the sender's vector clock at the send, for tracing; may be nil.
	VC []uint64
}

func (f Frame) String() string {
	switch f.Kind {
	case KindMarker:
		return fmt.Sprintf("marker(%d)", f.Snap)
	case KindApp:
		return fmt.Sprintf("app#%d(%d bytes)", f.Seq, len(f.Payload))
	case KindHeartbeat:
		return fmt.Sprintf("heartbeat(inc %x)", f.Seq)
	case KindDone:
		return fmt.Sprintf("done(inc %x)", f.Seq)
	}
	return fmt.Sprintf("frame(kind=%d)", f.Kind)
}

// Envelope is a frame on a named channel: what a transport delivers.
type Envelope struct {
	Chan  spec.Channel
	Frame Frame
}
