package core

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// App is the application a Node runs: the state machine a service
// already has, in the manner of hashicorp/raft's FSM. The core calls it
// only from the step that owns the node, never concurrently. Every method
// that returns an error must leave the application's state unchanged when
// it does. Nothing here is about money: what the state means, and which
// properties a global snapshot of it must have, is the application's
// (snapshot.Invariant states them).
type App interface {
	// Capture encodes the application's state, for a local snapshot.
	// An error on a marker's arrival, like an error from Apply, fails
	// the channel the frame came on, for good: FIFO delivery cannot skip
	// a frame, so it and every later frame of that channel are held
	// undelivered, Quiesce and Stop name the channel, and the snapshots
	// that need it never complete (the runtime's IncompleteError says
	// why). Return an error only when the node cannot go on; the way
	// back is a restart from a complete snapshot.
	Capture() ([]byte, error)
	// Restore replaces the application's state with a captured one.
	Restore(state []byte) error
	// Send is the local effect of sending payload to peer to (a bank
	// debits; a key-value shard gives a key away). It may refuse.
	Send(to spec.ProcID, payload []byte) error
	// Apply is the effect of receiving payload from peer from. An error
	// fails the channel from->this node for good (see Capture): the
	// sender's Send had already succeeded, and is not told.
	Apply(from spec.ProcID, payload []byte) error
}

// Quantities is what an App that moves a conserved quantity (a bank's
// money, a ring's token) adds: its abstraction to the spec's bal and amt,
// so that the spec's Conservation (tla/ChandyLamport.tla lines 306-309)
// is about the application's own quantity.
type Quantities interface {
	// Balance abstracts the state to the spec's bal (TLA+ LocalState.bal).
	Balance() int64
	// Amount abstracts a payload to the spec's amount (TLA+ amt); it must be
	// positive for a well-formed payload and an error otherwise.
	Amount(payload []byte) (int64, error)
}

// OpaqueBalance is the spec's InitBal of a process whose App is opaque
// (not Quantities). Such an app is abstracted by counting messages: each
// payload has amount 1 and bal is OpaqueBalance + rcvd - sent, so the
// spec's SendApp (bal >= amt) is enabled for the first OpaqueBalance
// sends and Conservation says only that a snapshot counts every message
// once (which ExactChannelState already implies), nothing of the state.
const OpaqueBalance int64 = 1 << 40

// InitialBalance is the spec's InitBal of a fresh application a: its
// Balance, or OpaqueBalance for an opaque one.
func InitialBalance(a App) int64 {
	if q, ok := a.(Quantities); ok {
		return q.Balance()
	}
	return OpaqueBalance
}

// AmountOf is payload's abstraction to the spec's amt (TLA+ a in
// SendApp(p, q, a)) as a reads it: Quantities.Amount, which must be
// positive, or 1 for an opaque application.
func AmountOf(a App, payload []byte) (int64, error) {
	q, ok := a.(Quantities)
	if !ok {
		return 1, nil
	}
	amt, err := q.Amount(payload)
	if err != nil {
		return 0, fmt.Errorf("%w: bad payload: %w", ErrApp, err)
	}
	if amt <= 0 {
		return 0, fmt.Errorf("%w: payload abstracts to amount %d, want > 0", ErrApp, amt)
	}
	return amt, nil
}

// balance is the node's bal (TLA+ LocalState.bal): the application's
// Balance, or the message count abstraction of an opaque one.
func (n *Node) balance() int64 {
	return restoredBalance(n.app, spec.LocalState{Sent: n.sent, Rcvd: n.rcvd})
}
