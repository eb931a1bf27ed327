package core

import "github.com/markerwave/markerwave/spec"

// App is the application a Node runs. The core calls it only from the
// step that owns the node, never concurrently. Every method that returns
// an error must leave the application's state unchanged when it does.
type App interface {
	// Capture encodes the application's state, for a local snapshot.
	Capture() ([]byte, error)
	// Restore replaces the application's state with a captured one.
	Restore(state []byte) error
	// Send is the local effect of sending payload to peer to (a bank
	// debits). It may refuse, e.g. for insufficient funds.
	Send(to spec.ProcID, payload []byte) error
	// Apply is the effect of receiving payload from peer from.
	Apply(from spec.ProcID, payload []byte) error
	// Balance abstracts the state to the spec's bal (TLA+ LocalState.bal).
	Balance() int64
	// Amount abstracts a payload to the spec's amount (TLA+ amt); it must be
	// positive for a well-formed payload and an error otherwise.
	Amount(payload []byte) (int64, error)
}
