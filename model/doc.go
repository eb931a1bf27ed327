// Package model is an executable mirror of tla/ChandyLamport.tla and its
// variant modules, and an explicit-state model checker for it that reads
// TLC's own model files and reproduces TLC's state counts.
//
// # Reading it beside the spec
//
// State has one field per TLA+ variable (proc, chan, nSent, got, recorded,
// recProc, recChan, recMsgs, cutSent, cutGot, pre, post), with functions
// over Proc, Chan and Snap stored as slices by process, channel and
// snapshot index (the sorted order of spec.Topology and Config.Snap).
// Every TLA+ action is a function of the same name and parameters that
// returns the successor, or a *NotEnabled error naming the conjunct of the
// action that is false (with its .tla line) and what the state holds
// instead, leaving its input untouched: Init, SendApp, RecvApp, RecvAppAt,
// Initiate, RecvMarker, RecvMarkerAt, and the variants' RecvAppNoRecord
// and RecvMarkerNoForward, Lose (tla/ChandyLamportLossy.tla), and those
// of the faults module (below). Each action's enabling conjuncts are
// written once (enabledSendApp, enabledRecvAt, enabledInitiate); the
// explorer reads them as an allocation-free Conjunct. The helper
// operators are mirrored too: the pure ones exported (ShadowSend, ShadowRecv, SentBeforeCut, InitApp, CurrentApp,
// RecordedApp), the ones that write part of a successor unexported (postRecv,
// consume, recordInFlight, recordState, withMarkers). So is every
// property (TypeOK, ConsistentCut, ExactChannelState, Conservation,
// SnapshotReachable, CurrentReachable, ChandyLamportTheorem,
// StableCatalogue, SnapshotDone for SnapshotsComplete) and Initiated and
// Complete. Each doc comment gives the line numbers of its TLA+
// definition. Next lists the enabled action instances in TLC's order.
//
// States are persistent, as the explorer needs. A replay, which keeps
// only its current state, steps an InPlace state instead (the same
// actions update its slices in place) and checks the invariants with a
// Watch (only the terms each step changed), so that its cost per step
// does not grow with the number of processes or channels.
//
// # Checking
//
// In order: build a Config, with NewConfig from Constants or with
// Load from a TLC model (tla/MCRing.cfg and the module
// tla/MCRing.tla beside it); then Explore searches its state graph
// with the search engine shared by every specification (model/engine),
// breadth-first, in parallel, keeping each distinct state once as its
// canonical encoding (Encode) with a parent index, and reports TLC's
// numbers (states generated, distinct states, depth) and a shortest
// counterexample on violation (Result). Options bound the search
// (MaxStates, MaxMemory), cancel it (Stop) and report progress (a
// callback: the package prints nothing); Result.Stop says whether the
// search covered every state. Options.Fingerprint stores 64-bit
// fingerprints instead of encodings, for models too large for memory
// (see model/engine). Simulate checks random behaviours instead.
// The command line is "markerwave check --model tla/MCRing.cfg"
// (cmd/markerwave/check.go).
//
// # Liveness without a tableau
//
// SnapshotsComplete (tla/ChandyLamport.tla line 355) is checked without a
// tableau or an SCC search, by an argument specific to this state graph:
//
//  1. Every action strictly decreases the measure
//     (unspent budget, unrecorded (snapshot, process) pairs, messages in
//     channels) in the lexicographic order on N^3: SendApp spends one unit
//     of budget; RecvApp, RecvAppAt, RecvAppNoRecord and case 2 of the
//     marker rules take one message off a channel and change neither of
//     the first two (so does Lose, which loses one); Initiate and case 1
//     of the marker rules record one more process for a snapshot
//     (spending no budget). So the reachable
//     state graph is a DAG, every behaviour takes finitely many
//     non-stuttering steps, and from some point on it stutters in one final
//     state F forever. The explorer asserts this measure decrease on every
//     transition it computes, and fails if it ever does not hold.
//  2. The specification's fairness is weak fairness on every receive action
//     (RecvApp and RecvMarker for Spec, lines 257-258, and SpecLossy, whose Lose
//     is not fair; RecvApp and RecvMarkerNoForward for SpecNoForward);
//     SpecNonFIFO and SpecNoRecord have none. A behaviour stuttering
//     forever in F is fair iff no fair action is enabled in F (an enabled one would be continuously enabled
//     and never taken). Conversely every finite path from the initial state
//     to such an F, then stuttering, is a fair behaviour of the spec.
//  3. On a behaviour that ends stuttering in F, Initiated(s) ~> Complete(s)
//     holds iff Initiated(s) => Complete(s) holds in F: if Initiated(s)
//     held at some point, Complete(s) holds from there on at F, which is
//     repeated forever; if Initiated(s) holds in F but Complete(s) does
//     not, the suffix stuttering in F never reaches Complete(s) (and if
//     Initiated(s) never held, the implication is vacuous; Initiated is
//     monotone, so it never held iff it fails in F).
//
// Hence SnapshotsComplete holds of the spec iff every reachable state with
// no fair action enabled satisfies \A s \in Snap : Initiated(s) =>
// Complete(s). A counterexample is the shortest path to such a state,
// followed by stuttering. For SpecNonFIFO and SpecNoRecord (no fairness)
// every reachable state counts.
//
// # Failures: tla/ChandyLamportFaults.tla
//
// The faults module (model/faults.go) adds the variables alive, suspected,
// abortedBy, crashes, inc, base and restoredFrom (State's last fields,
// set only when Config.Faults()), the actions SendAppF, RecvAppF,
// InitiateF, RecvMarkerF (the algorithm's, taken by live processes only),
// DropMarker, Crash, Detect, FalseSuspect, Abort, Recover and RecoverAny,
// the invariants FaultTypeOK, MoneyConserved, ExactlyOnce,
// TheoremUnlessAborted, AbortSound, RecoveredFromComplete and
// RecoveryReachable, and the liveness property SnapshotsEnd (line 287):
// \A s \in Snap : Initiated(s) ~> (Complete(s) \/ Aborted(s)). The
// argument above is restated for it; each step still holds, with these
// changes.
//
//  1. A recovery gives back budget and un-records every snapshot, so the
//     measure grows two components in front and two before the messages:
//     (MaxRecover - inc, MaxCrash - crashes, unspent budget, unrecorded
//     pairs, unsuspected processes, snapshots not aborted, messages in
//     channels). Recover and RecoverAny decrease the first; Crash the
//     second and changes no earlier one; SendAppF, InitiateF and case 1 of
//     RecvMarkerF as before; Detect and FalseSuspect the fifth; Abort the
//     sixth; RecvAppF, case 2 of RecvMarkerF and DropMarker the last. Every
//     action decreases it strictly, so again every behaviour ends
//     stuttering in a final state F, and the explorer asserts the decrease
//     on every transition.
//  2. The fairness (FairReceive, FairAbort and FairDetect, lines 225-229)
//     is weak fairness on RecvAppF, RecvMarkerF and DropMarker (together
//     enabled iff some channel into a live process is non-empty), on Abort, and, in SpecFaults only, on Detect: F ends a
//     fair behaviour iff none of them is enabled in F. SpecNoDetector has
//     no Detect in its next-state relation and so no fairness on it
//     (weak fairness on an action that is never taken would leave no fair
//     behaviour with a crash at all, and the property would hold
//     vacuously). SpecRecoverAny has no fairness.
//  3. Initiated and Ended(s) == Complete(s) \/ Aborted(s) are monotone
//     within an incarnation, and Recover is enabled only when no snapshot
//     is pending (line 191). So if Initiated(s) holds at some point, then
//     either a recovery follows, and Ended(s) held in the state it was
//     taken from, or none does, and Initiated(s) holds up to F, where
//     Ended(s) must then hold. Conversely a path to an F with a pending
//     snapshot, then stuttering, violates SnapshotsEnd.
//
// Hence SnapshotsEnd holds of SpecFaults and SpecNoDetector iff no
// reachable state with no fair action enabled has a pending snapshot
// (SnapshotEnded). Step 3 needs the guard of Recover: it would not hold
// for RecoverAny, which may roll back a pending snapshot, so NewConfig
// accepts SnapshotsEnd for the faults specifications only and
// SnapshotsComplete (which an abort or a recovery falsifies) for the
// others only; no model checks SnapshotsEnd of SpecRecoverAny. Why F has
// no pending snapshot in SpecFaults: every crashed process is suspected
// (Detect), every suspected one has finished its part of every pending
// snapshot (Abort), and every channel into a live process is empty, so
// the failure-free argument applies to the live processes and the crashed
// ones have already done their part. SpecNoDetector's counterexample is a
// crash before the crashed process records (MCFaultsNoDetector).
package model
