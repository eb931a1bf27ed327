package mutation

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

func init() { mutants = append(mutants, coreMutants...) }

// The lockstep test is a rapid property test: a fixed seed makes every run
// the same, and 500 random runs catch each mutant with a wide margin (over
// seeds 1..30 the slowest mutant needed at most 30 runs). Shrinking is
// bounded so that a caught mutant costs seconds, not rapid's default 30s.
// MUTATION_SEED overrides the seed (to check that the verdicts do not
// depend on it).
var lockstepArgs = []string{"-rapid.seed=" + lockstepSeed(), "-rapid.checks=500", "-rapid.shrinktime=3s", "-rapid.nofailfile"}

func lockstepSeed() string {
	if s := os.Getenv("MUTATION_SEED"); s != "" {
		return s
	}
	return "20261201"
}

// conformanceRun is the lockstep test and the fixed scenarios.
var conformanceRun = goTest{Pkg: "./conformance", Tests: []string{"TestLockstep", "TestScenarios"}, Args: lockstepArgs}

var (
	lockstepProperty = regexp.MustCompile(`\n\s*property: (\S+)\n`)
	lockstepTrace    = regexp.MustCompile(`failing run \(([^)]*)\) written to (\S+\.jsonl)`)
	// lockstepVars matches a mismatch line: "v[...]" or "Len(v[...])",
	// and the property it bears on.
	lockstepVars = regexp.MustCompile(`\n\s+(\w+(?:\(\w+)?)\[[^\n]*\[bears on (\w+)\]`)
)

// mismatchVars lists the variable->property pairs of the mismatch lines
// in sec, in order, once each ("Len(cutGot)->ConsistentCut").
func mismatchVars(sec string) []string {
	var vars []string
	for _, m := range lockstepVars.FindAllStringSubmatch(sec, -1) {
		name := m[1]
		if strings.Contains(name, "(") {
			name += ")"
		}
		if v := name + "->" + m[2]; !slices.Contains(vars, v) {
			vars = append(vars, v)
		}
	}
	return vars
}

// lockstepProp: TestLockstep fails on a per-step state mismatch
// (conformance/lockstep_test.go, check), names want as the property the
// implementation's drained run breaks, and writes that run, marked
// drained, as a trace file on which conformance.AuditFile (what
// markerwave audit runs) names want too: the failing run replays the
// failure.
func lockstepProp(want spec.Property) expect {
	return expect{
		Check:    "TestLockstep + audit",
		Observed: fmt.Sprintf("the failing run, drained, breaks %s, and so does markerwave audit of the trace it writes", want),
		Find: func(out string) (string, error) {
			sec, ok := section(out, "TestLockstep")
			if !ok {
				return "", fmt.Errorf("TestLockstep did not run")
			}
			if !strings.Contains(sec, "the implementation's state is not the model's") {
				return "", fmt.Errorf("TestLockstep does not fail on a state mismatch")
			}
			vars := mismatchVars(sec)
			m := lockstepProperty.FindStringSubmatch(sec)
			if m == nil {
				return "", fmt.Errorf("TestLockstep names no property")
			}
			if spec.Property(m[1]) != want {
				return "", fmt.Errorf("TestLockstep names %s, want %s", m[1], want)
			}
			tm := lockstepTrace.FindStringSubmatch(sec)
			if tm == nil {
				return "", fmt.Errorf("TestLockstep names no failure trace")
			}
			if tm[1] != "drained run" {
				return "", fmt.Errorf("TestLockstep wrote the %s, want the drained run", tm[1])
			}
			tr, _, err := conformance.ReadTraceFile(tm[2])
			if err != nil {
				return "", fmt.Errorf("the failure trace: %v", err)
			}
			if !tr.Header.Drained {
				return "", fmt.Errorf("the failure trace %s is not marked drained", tm[2])
			}
			rep, err := conformance.AuditFile(tm[2], conformance.Options{})
			if err != nil {
				return "", fmt.Errorf("auditing the failure trace: %v", err)
			}
			if got := rep.Property(); got != want {
				return "", fmt.Errorf("audit of the failure trace %s names %q, want %s:\n%s", tm[2], got, want, rep)
			}
			return fmt.Sprintf("TestLockstep: %s (%s; %d-event drained trace, audit: %s)", m[1], strings.Join(vars, ", "), len(tr.Events), rep.Property()), nil
		},
	}
}

// lockstepVar: TestLockstep fails on a per-step state mismatch in which
// model variable v differs, bearing on want: the variable the mutant
// damages first (lockstepProp asserts what the drained run breaks).
func lockstepVar(v string, want spec.Property) expect {
	return expect{
		Check:    "TestLockstep",
		Observed: fmt.Sprintf("after a step, the implementation's %s is not the model's (it bears on %s)", v, want),
		Find: func(out string) (string, error) {
			sec, ok := section(out, "TestLockstep")
			if !ok {
				return "", fmt.Errorf("TestLockstep did not run")
			}
			if !strings.Contains(sec, "the implementation's state is not the model's") {
				return "", fmt.Errorf("TestLockstep does not fail on a state mismatch")
			}
			vars := mismatchVars(sec)
			if !slices.Contains(vars, v+"->"+string(want)) {
				return "", fmt.Errorf("TestLockstep's mismatch names %v, want %s->%s", vars, v, want)
			}
			prop := "?"
			if m := lockstepProperty.FindStringSubmatch(sec); m != nil {
				prop = m[1]
			}
			return fmt.Sprintf("TestLockstep: %s (drained run: %s)", strings.Join(vars, ", "), prop), nil
		},
	}
}

// concurrentScenario is the fixed trace with two concurrent snapshots on
// three fully connected processes (conformance.Scenarios).
const concurrentScenario = "conforms/concurrent-snapshots.jsonl"

// scenarioProp: TestScenarios rebuilds the fixed scenario name with the
// mutant and Replay names want for it.
func scenarioProp(name string, want spec.Property) expect {
	test := "TestScenarios/" + name
	return expect{
		Check:    "TestScenarios",
		Observed: fmt.Sprintf("%s, rebuilt with the mutant, is rejected: %s", path.Base(name), want),
		Find: func(out string) (string, error) {
			sec, ok := section(out, test)
			if !ok {
				return "", fmt.Errorf("%s did not run", test)
			}
			if !strings.Contains(sec, "scenario "+name+": want conforms, got rejects: "+string(want)+"\n") {
				return "", fmt.Errorf("%s does not report %s", test, want)
			}
			return fmt.Sprintf("TestScenarios %s: %s", path.Base(name), want), nil
		},
	}
}

// coreMutant is a mutant of impl/core: TestLockstep and the concurrent
// snapshots scenario must both name want, after the expectations first
// (lockstepVar: the model variable the mutant damages first).
func coreMutant(m mutant, first ...expect) mutant {
	m.Runs = []goTest{conformanceRun}
	m.Expect = append(first, lockstepProp(m.Want), scenarioProp(concurrentScenario, m.Want))
	return m
}

// coreMutants break the rules of the algorithm in impl/core. For each
// (cut-late: the first two) the suite must show three things:
//
//   - TestLockstep (rapid, fixed seed) fails on a per-step state mismatch
//     in the model variable the mutant damages first, and its failure
//     prints "property: P": the property the implementation's run,
//     drained alone, breaks;
//   - the trace that failure writes (the shrunk run, drained, with the
//     snapshots the nodes recorded) is rejected by conformance.AuditFile,
//     what markerwave audit runs, with the same P;
//   - TestScenarios reports P for the fixed trace
//     conforms/concurrent-snapshots.jsonl, rebuilt with the mutant.
//
// The comment before each Want says why P, and what execution tells the
// mutant apart.
var coreMutants = []mutant{
	coreMutant(mutant{
		Name: "forget-record",
		Rule: "record every message received on a recording channel",
		Doc:  "RecvApp: an application message received while its channel is recording is not appended to the recording",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\t\t\tst.recs[i] = append(st.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})\n",
			New:  "\t\t\t_ = saved // MUTANT forget-record: the message is not appended to the recording\n",
		}},
		// The snapshot completes without the message: its channel state
		// is not what was in flight across the cut.
		Want: spec.PropExactChannelState,
	}, lockstepVar("recMsgs", spec.PropExactChannelState)),
	coreMutant(mutant{
		Name: "record-late",
		Rule: "record the local state before applying anything received after it",
		Doc:  "the recorded local state is overwritten by the state after the first message received after recording (its effect leaks into the snapshot)",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old: "\tvar saved []byte\n" +
				"\tfor _, st := range n.active {\n" +
				"\t\tif st.status[i] == Recording {\n",
			New: "\tvar saved []byte\n" +
				"\tfor _, st := range n.active {\n" +
				"\t\tsince := uint64(0)\n" +
				"\t\tfor k := range n.recvSeq {\n" +
				"\t\t\tsince += n.recvSeq[k] - st.recvAt[k]\n" +
				"\t\t}\n" +
				"\t\tif since == 1 { // MUTANT record-late: the first receive after recording leaks into the recorded state\n" +
				"\t\t\tst.state = n.State()\n" +
				"\t\t}\n" +
				"\t\tif st.status[i] == Recording {\n",
		}},
		// The message's amount is counted twice, in the recorded balance
		// and in flight (on its recording channel) or at its sender (which
		// recorded before sending it): the recorded money does not add up.
		// The channel states stay exact and the cut consistent, and
		// Conservation comes before ChandyLamportTheorem (which fails too:
		// rcvd is off by one) in CheckRun's order.
		Want: spec.PropConservation,
	}, lockstepVar("recProc", spec.PropConservation)),
	coreMutant(mutant{
		Name: "wrong-marker",
		Rule: "a marker stops the recording of the channel it arrived on",
		Doc:  "Receiving Rule case 2 stops the recording of the first channel still recording instead of the channel the marker arrived on",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tst.status[i] = Done\n\tst.pending--\n",
			New: "\tj := i\n" +
				"\tif !first { // MUTANT wrong-marker: case 2 closes the first channel still recording, not the marker's\n" +
				"\t\tfor k, x := range st.status {\n" +
				"\t\t\tif x == Recording {\n" +
				"\t\t\t\tj = k\n" +
				"\t\t\t\tbreak\n" +
				"\t\t\t}\n" +
				"\t\t}\n" +
				"\t}\n" +
				"\tst.status[j] = Done\n\tst.pending--\n",
		}},
		// The lockstep comparison sees recChan differ first (it bears on
		// ExactChannelState), but the channel closed too early makes its
		// node refuse the real marker later as a duplicate: the channel
		// the marker arrived on never stops recording, and the snapshot
		// never completes. Every snapshot that does complete is right, so
		// the drained run (and the fixed scenario, where P1 records two
		// channels at once) breaks SnapshotsComplete, a liveness property.
		Want: spec.PropSnapshotsComplete,
	}, lockstepVar("recChan", spec.PropExactChannelState)),
	coreMutant(mutant{
		Name: "no-forward",
		Rule: "on its first marker a process sends a marker on every outgoing channel",
		Doc:  "Receiving Rule case 1 records but sends no markers",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tif first {\n\t\tstep.Out = n.markers(s)\n\t}\n",
			New:  "\tif first {\n\t\t// MUTANT no-forward: case 1 sends no markers\n\t}\n",
		}},
		// The initiator's incoming channels never get a marker.
		Want: spec.PropSnapshotsComplete,
	}, lockstepVar("chan", spec.PropSnapshotsComplete)),
	coreMutant(mutant{
		Name: "marker-id",
		Rule: "a marker carries the id of the snapshot it belongs to",
		Doc:  "markers sent (initiating or forwarding) carry the id of the lowest-id other active snapshot",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "func (n *Node) markers(s spec.SnapID) []wire.Envelope {\n",
			New: "func (n *Node) markers(s spec.SnapID) []wire.Envelope {\n" +
				"\tif len(n.active) > 1 && n.active[0].id != s { // MUTANT marker-id: markers carry another active snapshot's id\n" +
				"\t\ts = n.active[0].id\n" +
				"\t}\n",
		}},
		// The mislabelled markers are duplicates of the other snapshot's
		// (refused, or not delivered in the drain: not the model's head),
		// so the snapshot they belonged to never completes.
		Want: spec.PropSnapshotsComplete,
	}, lockstepVar("chan", spec.PropSnapshotsComplete)),
	{
		Name: "cut-late",
		Rule: "a snapshot's cut seqs are the channels' seqs when the state was recorded",
		Doc:  "SendApp: every send moves the next send seq of the snapshots still recording at the sender, as if the cut lay after it",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tseq := n.sendSeq[j]\n\tn.sendSeq[j]++\n",
			New: "\tseq := n.sendSeq[j]\n\tn.sendSeq[j]++\n" +
				"\tfor _, st := range n.active { // MUTANT cut-late: the cut's send seq follows later sends\n" +
				"\t\tst.sendAt[j] = n.sendSeq[j]\n" +
				"\t}\n",
		}},
		Runs: []goTest{{Pkg: "./conformance", Tests: []string{"TestLockstep"}, Args: lockstepArgs}, runtimeRun},
		// The recorded states and channels stay right, so the events and
		// the abstraction conform: only the seqs a checkpoint restores
		// from (LocalSnapshot.NextSend) are wrong. The lockstep comparison
		// of the ghost cut sees cutSent differ (it bears on
		// ConsistentCut); the drained run's recorded lines carry the
		// wrong cut seqs, so it and audit of its trace name ConsistentCut
		// too; in a cluster, the collector finds more messages in flight
		// across the cut than were recorded.
		Want: spec.PropConsistentCut,
		Expect: []expect{
			lockstepVar("cutSent", spec.PropConsistentCut),
			lockstepProp(spec.PropConsistentCut),
			outputHas("TestRuntimeMemory", "collector: recorded channel state is not what was in flight across the cut",
				regexp.MustCompile(`\d+ messages recorded, but \d+ were in flight across the cut`)),
		},
	},
	coreMutant(mutant{
		Name: "wrong-snapshot",
		Rule: "a message is recorded by the snapshots recording its channel",
		Doc:  "RecvApp: a message in flight on a recording channel is appended to the lowest-id active snapshot's recording instead of the recording snapshot's",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\t\t\tst.recs[i] = append(st.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})\n",
			New: "\t\t\tw := n.active[0] // MUTANT wrong-snapshot: recorded into the lowest-id active snapshot\n" +
				"\t\t\tw.recs[i] = append(w.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})\n",
		}},
		// One snapshot records the message twice or where it was not in
		// flight, the other misses it.
		Want: spec.PropExactChannelState,
	}, lockstepVar("recMsgs", spec.PropExactChannelState)),
}
