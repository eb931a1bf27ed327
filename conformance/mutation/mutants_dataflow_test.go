package mutation

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

func init() { mutants = append(mutants, dataflowMutants...) }

// barrierRun is the barrier lockstep test on DAGs (where each mutant is
// caught; the cyclic one adds only time) and the audit of the traces the
// core writes, on random graphs (rapid, fixed seed; shrinking kept
// short, so that a caught mutant costs a few seconds).
var barrierRun = goTest{Pkg: "./conformance",
	Tests: []string{"TestBarrierLockstepDAG", "TestBarrierTraceAudit"},
	Args:  []string{"-rapid.checks=300", "-rapid.shrinktime=300ms"}}

var barrierTrace = regexp.MustCompile(`barrier trace written to (\S+\.jsonl)`)

// barrierLockstepFails: a barrier lockstep test fails: the core and
// model/barrier part ways (a step one takes and the other refuses, or
// different states, or a broken invariant).
var barrierLockstepFails = expect{
	Check:    "TestBarrierLockstepDAG",
	Observed: "the core and model/barrier part ways on a random graph",
	Find: func(out string) (string, error) {
		if strings.Contains(out, "--- FAIL: TestBarrierLockstepDAG ") {
			return "TestBarrierLockstepDAG fails", nil
		}
		return "", fmt.Errorf("TestBarrierLockstepDAG passes")
	},
}

// barrierAuditProp: TestBarrierTraceAudit fails, naming want, and the
// trace it wrote is rejected with want by conformance.AuditFile (what
// markerwave audit runs).
func barrierAuditProp(want spec.Property) expect {
	return expect{
		Check:    "TestBarrierTraceAudit + audit",
		Observed: fmt.Sprintf("the audit of the trace the core writes names %s", want),
		Find: func(out string) (string, error) {
			sec, ok := section(out, "TestBarrierTraceAudit")
			if !ok {
				return "", fmt.Errorf("TestBarrierTraceAudit did not run")
			}
			m := lockstepProperty.FindStringSubmatch(sec)
			if m == nil {
				return "", fmt.Errorf("TestBarrierTraceAudit names no property")
			}
			if spec.Property(m[1]) != want {
				return "", fmt.Errorf("TestBarrierTraceAudit names %s, want %s", m[1], want)
			}
			tm := barrierTrace.FindStringSubmatch(sec)
			if tm == nil {
				return "", fmt.Errorf("TestBarrierTraceAudit names no trace")
			}
			rep, err := conformance.AuditFile(tm[1], conformance.Options{})
			if err != nil {
				return "", fmt.Errorf("auditing the trace: %v", err)
			}
			if got := rep.Property(); got != want {
				return "", fmt.Errorf("audit of %s names %q, want %s:\n%s", tm[1], got, want, rep)
			}
			return fmt.Sprintf("TestBarrierTraceAudit: %s (markerwave audit of the trace it wrote: %s)", m[1], rep.Property()), nil
		},
	}
}

// dataflowMutant is a mutant of impl/dataflow: a barrier lockstep test
// must fail, and the audit of a trace the mutated core writes must name
// want.
func dataflowMutant(m mutant) mutant {
	m.Runs = []goTest{barrierRun}
	m.Expect = []expect{barrierLockstepFails, barrierAuditProp(m.Want)}
	return m
}

// dataflowMutants are the five breakages of the barrier protocols first
// tried by hand (README, "Barrier snapshots of a dataflow"). The comment
// before each Want says why the audit names it.
var dataflowMutants = []mutant{
	dataflowMutant(mutant{
		Name: "barrier-no-block",
		Rule: "aligned: block an input once its barrier has arrived, until the node records",
		Doc:  "the alignment block is gone: an aligned operator takes records from an input whose barrier has arrived before it records",
		Patches: []patch{{
			File: "impl/dataflow/node.go",
			Old:  "\treturn n.g.aligns() && !n.recorded && n.bar[e]\n",
			New:  "\treturn false // MUTANT barrier-no-block: alignment does not block\n",
		}},
		// The record taken after its input's barrier was sent after its
		// sender recorded, and is counted in the receiver's state: an
		// orphan (tla/BarrierSnapshots.tla's MCBarrierNoBlockCut).
		Want: spec.PropBarrierConsistentCut,
	}),
	dataflowMutant(mutant{
		Name: "barrier-no-persist",
		Rule: "unaligned: persist the output records the barrier overtakes",
		Doc:  "the records an unaligned barrier overtakes are not put in the node's part",
		Patches: []patch{{
			File: "impl/dataflow/node.go",
			Old:  "\t\t\tp.Overtaken[e] = over\n",
			New:  "\t\t\t_ = over // MUTANT barrier-no-persist: the overtaken records are not persisted\n",
		}},
		// The edge's channel state misses the overtaken records, sent
		// before the sender's cut and taken after the receiver's.
		Want: spec.PropBarrierExactChannelState,
	}),
	dataflowMutant(mutant{
		Name: "barrier-no-log",
		Rule: "log the records taken off an input that is recording (back-edges, unaligned inputs)",
		Doc:  "a record taken off a recording input is not logged",
		Patches: []patch{{
			File: "impl/dataflow/node.go",
			Old:  "\t\tn.logged[e] = append(n.logged[e], r)\n",
			New:  "\t\t_ = r // MUTANT barrier-no-log: the record is not logged\n",
		}},
		// The input's channel state misses the record.
		Want: spec.PropBarrierExactChannelState,
	}),
	dataflowMutant(mutant{
		Name: "barrier-record-first",
		Rule: "aligned: record only once every input that is not a back-edge has delivered its barrier",
		Doc:  "an aligned operator records on its first barrier, as an unaligned one does (without overtaking)",
		Patches: []patch{{
			File: "impl/dataflow/node.go",
			Old:  "\tcase !n.g.aligns() || n.g.aligned(n.id, n.bar):\n",
			New:  "\tcase n.g.Mode != Adaptive || n.g.aligned(n.id, n.bar): // MUTANT barrier-record-first: aligned records on the first barrier\n",
		}},
		// The node's part is in the trace at the step it records (its
		// first barrier), where the model's RecvBarrier records nothing:
		// the audit names the reported part at once. (Were the audit to
		// go on, the records it then takes off its other inputs before
		// their barriers are logged: AlignedNoChannelState, aligned
		// barriers recording channel state on a DAG edge.) The adaptive
		// mode keeps its rule, so that the first run rejected is aligned.
		Want: spec.CheckRecordedState,
	}),
	dataflowMutant(mutant{
		Name: "barrier-pending-done",
		Rule: "on recording, the inputs whose barrier has not arrived start recording",
		Doc:  "the inputs whose barrier has not arrived are marked done instead of recording",
		Patches: []patch{{
			File: "impl/dataflow/node.go",
			Old:  "\t\t\tn.recChan[d] = Recording\n",
			New:  "\t\t\tn.recChan[d] = Done // MUTANT barrier-pending-done\n",
		}},
		// Nothing is logged on them: the records in flight on them at the
		// cut are in no channel state.
		Want: spec.PropBarrierExactChannelState,
	}),
	// The adaptive mode (tla/BarrierAdaptive.tla): the four rules of the
	// switch, each a negative model there (MCBarrierAdaptiveNoPersist,
	// ForceSwitch, StaleType, LateTimeout) and each caught here by
	// TestBarrierLockstepAdaptive and the audit of the adaptive traces.
	adaptiveMutant(mutant{
		Name: "adaptive-switch-no-persist",
		Rule: "adaptive: a switched node persists the output records its barrier overtakes",
		Doc:  "the records a switched node's barrier overtakes are not put in its part",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\tn.record()\n\treturn n.observe(Step{Action: ActTimeout",
			New:  "\tn.record()\n\tclear(n.part.Overtaken) // MUTANT adaptive-switch-no-persist\n\treturn n.observe(Step{Action: ActTimeout",
		}},
		// The output edge's channel state misses the overtaken records,
		// sent before the sender's cut and taken after the receiver's
		// (TLC's MCBarrierAdaptiveNoPersist first reaches
		// BarrierExactlyOnce: the restore loses them.)
		Want: spec.PropBarrierExactChannelState,
	}),
	adaptiveMutant(mutant{
		Name: "adaptive-force-switch",
		Rule: "adaptive: a node feeding a force-aligned edge never switches (FLINK-33693)",
		Doc:  "Timeout ignores the force-aligned edges a node feeds",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\tcase n.g.feedsForceAligned(n.id):\n\t\treturn ErrFeedsForceAligned\n",
			New:  "\tcase false: // MUTANT adaptive-force-switch\n\t\treturn ErrFeedsForceAligned\n",
		}},
		// The audit names the step: the Timeout of a node feeding a
		// force-aligned edge is not enabled in SpecAdaptive (its false
		// conjunct, Out(n) \cap ForceAligned = {}, in the detail). The
		// shrunk run switches with an empty queue; with records queued
		// the barrier would overtake and persist them, the
		// ForceAlignedNoChannelState of MCBarrierAdaptiveForceSwitch.
		Want: spec.CheckEnabled,
	}),
	adaptiveMutant(mutant{
		Name: "adaptive-stale-type",
		Rule: "adaptive: a node reports the type of the snapshot it took (FLINK-31588)",
		Doc:  "a switched node reports the type decided before the switch, aligned",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\tn.reported = TypeUnaligned\n",
			New:  "\tn.reported = TypeAligned // MUTANT adaptive-stale-type\n",
		}},
		// The part says aligned, the node recorded before every barrier
		// arrived (MCBarrierAdaptiveStaleType).
		Want: spec.PropReportedTypeTaken,
	}),
	adaptiveMutant(mutant{
		Name: "adaptive-late-timeout",
		Rule: "adaptive: a timeout is acted on only while the node has not recorded",
		Doc:  "Timeout switches a node that already recorded, aligned",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\tcase n.recorded:\n\t\treturn ErrTimeoutRecorded\n",
			New:  "\tcase false: // MUTANT adaptive-late-timeout\n\t\treturn ErrTimeoutRecorded\n",
		}},
		// The node took an aligned snapshot and now reports unaligned.
		// (TLC's MCBarrierAdaptiveLateTimeout first reaches
		// BarrierConsistentCut: the state recorded again counts records
		// taken after the barriers.)
		Want: spec.PropReportedTypeTaken,
	}),
	// The timeout in the output buffers (TimeoutOut, after recording
	// aligned): its rules, each a negative model too
	// (MCBarrierAdaptiveOutNoPersist, OutForced, OutStaleType).
	adaptiveMutant(mutant{
		Name: "adaptive-out-no-persist",
		Rule: "adaptive: a barrier that times out in an output buffer persists the records it overtakes",
		Doc:  "TimeoutOut moves the barrier ahead of the queued records without putting them in the part",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\t\tp.Overtaken[e] = append(p.Overtaken[e], over...)\n",
			New:  "\t\t// MUTANT adaptive-out-no-persist\n",
		}},
		// The overtaken records, sent before the sender's cut and taken
		// after the receiver's, are in no channel state. (TLC's
		// MCBarrierAdaptiveOutNoPersist reaches BarrierExactlyOnce: the
		// restore loses them.)
		Want: spec.PropBarrierExactChannelState,
	}),
	adaptiveMutant(mutant{
		Name: "adaptive-out-force",
		Rule: "adaptive: a barrier on a force-aligned edge never overtakes its queue",
		Doc:  "TimeoutOut overtakes the queue of a force-aligned output too",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\t\tif !n.g.Edges[e].ForceAligned && len(n.ahead(e)) > 0 {\n",
			New:  "\t\tif len(n.ahead(e)) > 0 { // MUTANT adaptive-out-force\n",
		}},
		// The records the barrier overtook on the force-aligned edge are
		// its channel state (as TLC's MCBarrierAdaptiveOutForced); the
		// replay refuses the step too (SpecAdaptive's TimeoutOutV
		// leaves a force-aligned queue alone).
		Want: spec.PropForceAlignedNoChannelState,
	}),
	adaptiveMutant(mutant{
		Name: "adaptive-out-stale-type",
		Rule: "adaptive: a node whose barrier overtook its output buffer reports unaligned (FLINK-31588)",
		Doc:  "after TimeoutOut an operator still reports the aligned type it recorded with",
		Patches: []patch{{
			File: "impl/dataflow/adaptive.go",
			Old:  "\t\tn.reported = TypeUnaligned // its barrier overtook records\n",
			New:  "\t\tn.reported = TypeAligned // MUTANT adaptive-out-stale-type\n",
		}},
		// The part says aligned; the snapshot the node took is unaligned,
		// its barrier having overtaken records (MCBarrierAdaptiveOutStaleType).
		Want: spec.PropReportedTypeTaken,
	}),
}

// adaptiveRun is the adaptive barrier lockstep and the audit of the
// traces the core writes (a third of them adaptive), as barrierRun.
var adaptiveRun = goTest{Pkg: "./conformance",
	Tests: []string{"TestBarrierLockstepAdaptive", "TestBarrierTraceAudit"},
	Args:  []string{"-rapid.checks=300", "-rapid.shrinktime=300ms"}}

// adaptiveLockstepFails: TestBarrierLockstepAdaptive fails: the core and
// model/barrier's SpecAdaptive part ways.
var adaptiveLockstepFails = expect{
	Check:    "TestBarrierLockstepAdaptive",
	Observed: "the core and model/barrier's SpecAdaptive part ways on a random graph",
	Find: func(out string) (string, error) {
		if strings.Contains(out, "--- FAIL: TestBarrierLockstepAdaptive ") {
			return "TestBarrierLockstepAdaptive fails", nil
		}
		return "", fmt.Errorf("TestBarrierLockstepAdaptive passes")
	},
}

// adaptiveMutant is a mutant of the adaptive mode: the adaptive lockstep
// must fail, and the audit of a trace the mutated core writes must name
// want.
func adaptiveMutant(m mutant) mutant {
	m.Runs = []goTest{adaptiveRun}
	m.Expect = []expect{adaptiveLockstepFails, barrierAuditProp(m.Want)}
	return m
}
