// Package barrier is the Go model of tla/BarrierSnapshots.tla: barrier
// snapshots of a dataflow graph (Carbone et al., "Lightweight
// Asynchronous Snapshots for Distributed Dataflows", 2015), aligned (ABS,
// with the cyclic variant's back-edge logging) or unaligned, a restore
// after the snapshot completed, and the broken variants SpecNoBlock,
// SpecNoLog, SpecNoPersist and SpecAlignAll. It mirrors the spec action for action, as
// package model mirrors tla/ChandyLamport.tla, and is searched by the
// same engine (model/engine), with TLC's counts on every model of the
// manifest (parity_test.go).
//
// It mirrors tla/BarrierAdaptive.tla too (adaptive.go): a checkpoint that
// starts aligned and switches to unaligned on a timeout (TimeoutV while
// aligning, TimeoutOutV when its barrier waits in a full output buffer), with
// force-aligned edges, the reported snapshot type, and the broken variants
// SpecAdaptiveNoPersist, SpecAdaptiveForceSwitch, SpecAdaptiveLateTimeout
// and SpecAdaptiveStaleType. The refinement SnapshotRefinement
// (tla/ConsistentSnapshot.tla) is TLC's alone: Load accepts it and lists
// it in Config.Unchecked, and the manifest says so (go_unchecked).
//
// It mirrors tla/BarrierSink.tla too (sink*.go): a two-phase-commit sink
// writing the output into an external store over a sequence of
// checkpoints (SinkConfig, SinkState, SinkExplore, LoadSink), with its
// own actions wrapping the base ones, and the broken variants
// SpecSinkArrival, SpecSinkNoAbort, SpecSinkForget, SpecSinkSilent and
// SpecSinkNoNotify. Its liveness property CompleteCommitted is checked by
// the argument below, extended in sink_explore.go.
//
// To check a model, in order:
//
//  1. Load a TLC model file (tla/MCBarrier*.cfg and its module): Load, or
//     NewConfig on Constants built in Go.
//  2. Explore it: the counts, as TLC counts them, and the first violated
//     invariant with a shortest counterexample (Violation.Trace: each step
//     labelled as TLC labels it).
//  3. To step by hand: Init, then Action.Apply (a *NotEnabled names the
//     false conjunct and its line in the .tla), or Next for every enabled
//     instance; the invariants are InvariantByName's.
//
// # Liveness without a tableau
//
// BarriersComplete (Injected ~> Complete) is checked as package model
// checks SnapshotsComplete:
//
//  1. Every action strictly decreases the measure (1 if not restored;
//     records the sources have yet to emit; nodes that have not recorded;
//     the ProcessV steps the queued records still need to reach the sink;
//     barriers queued; nodes that have not switched) in the lexicographic
//     order: Restore the first; Emit
//     the second; InjectV, and RecvBarrierV when it records, the third
//     (changing neither earlier one); ProcessV the fourth (a record moves
//     one step on its fixed route); RecvBarrierV otherwise the fifth;
//     TimeoutV, which records, the third; TimeoutOutV, which only moves
//     barriers forward and switches its node (no step unswitches one), the
//     sixth. So every behaviour ends
//     stuttering in a final state F. When it checks BarriersComplete the
//     explorer asserts the decrease on every transition it computes (a
//     broken variant need not keep it: SpecAdaptiveLateTimeout's late
//     timeout records nobody and sends barriers).
//  2. FairnessV is weak fairness on InjectV, ProcessV and RecvBarrierV
//     (FairnessA the same; a timeout needs none):
//     a behaviour stuttering in F is fair iff none of them is enabled in
//     F, and every path from Init to such an F, then stuttering, is a fair
//     behaviour.
//  3. Injected and Complete never become false again (Restore needs
//     Complete and leaves the recording alone), so Injected ~> Complete
//     holds on a fair behaviour iff Injected => Complete holds in its
//     final state.
//
// So the property holds iff every reachable state with no fair action
// enabled satisfies Injected => Complete; the explorer checks that in
// every state (engine.Verdict.Live).
package barrier
