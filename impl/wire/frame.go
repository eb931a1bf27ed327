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
)

// Frame is one message on a directed channel.
type Frame struct {
	Kind Kind
	// Snap is the marker's snapshot id (KindMarker only).
	Snap spec.SnapID
	// Seq numbers application messages on their channel from 1 (KindApp only).
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
	}
	return fmt.Sprintf("frame(kind=%d)", f.Kind)
}

// Envelope is a frame on a named channel: what a transport delivers.
type Envelope struct {
	Chan  spec.Channel
	Frame Frame
}
