package mutation

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

// Budget of one mutant: every go test invocation in its copy together.
const mutantTimeout = 150 * time.Second

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

// runtimeSeed is the root seed of the conformance runtime tests in the
// copies (MARKERWAVE_SEED, see the conformance package doc): the caller's
// $MARKERWAVE_SEED if set, else fixed, so that the workloads and delays
// are the same on every run (the goroutine scheduling is not).
func runtimeSeed() string {
	if s := os.Getenv("MARKERWAVE_SEED"); s != "" {
		return s
	}
	return "20261201"
}

// patch replaces the one occurrence of Old in File (relative to the module
// root) by New.
type patch struct {
	File     string
	Old, New string
}

// goTest is one go test invocation in the copy.
type goTest struct {
	Pkg   string   // e.g. ./conformance
	Tests []string // top-level test names; -run '^(A|B)$'
	Args  []string // test binary flags
}

// expect is one thing the failing suite must show: Find looks for it in
// the output of the copy's go test runs and says what it found, or why
// not.
type expect struct {
	Check string // which test reports it, for the table
	Find  func(out string) (observed string, err error)
}

type mutant struct {
	Name    string
	Rule    string // the rule of the algorithm (or guarantee of a channel) broken
	Doc     string // how the patch breaks it
	Patches []patch
	Runs    []goTest
	// Want is the property the suite must name.
	Want spec.Property
	// Expect lists what the suite must report, all of it.
	Expect []expect
}

var (
	conformanceRun = goTest{Pkg: "./conformance", Tests: []string{"TestLockstep", "TestScenarios"}, Args: lockstepArgs}
	fifoRun        = goTest{Pkg: "./conformance/fifo", Tests: []string{"TestMemoryChannelsAreLinearizableFIFO"}}
	runtimeRun     = goTest{Pkg: "./conformance", Tests: []string{"TestRuntimeMemory"}}
	// controlRuns is every test any mutant runs.
	controlRuns = []goTest{
		{Pkg: "./conformance", Tests: append(append([]string(nil), conformanceRun.Tests...), runtimeRun.Tests...), Args: lockstepArgs},
		fifoRun,
	}
)

// section is the output of test name in go test -v output: from its
// "=== RUN" line to its "--- FAIL" or "--- PASS" line.
func section(out, name string) (string, bool) {
	i := strings.Index(out, "=== RUN   "+name+"\n")
	if i < 0 {
		return "", false
	}
	rest := out[i:]
	for _, end := range []string{"--- FAIL: " + name + " ", "--- PASS: " + name + " "} {
		if j := strings.Index(rest, end); j >= 0 {
			return rest[:j], true
		}
	}
	return rest, true
}

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
	return expect{Check: "TestLockstep", Find: func(out string) (string, error) {
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
	}}
}

// lockstepVar: TestLockstep fails on a per-step state mismatch in which
// model variable v differs, bearing on want: the variable the mutant
// damages first (lockstepProp asserts what the drained run breaks).
func lockstepVar(v string, want spec.Property) expect {
	return expect{Check: "TestLockstep", Find: func(out string) (string, error) {
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
		if m := regexp.MustCompile(`\n\s*property: ([^\n]+)\n`).FindStringSubmatch(sec); m != nil {
			prop = m[1]
		}
		return fmt.Sprintf("TestLockstep: %s (drained run: %s)", strings.Join(vars, ", "), prop), nil
	}}
}

// concurrentScenario is the fixed trace with two concurrent snapshots on
// three fully connected processes (conformance.Scenarios).
const concurrentScenario = "conforms/concurrent-snapshots.jsonl"

// scenarioProp: TestScenarios rebuilds the fixed scenario name with the
// mutant and Replay names want for it.
func scenarioProp(name string, want spec.Property) expect {
	test := "TestScenarios/" + name
	return expect{Check: test, Find: func(out string) (string, error) {
		sec, ok := section(out, test)
		if !ok {
			return "", fmt.Errorf("%s did not run", test)
		}
		if !strings.Contains(sec, "scenario "+name+": want conforms, got rejects: "+string(want)+"\n") {
			return "", fmt.Errorf("%s does not report %s", test, want)
		}
		return fmt.Sprintf("TestScenarios %s: %s", path.Base(name), want), nil
	}}
}

// outputHas: the output matches re.
func outputHas(check, observed string, re *regexp.Regexp) expect {
	return expect{Check: check, Find: func(out string) (string, error) {
		if !re.MatchString(out) {
			return "", fmt.Errorf("%s does not report %s", check, observed)
		}
		return check + ": " + observed, nil
	}}
}

// coreMutant is a mutant of impl/core: TestLockstep and the concurrent
// snapshots scenario must both name want.
func coreMutant(m mutant) mutant {
	m.Runs = []goTest{conformanceRun}
	m.Expect = []expect{lockstepProp(m.Want), scenarioProp(concurrentScenario, m.Want)}
	return m
}

var mutants = []mutant{
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
	}),
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
	}),
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
	}),
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
	}),
	{
		Name: "fifo-swap",
		Rule: "channels deliver in FIFO order (the transport)",
		Doc:  "in-memory transport (delayed channels): now and then the next envelope of a channel overtakes the one due",
		Patches: []patch{{
			File: "impl/transport/memory.go",
			Old:  "\t\t\tdst.push(c.q.pop())\n\t\t\tc.due = c.due[1:]\n",
			New: "\t\t\te := c.q.pop()\n" +
				"\t\t\tc.due = c.due[1:]\n" +
				"\t\t\tif c.q.len() > 0 && c.rng.IntN(8) == 0 { // MUTANT fifo-swap: the next envelope overtakes this one\n" +
				"\t\t\t\tdst.push(c.q.pop())\n" +
				"\t\t\t\tc.due = c.due[1:]\n" +
				"\t\t\t}\n" +
				"\t\t\tdst.push(e)\n",
		}},
		Runs: []goTest{fifoRun, runtimeRun},
		// Not a rule of impl/core: the network breaks the FIFO assumption
		// the spec makes of channels. The porcupine check of the transport
		// alone says so; in a running cluster, the collector's check of
		// each recorded channel against the seqs in flight across the cut
		// (impl/runtime, through Collect) rejects the snapshot before any
		// trace exists when a marker and a message swap; when two messages
		// swap, the receiving node refuses the out-of-order seq, its
		// channel fails and Collect reports that. Which comes first in a
		// run is down to the delays and the scheduling, so either counts.
		Want: "FIFO channels (porcupine); collected channel state",
		Expect: []expect{
			outputHas("TestMemoryChannelsAreLinearizableFIFO", "porcupine: Illegal w.r.t. per-channel FIFO queues",
				regexp.MustCompile(`is Illegal w\.r\.t\. per-channel FIFO queues`)),
			outputHas("TestRuntimeMemory", "the runtime notices the reordering (collector: recorded channel state is not what was in flight across the cut; or a node refuses an out-of-order seq)",
				regexp.MustCompile(`\d+ messages recorded, but \d+ were in flight across the cut|out-of-order message: expected seq \d+, got \d+`)),
		},
	},
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
	}),
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
	}),
}

// result is one row of the table.
type result struct {
	name, rule, want, observed string
	ok                         bool
	took                       time.Duration
}

type table struct {
	mu   sync.Mutex
	rows []result
}

func (tb *table) add(r result) {
	tb.mu.Lock()
	tb.rows = append(tb.rows, r)
	tb.mu.Unlock()
}

func (tb *table) String() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	rank := map[string]int{"control": -1}
	for i, m := range mutants {
		rank[m.Name] = i
	}
	rows := append([]result(nil), tb.rows...)
	sort.Slice(rows, func(i, j int) bool { return rank[rows[i].name] < rank[rows[j].name] })
	head := []string{"mutant", "rule broken", "property", "reported by", "verdict", "time"}
	cells := [][]string{head}
	for _, r := range rows {
		v := "caught"
		switch {
		case r.name == "control" && r.ok:
			v = "passes"
		case r.name == "control":
			v = "FAILS"
		case !r.ok:
			v = "NOT CAUGHT"
		}
		cells = append(cells, []string{r.name, r.rule, r.want, r.observed, v, r.took.Round(100 * time.Millisecond).String()})
	}
	w := make([]int, len(head))
	for _, row := range cells {
		for i, c := range row {
			w[i] = max(w[i], len(c))
		}
	}
	var b strings.Builder
	for k, row := range cells {
		for i, c := range row {
			fmt.Fprintf(&b, "%-*s  ", w[i], c)
		}
		b.WriteString("\n")
		if k == 0 {
			for i := range row {
				b.WriteString(strings.Repeat("-", w[i]) + "  ")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestMutants runs every mutant and the control; see the package doc.
func TestMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("mutation tests build and run the conformance suite once per mutant (about a minute); skipped under -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root := moduleRoot(t, goBin)
	files := trackedFiles(t, root)

	only := map[string]bool{}
	if s := os.Getenv("MUTATION_ONLY"); s != "" {
		for _, n := range strings.Split(s, ",") {
			only[strings.TrimSpace(n)] = true
		}
		for n := range only {
			if !hasMutant(n) {
				t.Fatalf("MUTATION_ONLY names %q, which is no mutant", n)
			}
		}
	}

	tb := &table{}
	t.Run("all", func(t *testing.T) {
		t.Run("control", func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			dir := copyTree(t, files)
			out, failed, err := runAll(goBin, dir, controlRuns)
			r := result{name: "control", rule: "-", want: "pass", took: time.Since(start), ok: !failed && err == nil}
			r.observed = "pass"
			switch {
			case err != nil:
				r.observed = "error"
				t.Errorf("control: %v", err)
			case failed:
				r.observed = "FAIL"
				why := "the unmutated copy fails the test selection, so the mutants' failures prove nothing"
				if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
					why = "the tracked files, as they are in the work tree, do not build"
				}
				t.Errorf("control: %s:\n%s", why, tail(out, 80))
			}
			tb.add(r)
		})
		for _, m := range mutants {
			if len(only) > 0 && !only[m.Name] {
				continue
			}
			t.Run(m.Name, func(t *testing.T) {
				t.Parallel()
				tb.add(runMutant(t, goBin, files, m))
			})
		}
	})
	t.Logf("mutation results:\n%s", tb)
}

func hasMutant(name string) bool {
	for _, m := range mutants {
		if m.Name == name {
			return true
		}
	}
	return false
}

func runMutant(t *testing.T, goBin string, files tree, m mutant) result {
	start := time.Now()
	r := result{name: m.Name, rule: m.Rule, want: string(m.Want)}
	dir := copyTree(t, files)
	for _, p := range m.Patches {
		if err := applyPatch(dir, p); err != nil {
			t.Errorf("mutant %s: %v", m.Name, err)
			r.observed = "anchor not found"
			r.took = time.Since(start)
			return r
		}
	}
	out, failed, err := runAll(goBin, dir, m.Runs)
	if err != nil {
		t.Errorf("mutant %s: %v", m.Name, err)
		r.observed = "error"
		r.took = time.Since(start)
		return r
	}
	if !failed {
		t.Errorf("mutant %s SURVIVED: %s\nthe conformance tests %s pass on it; output:\n%s", m.Name, m.Doc, runNames(m.Runs), tail(out, 60))
		r.observed = "suite passes"
		r.took = time.Since(start)
		return r
	}
	if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
		t.Errorf("mutant %s does not compile, so it tests nothing: fix its replacement text\n%s", m.Name, tail(out, 40))
		r.observed = "build failed"
		r.took = time.Since(start)
		return r
	}
	var seen, missing []string
	for _, e := range m.Expect {
		obs, err := e.Find(out)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", e.Check, err))
			continue
		}
		seen = append(seen, obs)
		t.Logf("%s", obs)
	}
	r.observed = strings.Join(seen, "; ")
	if len(missing) > 0 {
		t.Errorf("mutant %s (%s) is caught, but not as it must be:\n  %s\nfailing tests: %s\noutput:\n%s",
			m.Name, m.Doc, strings.Join(missing, "\n  "), strings.Join(failedTests(out), ", "), tail(out, 120))
		r.observed = "wrong report: " + strings.Join(missing, "; ")
		r.took = time.Since(start)
		return r
	}
	r.ok = true
	t.Logf("mutant %s caught in %v; failing tests: %s", m.Name, time.Since(start).Round(time.Millisecond), strings.Join(failedTests(out), ", "))
	r.took = time.Since(start)
	return r
}

func runNames(runs []goTest) string {
	var s []string
	for _, r := range runs {
		s = append(s, r.Pkg+":"+strings.Join(r.Tests, ","))
	}
	return strings.Join(s, " ")
}

// runAll runs every go test of runs in dir and returns their combined
// output and whether any failed. A test of the selection that does not run
// at all is an error (the mutation test must then be updated), and so is a
// go test that cannot run or does not finish within mutantTimeout.
func runAll(goBin, dir string, runs []goTest) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), mutantTimeout)
	defer cancel()
	var all strings.Builder
	failed := false
	for _, r := range runs {
		args := []string{"test", "-count=1", "-v", "-timeout", "120s",
			"-run", "^(" + strings.Join(r.Tests, "|") + ")$", r.Pkg}
		args = append(args, r.Args...)
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"MARKERWAVE_SEED="+runtimeSeed(),
			"MARKERWAVE_FAIL_DIR="+filepath.Join(dir, ".failures"),
			"MARKERWAVE_FIFO_OUT="+filepath.Join(dir, ".fifo"),
		)
		cmd.WaitDelay = 10 * time.Second
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		out := buf.String()
		fmt.Fprintf(&all, "$ go %s\n%s\n", strings.Join(args, " "), out)
		if ctx.Err() != nil {
			return all.String(), true, fmt.Errorf("go test in %s did not finish within %v:\n%s", dir, mutantTimeout, tail(out, 40))
		}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			failed = true
		default:
			return all.String(), true, fmt.Errorf("running go test: %v", err)
		}
		if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
			continue
		}
		for _, name := range r.Tests {
			if !strings.Contains(out, "=== RUN   "+name+"\n") {
				return all.String(), true, fmt.Errorf("%s has no test %s any more (go test -run ran nothing): update the mutation test's selection", r.Pkg, name)
			}
		}
	}
	return all.String(), failed, nil
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// failedTests lists the failing tests, subtests included, in order.
func failedTests(out string) []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range failLine.FindAllStringSubmatch(out, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			names = append(names, m[1])
		}
	}
	return names
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot(t *testing.T, goBin string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod)
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatalf("no go.mod above the test's directory")
		}
		dir = up
	}
}

// tree is the repository's tracked files (git ls-files) as they are in the
// work tree, read once so that every copy, the control's included, is the
// same tree even while people edit and commit.
type tree map[string][]byte

func trackedFiles(t *testing.T, root string) tree {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		noGitTree(t, inCI(), fmt.Sprintf("git is not installed (%v)", err))
	}
	if rev := os.Getenv("MUTATION_REV"); rev != "" {
		return filesAt(t, root, rev)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		noGitTree(t, inCI(), fmt.Sprintf("%s is not a git work tree (git ls-files: %v: %s)", root, err, strings.TrimSpace(stderr.String())))
	}
	files := tree{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		path := filepath.Join(root, filepath.FromSlash(f))
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		files[f] = b
	}
	if len(files) == 0 {
		t.Fatalf("git ls-files lists no files in %s", root)
	}
	return files
}

// skipper is what noGitTree needs of *testing.T.
type skipper interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// inCI reports whether the test runs in CI: $CI is true (GitHub Actions,
// GitLab CI and most others set CI=true).
func inCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// noGitTree stops the test when the tracked files cannot be listed: a
// failure in CI, where the mutation test must run, and a skip saying why
// and what to do otherwise (a tree from a tarball has no git metadata).
func noGitTree(t skipper, ci bool, why string) {
	t.Helper()
	const what = "the mutation test copies the repository's tracked files (git ls-files), so it needs a git checkout"
	if ci {
		t.Fatalf("%s: %s; CI=true, so this is a failure, not a skip: check out the repository with git (not an archive)", why, what)
		return
	}
	t.Skipf("SKIPPED, NOT RUN: %s: %s; run it from a git clone, or set MUTATION_REV=<commit> in one (CI=true makes this a failure)", why, what)
}

// filesAt is the tree of commit rev (git archive).
func filesAt(t *testing.T, root, rev string) tree {
	t.Helper()
	cmd := exec.Command("git", "archive", "--format=tar", rev)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("MUTATION_REV=%s: git archive: %v\n%s", rev, err, stderr.String())
	}
	files := tree{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("MUTATION_REV=%s: reading git archive: %v", rev, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("MUTATION_REV=%s: reading %s: %v", rev, h.Name, err)
		}
		files[h.Name] = b
	}
	t.Logf("copying the tracked files of %s (MUTATION_REV), not the work tree", rev)
	return files
}

// copyTree writes files into a fresh temporary directory.
func copyTree(t *testing.T, files tree) string {
	t.Helper()
	var dir string
	if os.Getenv("MUTATION_KEEP") != "" {
		d, err := os.MkdirTemp("", "markerwave-mutant-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
		t.Logf("copy kept in %s", dir)
	} else {
		dir = t.TempDir()
	}
	for f, b := range files {
		dst := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// applyPatch replaces p.Old, which must occur exactly once, in the copy.
func applyPatch(dir string, p patch) error {
	path := filepath.Join(dir, filepath.FromSlash(p.File))
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("anchor file %s: %v: the mutant must be updated", p.File, err)
	}
	switch n := strings.Count(string(b), p.Old); n {
	case 1:
	case 0:
		return fmt.Errorf("anchor snippet not found in %s, the code changed: the mutant must be updated\nsnippet:\n%s", p.File, p.Old)
	default:
		return fmt.Errorf("anchor snippet occurs %d times in %s: the mutant must be updated to a unique snippet\nsnippet:\n%s", n, p.File, p.Old)
	}
	return os.WriteFile(path, []byte(strings.Replace(string(b), p.Old, p.New, 1)), 0o644)
}

// skipRecorder records noGitTree's verdict.
type skipRecorder struct{ fatal, skip string }

func (r *skipRecorder) Helper()                           {}
func (r *skipRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *skipRecorder) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

// TestNoGitTree: outside a git work tree, the mutation test fails in CI
// and skips loudly elsewhere; CI is read from $CI.
func TestNoGitTree(t *testing.T) {
	var r skipRecorder
	noGitTree(&r, true, "/src is not a git work tree")
	if r.skip != "" || !strings.Contains(r.fatal, "/src is not a git work tree") || !strings.Contains(r.fatal, "CI=true") {
		t.Errorf("in CI: fatal %q, skip %q; want a failure naming the cause and CI", r.fatal, r.skip)
	}
	r = skipRecorder{}
	noGitTree(&r, false, "/src is not a git work tree")
	if r.fatal != "" || !strings.HasPrefix(r.skip, "SKIPPED, NOT RUN: /src is not a git work tree") {
		t.Errorf("outside CI: fatal %q, skip %q; want a skip naming the cause", r.fatal, r.skip)
	}
	for v, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "false": false, "": false, "yes": false} {
		t.Setenv("CI", v)
		if got := inCI(); got != want {
			t.Errorf("CI=%q: inCI() = %t, want %t", v, got, want)
		}
	}
}

// TestMutantsOutsideGit: TestMutants' listing of the tracked files, run
// on a directory that is no git work tree, skips (CI unset) with the
// cause, and fails under CI=true.
func TestMutantsOutsideGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	t.Setenv("MUTATION_REV", "")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		cmd := exec.Command(os.Args[0], "-test.run=^TestTrackedFilesHelper$", "-test.v")
		cmd.Env = append(os.Environ(), "MUTATION_HELPER_ROOT="+dir)
		out, _ := cmd.CombinedOutput()
		switch {
		case ci == "" && !strings.Contains(string(out), "--- SKIP: TestTrackedFilesHelper") || ci == "" && !strings.Contains(string(out), "SKIPPED, NOT RUN: "+dir+" is not a git work tree"):
			t.Errorf("CI unset: want a skip naming %s:\n%s", dir, out)
		case ci == "true" && !strings.Contains(string(out), "--- FAIL: TestTrackedFilesHelper"):
			t.Errorf("CI=true: want a failure:\n%s", out)
		}
	}
}

// TestTrackedFilesHelper runs trackedFiles on $MUTATION_HELPER_ROOT, for
// TestMutantsOutsideGit; without it, it does nothing.
func TestTrackedFilesHelper(t *testing.T) {
	root := os.Getenv("MUTATION_HELPER_ROOT")
	if root == "" {
		return
	}
	trackedFiles(t, root)
}

// TestMutantAnchors checks, cheaply and also under -short, that every
// mutant's anchor snippet occurs exactly once in the work tree, and that
// applyPatch refuses missing and ambiguous anchors.
func TestMutantAnchors(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root := moduleRoot(t, goBin)
	for _, m := range mutants {
		for _, p := range m.Patches {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p.File)))
			if err != nil {
				t.Errorf("mutant %s: anchor file: %v: the mutant must be updated", m.Name, err)
				continue
			}
			if n := strings.Count(string(b), p.Old); n != 1 {
				t.Errorf("mutant %s: anchor snippet occurs %d times in %s, want once: the mutant must be updated\nsnippet:\n%s", m.Name, n, p.File, p.Old)
			}
			if p.Old == p.New {
				t.Errorf("mutant %s: replacement equals the anchor", m.Name)
			}
		}
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.go"), []byte("a\nb\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, want string }{{"c\n", "not found"}, {"a\n", "occurs 2 times"}} {
		err := applyPatch(dir, patch{File: "f.go", Old: tc.old, New: "x\n"})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "must be updated") {
			t.Errorf("applyPatch(%q) = %v, want an error saying %q and that the mutant must be updated", tc.old, err, tc.want)
		}
	}
	if err := applyPatch(dir, patch{File: "f.go", Old: "b\n", New: "x\n"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f.go")); string(b) != "a\nx\na\n" {
		t.Errorf("applyPatch wrote %q", b)
	}
}
