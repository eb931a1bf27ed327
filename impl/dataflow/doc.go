// Package dataflow is a deterministic, sans-IO core for barrier snapshots
// of a dataflow graph (Carbone et al., "Lightweight Asynchronous
// Snapshots for Distributed Dataflows", 2015): sources, operators and a
// sink with bounded buffers, and the aligned (ABS, with the cyclic
// variant's back-edge logging) or unaligned protocol, chosen per graph,
// or the adaptive one of tla/BarrierAdaptive.tla (adaptive.go: aligned,
// and an operator whose alignment times out switches to unaligned:
// Timeout, which its runtime's timer calls; force-aligned edges never
// switch). Its steps mirror the actions of tla/BarrierSnapshots.tla one
// for one: Emit, Inject, Process and RecvBarrier, and Restore (and
// Timeout, tla/BarrierAdaptive.tla's); model/barrier is
// the same spec in Go, and conformance/barrier_lockstep_test.go steps
// both side by side. It has no goroutines, clocks, randomness or I/O.
//
// # Usage
//
// The caller owns the scheduling and the transport. In order:
//
//  1. Describe the graph (Graph: nodes, edges, back-edges, buffer
//     capacity, iterations, protocol) and check it with NewGraph.
//  2. Create one Node per node of the graph with New (or a Cluster of
//     them all with NewCluster).
//  3. Drive the sources: Emit puts the next record on the source's
//     output buffer (ErrNoRoom when it is full: backpressure, try again
//     later); Inject starts the snapshot (each source injects once).
//  4. Move items along the edges: a node's output buffers are the edges'
//     queues. Head(e) at the sender is the next item of edge e; hand it
//     to the receiver with Take (Process for a record, RecvBarrier for a
//     barrier); if the receiver accepts it, Pop(e) at the sender. A
//     refused step changes nothing and says why (errors.Is with
//     ErrBlocked: alignment holds the input; ErrNoRoom: the receiver's
//     output is full). Edges are FIFO: hand items over in order.
//  5. A node's Step has Recorded set when it recorded its state; once
//     Done, Part is its part of the snapshot (its state and its share of
//     the channel state). Collect the parts of every node into a
//     Snapshot; Channel(e) is edge e's recorded records.
//  6. To restart after a failure, Restore every node from a complete
//     Snapshot (RestoreCluster): each output buffer holds its edge's
//     recorded records, the sources emit again from their recorded
//     offsets, and the sink's output is the recorded one, so that running
//     on gives the output of a run without failure (exactly once).
//
// # Successive snapshots
//
// The spec has one snapshot. With Graph.Successive the sources inject
// snapshot after snapshot (Inject again: ids 1, 2, ...; a barrier carries
// its id), each a repetition of the spec's: a node starts snapshot k+1
// (its bar, recorded, recChan and logged channel state back to Init's,
// its own state and buffers carrying on) when barrier k+1 reaches it or
// it injects it, and only once its part of snapshot k is complete (else
// RecvBarrier refuses with ErrPrevious and the input waits). Barriers are
// FIFO on every edge, an unaligned barrier overtaking records but never
// an earlier barrier, so on each node and each edge the steps of snapshot
// k+1 follow those of k and each snapshot is a run of the spec's actions
// from the state the previous one left. Collect each node's Part when it
// is Done (Part.Snap says of which snapshot); any complete one restores.
package dataflow
