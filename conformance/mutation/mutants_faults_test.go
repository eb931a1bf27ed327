package mutation

import (
	"regexp"

	"github.com/markerwave/markerwave/spec"
)

func init() { mutants = append(mutants, faultMutants...) }

// faultsLockstep runs the lockstep test of the failure handling
// (conformance/lockstep_faults_test.go) with the mutation run's seed.
var faultsLockstep = goTest{Pkg: "./conformance", Tests: []string{"TestLockstepFaults"}, Args: lockstepArgs}

// faultScenarios replays the scenarios of traces/, the crash-abort runs
// among them (conformance/fault_scenarios_test.go).
var faultScenarios = goTest{Pkg: "./conformance", Tests: []string{"TestScenarios"}}

// auditsCrashAbortAsEnabled: the audit of the crash-abort run, rebuilt
// with the mutant, stops at a step whose action is not enabled in the
// faults spec (the replay of conformance/faultreplay.go).
var auditsCrashAbortAsEnabled = scenarioProp("conforms/crash-abort.jsonl", spec.CheckEnabled)

// faultMutants: bugs of the failure handling in impl/core (the node's
// share of tla/ChandyLamportFaults.tla: SendAppF, Abort, DropMarker) and
// impl/runtime (the failure detector and the aborts it causes).
var faultMutants = []mutant{
	{
		// Tells apart: a send to a peer the node suspects; the model's
		// SendAppF is not enabled (q \notin suspected) and the mutant
		// sends, debiting the sender.
		Name: "core-send-to-suspected",
		Rule: "a node sends no transfer to a peer it suspects (SendAppF), and debits nothing",
		Doc:  "SendApp no longer checks the suspicion",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tif n.nSusp > 0 && n.suspected[n.topo.ProcIndex(to)] {\n",
			New:  "\tif false && n.nSusp > 0 { // MUTANT core-send-to-suspected\n",
		}},
		Runs: []goTest{faultsLockstep, {Pkg: "./impl/core", Tests: []string{"TestSendToSuspectedRefusedNothingDebited"}}},
		Expect: []expect{
			outputHas("TestLockstepFaults", "a transfer to a suspected peer is made", regexp.MustCompile(`q \\notin suspected[^\n]*; the implementation sent`)),
			outputHas("TestSendToSuspectedRefusedNothingDebited", "the send to the suspected peer succeeds", regexp.MustCompile(`Expected error with "receiver suspected" in chain but got nil`)),
		},
	},
	{
		// Tells apart: an abort of a snapshot the node is recording; the
		// node keeps its recording (and goes on recording messages) after
		// the abort.
		Name: "core-abort-keeps-recording",
		Rule: "an abort releases the snapshot's recording buffers",
		Doc:  "Abort retires the id but keeps the recording",
		Patches: []patch{{
			File: "impl/core/faults.go",
			Old:  "\tif st := n.snaps[s]; st != nil {\n\t\tn.discard(st)\n\t}\n",
			New:  "\t// MUTANT core-abort-keeps-recording: the recording is not released\n",
		}},
		Runs: []goTest{faultsLockstep},
		Expect: []expect{outputHas("TestLockstepFaults", "a live node still holds an aborted snapshot's recording",
			regexp.MustCompile(`snapshot \d+ is aborted, P\d still has it \w+ \(recording held: true\)`))},
	},
	{
		// Tells apart: a marker of a snapshot the node aborted before
		// recording it; the model drops it (DropMarker) and the mutant
		// records the snapshot and forwards markers.
		Name: "core-abort-takes-marker",
		Want: spec.CheckEnabled,
		Rule: "a marker of an aborted snapshot is dropped (DropMarker)",
		Doc:  "markers of aborted snapshots are taken by the Receiving Rule",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tif n.aborted.has(s) {\n\t\treturn n.dropMarker(c, s, f.VC), nil\n\t}\n",
			New:  "\t// MUTANT core-abort-takes-marker: no DropMarker\n",
		}},
		Runs: []goTest{faultsLockstep, faultScenarios},
		Expect: []expect{
			outputHas("TestLockstepFaults", "a marker the model drops is received",
				regexp.MustCompile(`gave RecvMarker\([^)]*\) \[snap \d+\], the model takes DropMarker`)),
			auditsCrashAbortAsEnabled,
		},
	},
	{
		// Tells apart: a marker of a snapshot the node aborted; the node
		// drops it (no state changes) but logs the step as a receive by
		// the Receiving Rule, which the audit of its log must refuse:
		// RecvMarkerF is not enabled for a marker of an aborted snapshot
		// (line 85).
		Name: "core-drop-logged-as-receive",
		Want: spec.CheckEnabled,
		Rule: "a dropped marker is logged as DropMarker, never as RecvMarker",
		Doc:  "dropMarker logs its step as RecvMarker",
		Patches: []patch{{
			File: "impl/core/faults.go",
			Old:  "\tev := n.event(spec.DropMarker)\n",
			New:  "\tev := n.event(spec.RecvMarker) // MUTANT core-drop-logged-as-receive\n",
		}},
		Runs:   []goTest{faultScenarios},
		Expect: []expect{auditsCrashAbortAsEnabled},
	},
	{
		// Tells apart: a crash while a snapshot waits for the crashed
		// node's marker; the survivors suspect it but never abort the
		// snapshot, which stays pending.
		Name: "runtime-suspect-no-abort",
		Rule: "a suspicion aborts the snapshots waiting for the suspected peer",
		Doc:  "the detector suspects but aborts nothing",
		Patches: []patch{{
			File: "impl/runtime/detector.go",
			Old:  "\tfor _, s := range n.core.WaitingOn(q) {\n\t\tn.abort(s, i, now)\n\t}\n",
			New:  "\t// MUTANT runtime-suspect-no-abort\n",
		}},
		Runs: []goTest{runtimeUnit("TestCrashDetectedAbortedRefusedMemory")},
		Expect: []expect{outputHas("TestCrashDetectedAbortedRefusedMemory", "the snapshot waiting for the crashed node is not aborted",
			regexp.MustCompile(`no survivor aborted snapshot \d+`))},
	},
	{
		// Tells apart: a crashed peer; its silence never reaches the
		// mutant's threshold within the test, so it is never suspected.
		Name: "runtime-detector-timeout-ignored",
		Rule: "a peer silent for longer than the timeout is suspected (within DetectorConfig.Bound)",
		Doc:  "the detector waits a thousand timeouts",
		Patches: []patch{{
			File: "impl/runtime/detector.go",
			Old:  "time.Duration(d.silent[i]) >= d.cfg.silentTicks(d.ever[i]) {",
			New:  "time.Duration(d.silent[i]) >= 1000*d.cfg.silentTicks(d.ever[i]) { // MUTANT runtime-detector-timeout-ignored",
		}},
		Runs: []goTest{runtimeUnit("TestCrashDetectedAbortedRefusedMemory", "TestDetectorBoundProperty")},
		Expect: []expect{
			outputHas("TestDetectorBoundProperty", "a silent peer is not suspected within the bound",
				regexp.MustCompile(`a peer silent since \S+ is not suspected by`)),
			outputHas("TestCrashDetectedAbortedRefusedMemory", "the crashed node is not suspected",
				regexp.MustCompile(`not within [\d.]+m?s: P\d suspects P3`)),
		},
	},
}
