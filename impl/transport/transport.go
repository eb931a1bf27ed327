package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// Transport moves envelopes between the nodes of one topology.
//
// A runtime runs one goroutine per node that reads that node's Inbox and
// calls Send for the node's outgoing channels. Envelopes of one channel
// arrive in the order their Sends returned; envelopes of different channels
// are not ordered.
type Transport interface {
	// Send accepts env for delivery on env.Chan and never waits for the
	// receiving process to read (its Inbox is unbounded); TCP's Send may
	// wait for the receiving transport's acknowledgements while a
	// window of frames is unacknowledged on a live connection (flow
	// control, see TCP). nil means accepted: the envelope reaches the receiver's
	// Inbox exactly once, or Close reports it. Send copies env's slices.
	// Errors: an unknown channel (ErrUnknownChannel), an invalid frame,
	// a channel this transport does not send on, or ErrClosed.
	Send(env wire.Envelope) error
	// Inbox is p's inbound queue, the same one on every call; readers
	// take its envelopes in batches (see Inbox). It is closed by Close. p
	// must be a process this transport delivers to.
	Inbox(p spec.ProcID) (*Inbox, error)
	// Close stops the transport and all its goroutines without hanging;
	// Sends after it fail with ErrClosed and the inboxes are closed.
	// Accepted envelopes that did not reach their node's Inbox reader are
	// not dropped silently: Close returns a *ShutdownError listing them.
	// Calls after the first return nil.
	Close() error
}

// FlowControl is a Transport whose Send may wait for flow control (TCP's
// window): a caller that must not wait on the network while it holds a
// lock others need (a runtime's core lock, which its failure detector
// takes) sends under the lock with SendNow, which never waits, and waits
// for room with WaitRoom before taking it.
type FlowControl interface {
	// SendNow is Send without flow control's wait: the frame is accepted
	// past a full window, so a caller that never waits in WaitRoom can
	// run ahead of its receiver without bound.
	SendNow(env wire.Envelope) error
	// WaitRoom waits at most timeout until a Send on ch would not wait:
	// nil then; an error wrapping ErrNoRoom if it still would; ErrClosed
	// or the channel's failure, as Send would return them.
	WaitRoom(ch spec.Channel, timeout time.Duration) error
}

var (
	// ErrNoRoom is wrapped by WaitRoom's error when the window of a
	// channel stayed full for the whole wait: its receiver acknowledged
	// nothing (a stopped process, a stalled network).
	ErrNoRoom = errors.New("transport: window full")
	// ErrClosed is returned by Send after Close.
	ErrClosed = errors.New("transport: closed")
	// ErrUnknownChannel is wrapped by errors naming a channel that is not
	// in the topology.
	ErrUnknownChannel = errors.New("transport: unknown channel")
	// ErrUnknownProc is wrapped by errors naming a process that is not in
	// the topology or not served here.
	ErrUnknownProc = errors.New("transport: unknown process")
)

// ShutdownError is Close's report of accepted envelopes that were not
// handed to their receiver, each list in per-channel send order.
type ShutdownError struct {
	// Undelivered reached the receiving side but no Inbox reader took them.
	Undelivered []wire.Envelope
	// Unacked were sent but never acknowledged by the receiver (TCP only);
	// the receiver may or may not hold them.
	Unacked []wire.Envelope
}

func (e *ShutdownError) Error() string {
	var parts []string
	if len(e.Undelivered) > 0 {
		parts = append(parts, fmt.Sprintf("%d undelivered (%s)", len(e.Undelivered), wire.CountByChan(e.Undelivered)))
	}
	if len(e.Unacked) > 0 {
		parts = append(parts, fmt.Sprintf("%d unacknowledged (%s)", len(e.Unacked), wire.CountByChan(e.Unacked)))
	}
	return "transport: closed with " + strings.Join(parts, ", ")
}

// checkSend validates env against the topology and returns the index of
// its channel (Topology.ChanIndex, found through h).
func checkSend(top *spec.Topology, h *chanHint, env wire.Envelope) (int, error) {
	i, err := chanIndex(top, h, env.Chan)
	if err != nil {
		return -1, err
	}
	if err := env.Frame.Validate(); err != nil {
		return -1, fmt.Errorf("transport: send on %s: %w", env.Chan, err)
	}
	return i, nil
}

// chanIndex is the index of channel ch in the topology
// (Topology.ChanIndex, found through h), an error if it has none.
func chanIndex(top *spec.Topology, h *chanHint, ch spec.Channel) (int, error) {
	i := h.index(top, ch)
	if i < 0 {
		return -1, fmt.Errorf("%w %s", ErrUnknownChannel, ch)
	}
	return i, nil
}

// chanHint remembers the channel of the last Send that found one, so
// that a run of Sends on one channel (a stream) skips the topology's
// map lookup, which hashes both process names: comparing the names
// costs a fraction of it. Concurrent Sends on other channels only make
// it miss.
type chanHint struct{ last atomic.Int32 }

// index is top.ChanIndex(c).
func (h *chanHint) index(top *spec.Topology, c spec.Channel) int {
	if i := int(h.last.Load()); i < len(top.Chans) && top.Chans[i] == c {
		return i
	}
	i := top.ChanIndex(c)
	if i >= 0 {
		h.last.Store(int32(i))
	}
	return i
}
