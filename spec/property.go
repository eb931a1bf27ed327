package spec

import (
	"slices"
	"strings"
)

// Property names a property of tla/ChandyLamport.tla, or one of the
// checks by which a trace is compared with the spec's behaviours. Every
// layer names properties with these constants: the model's invariants, the
// TLC model files and the manifest, the conformance replay and its audit
// report, the scenarios and the mutants. The string is the TLA+ name.
type Property string

// The spec's properties, with the lines of tla/ChandyLamport.tla that
// define them.
const (
	PropTypeOK               Property = "TypeOK"               // lines 267-281
	PropConsistentCut        Property = "ConsistentCut"        // lines 287-292: no orphan message
	PropExactChannelState    Property = "ExactChannelState"    // lines 297-302
	PropConservation         Property = "Conservation"         // lines 306-309
	PropSnapshotReachable    Property = "SnapshotReachable"    // lines 317-319: the theorem's first half
	PropCurrentReachable     Property = "CurrentReachable"     // lines 321-323: the theorem's second half
	PropChandyLamportTheorem Property = "ChandyLamportTheorem" // line 325
	PropStableCatalogue      Property = "StableCatalogue"      // lines 344-352
	PropSnapshotsComplete    Property = "SnapshotsComplete"    // line 355: liveness, Initiated(s) ~> Complete(s)
)

// The properties of tla/ChandyLamportFaults.tla (crashes, a failure
// detector, aborts and rollback recovery), with its lines.
const (
	PropFaultTypeOK           Property = "FaultTypeOK"           // lines 245-254
	PropMoneyConserved        Property = "MoneyConserved"        // line 258: conserved across crashes and recoveries
	PropExactlyOnce           Property = "ExactlyOnce"           // lines 262-265: no transfer applied twice or lost
	PropTheoremUnlessAborted  Property = "TheoremUnlessAborted"  // lines 269-273: the theorem for every snapshot not aborted
	PropAbortSound            Property = "AbortSound"            // line 276: an aborted snapshot never completes
	PropRecoveredFromComplete Property = "RecoveredFromComplete" // line 280: never recovered from an aborted snapshot
	PropRecoveryReachable     Property = "RecoveryReachable"     // line 284: the rollback theorem
	PropSnapshotsEnd          Property = "SnapshotsEnd"          // line 287: liveness, Initiated(s) ~> Complete(s) \/ Aborted(s)
)

// The checks that compare a trace with the spec's behaviours step by step.
// They are not TLA+ definitions: together they say that the trace is a
// behaviour of Next (tla/TraceChandyLamport.tla asks TLC the same).
const (
	// CheckWellFormed: an event names known processes and channels.
	CheckWellFormed Property = "WellFormed"
	// CheckEnabled: the event's action is enabled in the model.
	CheckEnabled Property = "Enabled"
	// CheckMessage: the event's message is the model's (SendApp's seq,
	// RecvApp's amount and seq, RecvMarker's snapshot and case).
	CheckMessage Property = "Message"
	// CheckState: after a step, the model's state of the event's process
	// equals the state the event reports.
	CheckState Property = "State"
	// CheckRecordedState: a recorded snapshot the implementation reports
	// equals the model's recorded state once the snapshot is complete.
	CheckRecordedState Property = "RecordedState"
	// CheckCompleteClaim: the implementation reports a snapshot complete
	// exactly when its events complete it (every process recorded, every
	// channel's marker received).
	CheckCompleteClaim Property = "Complete"
	// CheckFIFO: a transport's channel behaves as a linearizable FIFO
	// queue (conformance/fifo, with porcupine).
	CheckFIFO Property = "FIFO"
)

// Invariants are the spec's state invariants in the order a replay checks
// them after every step (the theorem's halves are checked as the whole).
var Invariants = []Property{
	PropTypeOK, PropConsistentCut, PropExactChannelState, PropConservation,
	PropChandyLamportTheorem, PropStableCatalogue,
}

// StateInvariants are every invariant a TLC model may name in its INVARIANT
// section, in the order of the spec.
var StateInvariants = []Property{
	PropTypeOK, PropConsistentCut, PropExactChannelState, PropConservation,
	PropSnapshotReachable, PropCurrentReachable, PropChandyLamportTheorem,
	PropStableCatalogue,
	PropFaultTypeOK, PropMoneyConserved, PropExactlyOnce, PropTheoremUnlessAborted,
	PropAbortSound, PropRecoveredFromComplete, PropRecoveryReachable,
}

// TemporalProperties are the properties a TLC model may name in its
// PROPERTY section.
var TemporalProperties = []Property{PropSnapshotsComplete, PropSnapshotsEnd}

// Faults reports whether p is defined by tla/ChandyLamportFaults.tla
// (and so checked only of its specifications).
func (p Property) Faults() bool {
	switch p {
	case PropFaultTypeOK, PropMoneyConserved, PropExactlyOnce, PropTheoremUnlessAborted,
		PropAbortSound, PropRecoveredFromComplete, PropRecoveryReachable, PropSnapshotsEnd:
		return true
	}
	return false
}

// IsInvariant reports whether p is one of StateInvariants.
func (p Property) IsInvariant() bool { return slices.Contains(StateInvariants, p) }

// IsTemporal reports whether p is one of TemporalProperties.
func (p Property) IsTemporal() bool { return slices.Contains(TemporalProperties, p) }

// InSpec reports whether p is defined in tla/ChandyLamport.tla or
// tla/ChandyLamportFaults.tla (rather than a step check).
func (p Property) InSpec() bool { return p.IsInvariant() || p.IsTemporal() }

// JoinProperties renders ps as "A, B, C".
func JoinProperties(ps []Property) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// The properties of tla/BarrierSnapshots.tla (aligned barrier snapshots
// and unaligned checkpoints on a dataflow graph), with its lines. The
// Barrier prefix keeps them apart from the Chandy-Lamport properties they
// restate for dataflows.
const (
	PropBarrierTypeOK            Property = "BarrierTypeOK"            // lines 318-330
	PropBarrierConsistentCut     Property = "BarrierConsistentCut"     // lines 335-336: no record taken before the receiver's cut that was sent after the sender's
	PropBarrierExactChannelState Property = "BarrierExactChannelState" // lines 341-344
	PropAlignedNoChannelState    Property = "AlignedNoChannelState"    // lines 348-349: aligned records channel state on back-edges only
	PropBarrierSnapshotReachable Property = "BarrierSnapshotReachable" // lines 353-355: the theorem
	PropBarrierExactlyOnce       Property = "BarrierExactlyOnce"       // lines 360-362: the sink's output, restored or not
	PropBarriersComplete         Property = "BarriersComplete"         // line 366: liveness, Injected ~> Complete
)

// BarrierInvariants are the state invariants of tla/BarrierSnapshots.tla,
// in the order of the spec.
var BarrierInvariants = []Property{
	PropBarrierTypeOK, PropBarrierConsistentCut, PropBarrierExactChannelState,
	PropAlignedNoChannelState, PropBarrierSnapshotReachable, PropBarrierExactlyOnce,
}

// BarrierTemporal are the temporal properties of tla/BarrierSnapshots.tla.
var BarrierTemporal = []Property{PropBarriersComplete}

// The properties tla/BarrierAdaptive.tla adds (an aligned checkpoint that
// switches to unaligned on a timeout), with its lines.
const (
	PropAdaptiveTypeOK             Property = "AdaptiveTypeOK"             // lines 216-221
	PropUnswitchedNoChannelState   Property = "UnswitchedNoChannelState"   // lines 227-228: AlignedNoChannelState per operator
	PropForceAlignedNoChannelState Property = "ForceAlignedNoChannelState" // line 231
	PropReportedTypeTaken          Property = "ReportedTypeTaken"          // line 234: the type reported is the type taken (FLINK-31588)
)

// AdaptiveInvariants are the state invariants tla/BarrierAdaptive.tla
// adds to BarrierInvariants, in the order of the spec.
var AdaptiveInvariants = []Property{
	PropAdaptiveTypeOK, PropUnswitchedNoChannelState, PropForceAlignedNoChannelState, PropReportedTypeTaken,
}

// AdaptiveSpecInvariants are the invariants that hold of
// tla/BarrierAdaptive.tla's SpecAdaptive, as its models list them (the
// MCBarrierAdaptive*.cfg): BarrierInvariants with AdaptiveTypeOK for
// BarrierTypeOK and, for AlignedNoChannelState (which a switch breaks),
// its per-operator form UnswitchedNoChannelState, then
// ForceAlignedNoChannelState and ReportedTypeTaken.
var AdaptiveSpecInvariants = []Property{
	PropAdaptiveTypeOK, PropBarrierConsistentCut, PropBarrierExactChannelState,
	PropUnswitchedNoChannelState, PropForceAlignedNoChannelState, PropReportedTypeTaken,
	PropBarrierSnapshotReachable, PropBarrierExactlyOnce,
}

// PropSnapshotRefinement is the refinement of tla/BarrierSnapshots.tla
// (lines 369-397): Abstract!SSpec, tla/ConsistentSnapshot.tla under the
// mapping. TLC checks it; the Go explorer does not evaluate it.
const PropSnapshotRefinement Property = "SnapshotRefinement"

// ManifestProperties are every property a TLC model of tla/ may name
// (tla/manifest.schema.json lists the same): those of the Chandy-Lamport
// modules, then those of tla/BarrierSnapshots.tla, then those of
// tla/BarrierAdaptive.tla, then those of tla/BarrierSink.tla
// (barrier_sink.go), then the refinement.
var ManifestProperties = slices.Concat(StateInvariants, TemporalProperties, BarrierInvariants, BarrierTemporal,
	AdaptiveInvariants, SinkInvariants, SinkTemporal, []Property{PropSnapshotRefinement})
