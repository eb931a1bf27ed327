// Package core is a deterministic, transport-agnostic Chandy-Lamport node.
// It has no goroutines, clocks, randomness or I/O: the caller drives each
// Node one step at a time, and each step returns the spec.Event it
// performed and the frames to send. The steps mirror the actions of
// tla/ChandyLamport.tla: SendApp, RecvApp, Initiate and RecvMarker, and a
// node's share of tla/ChandyLamportFaults.tla: Suspect, Abort and
// DropMarker.
//
// # Usage
//
// The caller owns the network, the scheduling and the storage. In order:
//
//  1. Create one Node per process with New, giving it the topology
//     (spec.Topology, the same at every node), its process id and its
//     application (an App: impl/app has a bank and a token ring). Restore
//     creates a node from a Checkpoint instead.
//  2. Feed it steps: SendApp when the application sends, Initiate to start
//     a snapshot here (each snapshot needs an id unique in the run), and
//     Deliver for every frame that arrives on one of its incoming
//     channels. A step that returns an error changed nothing; the error
//     says why (errors.Is with ErrUnknownChannel, ErrSeq, ErrApp, ...,
//     errors.As with *Error for the node, step and channel).
//  3. Send the frames of each Step.Out to their channels (wire.Envelope
//     names the channel), in the order returned. Step.Out is a buffer the
//     node reuses: it is valid until the node's next step, so copy the
//     envelopes (they are values) or the slice if you keep them longer. The algorithm assumes
//     reliable FIFO channels: every frame delivered, once, in the order
//     sent on its channel. Deliver refuses an application frame out of
//     order (ErrSeq); a marker out of order is not detectable and breaks
//     the snapshot.
//  4. Deliver the frames at the receivers, each channel in order. Steps of
//     different nodes may interleave in any order.
//  5. Collect local snapshots: a Step whose Completed is not 0 finished
//     this node's part of that snapshot. TakeCompleted hands out the
//     completed parts (LocalSnapshot: the recorded state and each incoming
//     channel's recorded messages) and releases them. A snapshot is
//     complete when every process has handed out its part; Cut and the
//     parts' states and channels make up the global state.
//  6. To restart from a snapshot, Restore each node from its part's
//     Checkpoint and re-deliver the part's recorded messages first.
//  7. Failures (tla/ChandyLamportFaults.tla) are detected by the caller;
//     the core acts on the verdicts. Suspect(q) when the caller's failure
//     detector suspects q (Unsuspect when it hears from q again): SendApp
//     to q is then refused before the application sees it (ErrSuspected).
//     Abort(s, q) for each snapshot that cannot complete because of q
//     (WaitingOn(q) lists those waiting for q's marker): the snapshot's
//     recording is released and its later markers are dropped
//     (DropMarker events).
//
// Events (Step.Event) carry vector clocks and per-node sequence numbers,
// so the per-node logs merge into one causal run (spec.MergeCausal) that
// the conformance suite replays against the model. A caller that records
// no trace sets Config.NoClocks: the node then keeps no vector clock,
// frames carry none, events carry no clock and no JSON payload, and
// SendApp and Deliver of an application message (recorded or not)
// allocate nothing in steady state. impl/runtime does so when it has no
// trace sink.
//
// impl/core/coretest runs this loop by hand, with one FIFO queue per
// channel, for tests and for experimenting with the core; impl/runtime
// runs it with goroutines over real transports.
//
// A Node is not safe for concurrent use. It keeps the payload slices it is
// given in frames and events (callers must not modify them afterwards) but
// copies payloads it records as channel state (into chunks of memory it
// allocates now and then and never writes again once a copy is in them).
package core
