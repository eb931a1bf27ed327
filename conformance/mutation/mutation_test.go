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
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Budget of one mutant: every go test invocation in its copy together.
const mutantTimeout = 150 * time.Second

// The lockstep test is a rapid property test: a fixed seed makes every run
// the same, and 500 random runs catch each mutant with a wide margin (over
// seeds 1..30 the slowest mutant needed at most 30 runs). Shrinking is
// bounded so that a caught mutant costs seconds, not rapid's default 30s.
var lockstepArgs = []string{"-rapid.seed=20261201", "-rapid.checks=500", "-rapid.shrinktime=3s", "-rapid.nofailfile"}

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

// expect is one thing the failing suite's output must say.
type expect struct {
	Check string // what reports it, for the table: "TestLockstep: recMsgs"
	RE    *regexp.Regexp
}

type mutant struct {
	Name    string
	Doc     string
	Patches []patch
	Runs    []goTest
	// Want is the property the mutant violates (the table's "expected").
	Want string
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

// Failure texts of the conformance tests.
//
// TestLockstep compares, after every step, the abstraction of the real
// nodes and network with the model's variables and names the first that
// differs (conformance/lockstep_test.go, mismatches).
func lockstepVar(name, rest string) expect {
	return expect{
		Check: "TestLockstep: " + name,
		RE:    regexp.MustCompile(`the implementation's state is not the model's:(?:\n\s+.*)*?\n\s+` + regexp.QuoteMeta(name) + `\[` + rest),
	}
}

// TestScenarios replays the article's scenarios, built with real nodes,
// and names the property Replay reports (testify's Not equal: expected ""
// for a conforming scenario, actual the property).
func scenarioProp(prop string) expect {
	return expect{
		Check: "TestScenarios: " + prop,
		RE:    regexp.MustCompile(`expected: ""\n\s*actual\s*: "` + prop + `"`),
	}
}

var mutants = []mutant{
	{
		Name: "forget-record",
		Doc:  "RecvApp: an application message received while its channel is recording is not appended to the recording",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\t\t\tst.recs[i] = append(st.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})\n",
			New:  "\t\t\t_ = saved // MUTANT forget-record: the message is not appended to the recording\n",
		}},
		Runs: []goTest{conformanceRun},
		Want: "ExactChannelState",
		Expect: []expect{
			lockstepVar("recMsgs", `\d+\]\[\S+\]: model <<[^>]+>>, implementation <<`),
			scenarioProp("ExactChannelState"),
		},
	},
	{
		Name: "record-late",
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
		Runs: []goTest{conformanceRun},
		Want: "Conservation",
		Expect: []expect{
			lockstepVar("recProc", `\d+\]\[\S+\]: model \{`),
			scenarioProp("Conservation"),
		},
	},
	{
		Name: "wrong-marker",
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
		Runs: []goTest{conformanceRun},
		Want: "ExactChannelState",
		Expect: []expect{
			lockstepVar("recChan", `\d+\]\[\S+\]: model recording, implementation done`),
		},
	},
	{
		Name: "no-forward",
		Doc:  "Receiving Rule case 1 records but sends no markers",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tif first {\n\t\tstep.Out = n.markers(s)\n\t}\n",
			New:  "\tif first {\n\t\t// MUTANT no-forward: case 1 sends no markers\n\t}\n",
		}},
		Runs: []goTest{conformanceRun},
		Want: "SnapshotsComplete",
		Expect: []expect{
			lockstepVar("chan", `\S+\]: model <<[^>]*Marker\(\d+\)[^>]*>>, network <<`),
		},
	},
	{
		Name: "fifo-swap",
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
		Want: "FIFO channels (porcupine)",
		Expect: []expect{{
			Check: "TestMemoryChannelsAreLinearizableFIFO: porcupine Illegal",
			RE:    regexp.MustCompile(`is Illegal w\.r\.t\. per-channel FIFO queues`),
		}, {
			// The collector's check of each recorded channel against the
			// seqs in flight across the cut (impl/runtime), through Collect.
			Check: "TestRuntimeMemory: collected channel state",
			RE:    regexp.MustCompile(`\d+ messages recorded, but \d+ were in flight across the cut`),
		}},
	},
	{
		Name: "marker-id",
		Doc:  "markers sent (initiating or forwarding) carry the id of the lowest-id other active snapshot",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "func (n *Node) markers(s spec.SnapID) []wire.Envelope {\n",
			New: "func (n *Node) markers(s spec.SnapID) []wire.Envelope {\n" +
				"\tif len(n.active) > 1 && n.active[0].id != s { // MUTANT marker-id: markers carry another active snapshot's id\n" +
				"\t\ts = n.active[0].id\n" +
				"\t}\n",
		}},
		Runs: []goTest{conformanceRun},
		Want: "SnapshotsComplete",
		Expect: []expect{
			lockstepVar("chan", `\S+\]: model <<[^>]*Marker\(\d+\)[^>]*>>, network <<`),
		},
	},
	{
		Name: "wrong-snapshot",
		Doc:  "RecvApp: a message in flight on a recording channel is appended to the lowest-id active snapshot's recording instead of the recording snapshot's",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\t\t\tst.recs[i] = append(st.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})\n",
			New: "\t\t\tw := n.active[0] // MUTANT wrong-snapshot: recorded into the lowest-id active snapshot\n" +
				"\t\t\tw.recs[i] = append(w.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})\n",
		}},
		Runs: []goTest{conformanceRun},
		Want: "ExactChannelState",
		Expect: []expect{
			lockstepVar("recMsgs", `\d+\]\[\S+\]: model <<[^>]*>>, implementation <<`),
		},
	},
}

// result is one row of the table.
type result struct {
	name, file, want, observed string
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
	head := []string{"mutant", "anchor file", "expected", "observed", "verdict", "time"}
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
		cells = append(cells, []string{r.name, r.file, r.want, r.observed, v, r.took.Round(100 * time.Millisecond).String()})
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
			r := result{name: "control", file: "-", want: "pass", took: time.Since(start), ok: !failed && err == nil}
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
	var anchors []string
	for _, p := range m.Patches {
		anchors = append(anchors, p.File)
	}
	r := result{name: m.Name, file: strings.Join(anchors, ","), want: m.Want}
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
		if loc := e.RE.FindStringIndex(out); loc != nil {
			seen = append(seen, e.Check)
			t.Logf("%s reports: %s", e.Check, excerpt(out, loc))
		} else {
			missing = append(missing, e.Check)
		}
	}
	r.observed = strings.Join(seen, "; ")
	if len(missing) > 0 {
		t.Errorf("mutant %s (%s) is caught, but the output does not show %s\nfailing tests: %s\noutput:\n%s",
			m.Name, m.Doc, strings.Join(missing, ", "), strings.Join(failedTests(out), ", "), tail(out, 80))
		r.observed = "wrong check: " + strings.Join(failedTests(out), ",")
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

// excerpt is the line holding loc and the next two.
func excerpt(out string, loc []int) string {
	end := loc[1]
	for n := 0; n < 2 && end < len(out); n++ {
		if k := strings.IndexByte(out[end+1:], '\n'); k >= 0 {
			end += k + 1
		} else {
			end = len(out)
		}
	}
	begin := strings.LastIndexByte(out[:loc[1]], '\n')
	begin = max(begin, loc[0]-400)
	return strings.TrimSpace(out[max(begin, 0):end])
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
		t.Skipf("git is not installed: the mutation test copies the repository's tracked files")
	}
	if rev := os.Getenv("MUTATION_REV"); rev != "" {
		return filesAt(t, root, rev)
	}
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("%s is not a git work tree (git ls-files: %v): the mutation test copies the repository's tracked files", root, err)
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
