package mutation

import "regexp"

func init() { mutants = append(mutants, runtimeMutants...) }

var (
	// runtimeConformance runs the conformance tests of impl/runtime's
	// collection, restore and baseline (conformance/runtime_*_test.go).
	runtimeConformance = func(tests ...string) goTest { return goTest{Pkg: "./conformance", Tests: tests} }
	runtimeUnit        = func(tests ...string) goTest { return goTest{Pkg: "./impl/runtime", Tests: tests} }
)

// runtimeMutants: bugs of impl/runtime (goroutine nodes, the Collector,
// restore, the stop-the-world baseline, multi-process snapshot ids),
// none of them in impl/core, so TestLockstep cannot see them; each is
// killed by a test of the runtime's contract (impl/runtime/doc.go).
var runtimeMutants = []mutant{
	{
		// Tells apart: a complete snapshot that breaks an invariant of
		// the cluster; the original returns it with an *InvariantError,
		// the mutant returns it as if it held.
		Name: "runtime-invariants-unchecked",
		Rule: "the collector checks every complete snapshot against the application's invariants",
		Doc:  "Collector.Collect returns a complete snapshot without checking the invariants",
		Patches: []patch{{
			File: "impl/runtime/collector.go",
			Old:  "\tif err != nil || len(c.invariants) == 0 {\n",
			New:  "\tif err != nil || len(c.invariants) >= 0 { // MUTANT runtime-invariants-unchecked: invariants never checked\n",
		}},
		Runs: []goTest{runtimeUnit("TestCollectChecksInvariants")},
		Expect: []expect{outputHas("TestCollectChecksInvariants", "a snapshot breaking an invariant is returned as if it held",
			regexp.MustCompile(`the collector did not check the invariants: Collect returned <nil>`))},
	},
	{
		// Tells apart: a channel whose marker is followed at once by a
		// message already in the inbox; the node applies the message
		// before recording, so the recorded state counts a message its
		// sender recorded as unsent (or the channel state holds one sent
		// after the cut). The collector's cut check refuses the snapshot.
		Name: "runtime-marker-after-data",
		Rule: "a node delivers each channel's frames in arrival order, markers included",
		Doc:  "the node loop delivers an application frame already waiting in the inbox before the marker it just took (data first, for latency)",
		Patches: []patch{{
			File: "impl/runtime/node.go",
			Old:  "\tfor _, env := range batch {\n\t\tn.receive(env)\n\t}\n",
			New: "\tfor i, env := range batch { // MUTANT runtime-marker-after-data: data already waiting goes before the marker\n" +
				"\t\tif env.Frame.Kind == wire.KindMarker && i+1 < len(batch) && batch[i+1].Frame.Kind == wire.KindApp {\n" +
				"\t\t\tbatch[i], batch[i+1] = batch[i+1], env\n" +
				"\t\t\tenv = batch[i]\n" +
				"\t\t}\n" +
				"\t\tn.receive(env)\n" +
				"\t}\n",
		}},
		Runs: []goTest{runtimeConformance("TestRuntimeMemory")},
		Expect: []expect{outputHas("TestRuntimeMemory", "the collector refuses an inconsistent snapshot (or the run does not replay)",
			regexp.MustCompile(`the collector refused snapshot \d+|does not conform`))},
	},
	{
		// Tells apart: a restored node whose peer's first new message
		// reaches it before it re-delivered the recorded messages of that
		// channel; the core refuses the new message's seq and the channel
		// fails, or (no new traffic arrives) the recorded messages are
		// never delivered at all.
		Name: "runtime-restore-after-traffic",
		Rule: "a restored node re-delivers each channel's recorded messages before anything from the transport",
		Doc:  "the recorded messages are re-delivered lazily, after the first frame the transport delivers",
		Patches: []patch{
			{
				File: "impl/runtime/node.go",
				Old:  "\tfor _, env := range n.replay {\n\t\tn.deliver(env)\n\t}\n\tn.replay = nil\n\tn.cmu.Unlock()\n\tinbox := n.inbox.Ready()\n",
				New:  "\tn.cmu.Unlock()\n\tinbox := n.inbox.Ready() // MUTANT runtime-restore-after-traffic: replay after the first frame from the transport\n",
			},
			{
				File: "impl/runtime/node.go",
				Old:  "\tif n.deliver(env) {\n\t\tif env.Frame.Kind == wire.KindMarker {\n",
				New: "\tdelivered := n.deliver(env)\n" +
					"\tfor _, r := range n.replay {\n" +
					"\t\tn.deliver(r)\n" +
					"\t}\n" +
					"\tn.replay = nil\n" +
					"\tif delivered {\n\t\tif env.Frame.Kind == wire.KindMarker {\n",
			},
		},
		Runs: []goTest{runtimeConformance("TestRuntimeRestore")},
		Expect: []expect{outputHas("TestRuntimeRestore", "the restored cluster fails a channel on new traffic ahead of the recorded messages, or delivers them late",
			regexp.MustCompile(`restore: a channel of the restored cluster failed|restore: the first deliveries on \S+ are`))},
	},
	{
		// Tells apart: a stop-the-world round taken while application
		// messages are in flight: the baseline records their channels
		// empty, and the money in them is lost from the snapshot.
		Name: "runtime-stw-no-drain",
		Rule: "stop-the-world records the nodes only once no application message is in flight",
		Doc:  "StopTheWorld waits for the markers in flight to drain instead of the application messages",
		Patches: []patch{{
			File: "impl/runtime/cluster.go",
			Old:  "\tfor c.stats.AppSent.Load() != c.stats.AppDelivered.Load() {\n",
			New:  "\tfor c.stats.MarkersSent.Load() != c.stats.MarkersDelivered.Load() { // MUTANT runtime-stw-no-drain: waits for the wrong frames\n",
		}},
		Runs: []goTest{runtimeConformance("TestRuntimeStopTheWorld")},
		Expect: []expect{outputHas("TestRuntimeStopTheWorld", "a stop-the-world snapshot records a channel empty that holds messages at its capture cut",
			regexp.MustCompile(`stop-the-world snapshot \d+ recorded \S+ empty, but when the nodes were captured`))},
	},
	{
		// Tells apart: an incomplete snapshot where a process recorded
		// but one of its incoming channels still waits for its marker:
		// the error names no open channel into it.
		Name: "runtime-incomplete-open",
		Rule: "an IncompleteError lists every channel whose recording never closed",
		Doc:  "Collect's description lists the open channels only of processes that never recorded",
		Patches: []patch{{
			File: "impl/runtime/collector.go",
			Old:  "\t\tif pr != nil && pr.closed[c.inOff[i]+k] {\n",
			New:  "\t\tif pr != nil && (pr.recorded[i] || pr.closed[c.inOff[i]+k]) { // MUTANT runtime-incomplete-open: a recorded process has no open channel\n",
		}},
		Runs: []goTest{runtimeUnit("TestCollectorNamesExactlyWhatIsMissing"), runtimeConformance("TestRuntimeCollectIncomplete")},
		Expect: []expect{
			outputHas("TestCollectorNamesExactlyWhatIsMissing", "the IncompleteError does not name exactly what is missing",
				regexp.MustCompile(`IncompleteError does not name exactly what is missing`)),
			outputHas("TestRuntimeCollectIncomplete", "the verdict is not what the model lacks after the run's events",
				regexp.MustCompile(`Collect's verdict on snapshot \d+ \(gated [^)]*\) is not what the model lacks`)),
		},
	},
	{
		// Tells apart: a second Collect of a snapshot already handed out:
		// it waits out its deadline and reports everything missing
		// instead of ErrCollected.
		Name: "runtime-collected-twice",
		Rule: "Collect hands a snapshot out once; later calls get ErrCollected",
		Doc:  "Collect forgets the snapshot's progress without marking it collected",
		Patches: []patch{{
			File: "impl/runtime/collector.go",
			Old:  "\t\tc.retire(s)\n\t\tg, err := snapshot.Assemble(c.topo, s, pr.parts)\n",
			New:  "\t\tdelete(c.snaps, s) // MUTANT runtime-collected-twice: not marked collected\n\t\tg, err := snapshot.Assemble(c.topo, s, pr.parts)\n",
		}},
		Runs: []goTest{runtimeUnit("TestCollectorNamesExactlyWhatIsMissing")},
		Expect: []expect{outputHas("TestCollectorNamesExactlyWhatIsMissing", "a second Collect does not get ErrCollected",
			regexp.MustCompile(`second Collect of snapshot \d+: .*, want ErrCollected|was collected, yet a later report makes it pending again`))},
	},
	{
		// Tells apart: a report arriving for a snapshot given up on
		// (Forget) or collected: it re-creates the snapshot's progress,
		// which stays pending for ever.
		Name: "runtime-late-report",
		Rule: "reports of a snapshot collected or forgotten are dropped",
		Doc:  "Add takes a part of a snapshot already collected or forgotten",
		Patches: []patch{{
			File: "impl/runtime/collector.go",
			Old:  "\tif c.collected[part.Snap] {\n\t\treturn\n\t}\n\tpr := c.get(part.Snap)\n",
			New:  "\tpr := c.get(part.Snap) // MUTANT runtime-late-report: parts of finished snapshots are kept\n",
		}},
		Runs: []goTest{runtimeUnit("TestCollectorNamesExactlyWhatIsMissing")},
		Expect: []expect{outputHas("TestCollectorNamesExactlyWhatIsMissing", "a forgotten (or collected) snapshot is pending again after a late part",
			regexp.MustCompile(`was (forgotten|collected), yet a later report makes it pending again`))},
	},
	{
		// Tells apart: a restore whose run tags may start at the restored
		// snapshot's own tag: new ids at or below the restored id, which
		// the restored nodes retire (or stored ids of that tag); visible
		// when the window's last tag is the only free one (the mutant's
		// window misses it) or the restored tag is chosen.
		Name: "runtime-runtag-restore",
		Rule: "a restored run numbers its snapshots above the restored snapshot's id",
		Doc:  "runTag's restore window starts at the restored snapshot's tag instead of the next one",
		Patches: []patch{{
			File: "impl/runtime/process.go",
			Old:  "\tlo = uint64(from)>>SnapSeqBits + 1\n",
			New:  "\tlo = uint64(from) >> SnapSeqBits // MUTANT runtime-runtag-restore: off by one\n",
		}},
		Runs: []goTest{runtimeUnit("TestRunTagOnRestore")},
		Expect: []expect{outputHas("TestRunTagOnRestore", "a restored run's tag is taken, not above the restored id, or missed",
			regexp.MustCompile(`runTag: runtime: no free snapshot ids|are not above the restored snapshot's|which the store holds ids of`))},
	},
}
