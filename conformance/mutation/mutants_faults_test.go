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
	{
		// Tells apart: a suspicion on a topology that is not a complete
		// graph (a ring, a chord), where a node's in-neighbours are not
		// its out-neighbours: the detector watches the processes it
		// sends to, so the node cannot suspect the one it hears from,
		// and a snapshot waiting for that one's marker is never
		// aborted. On a complete graph the two sets are the same.
		Name: "runtime-detector-watches-out",
		Rule: "a node's detector watches, and suspects, its in-neighbours: the processes whose markers its snapshots wait for",
		Doc:  "the detector's peers are the node's out-neighbours",
		Patches: []patch{{
			File: "impl/runtime/detector.go",
			Old:  "\tfor i, c := range t.In(self) {\n\t\td.peers = append(d.peers, c.From)\n\t\td.inIdx[c.From] = i\n\t}\n",
			New:  "\tfor i, c := range t.Out(self) { // MUTANT runtime-detector-watches-out\n\t\td.peers = append(d.peers, c.To)\n\t\td.inIdx[c.To] = i\n\t}\n",
		}},
		Runs: []goTest{runtimeLockstep},
		// Which of the two the run shows first depends on its first
		// draws (a suspicion, or a Draining probe): both are the
		// detector's peers taken from the wrong side of the channels.
		Expect: []expect{outputHas("TestRuntimeLockstepFaults", "on a ring, the node that hears the suspected process cannot suspect it, or its graceful stop waits for its out-neighbours instead of the in-neighbours the spec names",
			regexp.MustCompile(`\S+, which hears \S+, cannot suspect it: .*not an in-neighbour|graceful stop waits for peers \[[^]]*\] and snapshots \[[^]]*\]; the spec's: peers \[[^]]*\] \(in-neighbours neither done nor suspected\)`))},
	},
	{
		// Tells apart: a process suspected (falsely, or crashed) after
		// its part of a pending snapshot arrived and its markers were
		// delivered: WaitsFor(s, q) is false, the spec does not abort s
		// and it completes; the mutant's Collector reports it aborted.
		Name: "runtime-collector-aborts-finished",
		Rule: "the Collector aborts a snapshot for a suspected process only while the snapshot lacks its part (WaitsFor)",
		Doc:  "a snapshot is reported aborted while any process is suspected, its part in or not",
		Patches: []patch{{
			File: "impl/runtime/collector.go",
			Old:  "\tfor i, p := range c.topo.Procs {\n\t\tif by := c.suspects[p]; len(by) > 0 && !pr.part(i) {",
			New:  "\tfor _, p := range c.topo.Procs { // MUTANT runtime-collector-aborts-finished\n\t\tif by := c.suspects[p]; len(by) > 0 {",
		}},
		Runs: []goTest{runtimeLockstep},
		Expect: []expect{outputHas("TestRuntimeLockstepFaults", "the Collector aborts a snapshot the spec does not abort (WaitsFor false)",
			regexp.MustCompile(`the Collector reports snapshot \d+ aborted .*aborts it for none of its causes \(WaitsFor\)`))},
	},
	{
		// Tells apart: a graceful stop after a crash or a false
		// suspicion: the node still counts the suspected peer among
		// those it waits for (a done frame that will never come), so a
		// drain waits out its whole timeout and names a peer unfinished.
		Name: "runtime-drain-waits-suspected",
		Rule: "a graceful stop waits only for in-neighbours neither done nor suspected",
		Doc:  "Draining lists every in-neighbour not done, suspected ones included",
		Patches: []patch{{
			File: "impl/runtime/detector.go",
			Old:  "if !d.done[i] && d.suspected[i].IsZero() {",
			New:  "if !d.done[i] { // MUTANT runtime-drain-waits-suspected",
		}},
		Runs: []goTest{runtimeLockstep},
		Expect: []expect{outputHas("TestRuntimeLockstepFaults", "Draining waits for a suspected peer",
			regexp.MustCompile(`graceful stop waits for peers \[[^\]]+\] and snapshots \[[^\]]*\]; the spec's: peers`))},
	},
	{
		// Tells apart: a stop-the-world begun while a transfer is
		// inside the transport's Send: the mutant hands frames to the
		// transport after releasing the core lock, so the pause does not
		// wait for it; the transfer is debited and not yet counted sent,
		// and the snapshot is short of it.
		Name: "runtime-stw-send-unlocked",
		Rule: "stop-the-world waits for a transfer inside the transport's Send (the send holds the core lock the pause takes)",
		Doc:  "SendApp hands its frames to the transport after releasing the core lock (a shorter critical section)",
		Patches: []patch{{
			File: "impl/runtime/node.go",
			Old:  "\tif !n.paused {\n\t\terr := n.sendApp(to, payload)\n\t\tn.cmu.Unlock()\n\t\treturn err\n\t}\n",
			New: "\tif !n.paused { // MUTANT runtime-stw-send-unlocked\n" +
				"\t\tif n.finished {\n\t\t\tn.cmu.Unlock()\n\t\t\treturn fmt.Errorf(\"runtime %s: send to %s: %w\", string(n.self), string(to), ErrFinished)\n\t\t}\n" +
				"\t\tstep, err := n.core.SendApp(to, payload)\n" +
				"\t\tif err != nil {\n\t\t\tn.cmu.Unlock()\n\t\t\treturn err\n\t\t}\n" +
				"\t\tout := make([]wire.Envelope, len(step.Out))\n" +
				"\t\tfor i, env := range step.Out {\n\t\t\tout[i] = wire.Envelope{Chan: env.Chan, Frame: env.Frame.Clone()}\n\t\t}\n" +
				"\t\tstep.Out = nil\n\t\tn.after(step)\n\t\tn.cmu.Unlock()\n" +
				"\t\tfor _, env := range out {\n\t\t\tn.send(env)\n\t\t}\n\t\treturn nil\n\t}\n",
		}},
		Runs: []goTest{runtimeConformance("TestRuntimeStopTheWorldMidSend")},
		Expect: []expect{outputHas("TestRuntimeStopTheWorldMidSend", "the baseline's snapshot misses the transfer inside Send",
			regexp.MustCompile(`stop-the-world snapshot \d+ begun while a transfer of 7 was inside the transport's Send does not conserve money`))},
	},
	{
		// Tells apart: a restored node that finds new frames already in
		// its inbox when its loop starts (a peer restored before it sent
		// at once): the mutant re-delivers the recorded messages through
		// the node's command queue, which the loop serves in any order
		// with the inbox, so a new frame can go first; the core refuses
		// its seq and the channel fails. TestRuntimeRestore, whose
		// traffic starts once the cluster is built, misses it.
		Name: "runtime-restore-replay-queued",
		Rule: "a restored node re-delivers each channel's recorded messages before any frame already waiting in its inbox",
		Doc:  "the recorded messages are re-delivered as commands of the node's loop, racing the inbox",
		Patches: []patch{{
			File: "impl/runtime/node.go",
			Old:  "\tfor _, env := range n.replay {\n\t\tn.deliver(env)\n\t}\n\tn.replay = nil\n\tn.cmu.Unlock()\n\tinbox := n.inbox.Ready()\n",
			New: "\treplay := n.replay // MUTANT runtime-restore-replay-queued\n\tn.replay = nil\n\tn.cmu.Unlock()\n" +
				"\tgo func() {\n\t\tfor _, env := range replay {\n\t\t\t_ = n.exec(false, func() { n.deliver(env) })\n\t\t}\n\t}()\n" +
				"\tinbox := n.inbox.Ready()\n",
		}},
		Runs: []goTest{runtimeConformance("TestRuntimeRestoreQueued")},
		Expect: []expect{outputHas("TestRuntimeRestoreQueued", "a new frame queued before the restored node started overtakes the recorded messages",
			regexp.MustCompile(`restore: a channel of the restored nodes failed|restore: the first deliveries on \S+ are`))},
	},
}

// runtimeLockstep runs the runtime-level fault lockstep
// (conformance/runtime_lockstep_*_test.go) with the mutation run's seed.
var runtimeLockstep = goTest{Pkg: "./conformance", Tests: []string{"TestRuntimeLockstepFaults"},
	Args: []string{"-rapid.seed=" + lockstepSeed(), "-rapid.shrinktime=3s", "-rapid.nofailfile"}}
