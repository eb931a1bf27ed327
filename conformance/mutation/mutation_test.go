package mutation

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/markerwave/markerwave/internal/testenv"

	"github.com/markerwave/markerwave/spec"
)

// This file is the machinery; the mutants are in mutants_<pkg>_test.go,
// one file per package of impl/, each appending its list to mutants in
// an init function.

// runTimeout is the budget of one go test invocation of a mutant or of
// the control, building and running: one per invocation, not one for
// all of a run's, since the control runs every mutant's selection (one
// invocation per package and flags), which would otherwise share one
// budget that grows with the mutants (on a loaded machine it ran out).
// Alone, an invocation takes seconds; 5 minutes (the test binary's
// -timeout 4 minutes of it) only stops a hang: at 150 s, the control's go
// test of impl/trace, compiling from a cold cache on two cores under a
// load of 20, ran out.
const runTimeout = 5 * time.Minute

var update = flag.Bool("update", false, "rewrite the mutation table in docs/conformance.md from the mutants")

// patch replaces the one occurrence of Old in File (relative to the module
// root) by New.
type patch struct {
	File     string
	Old, New string
}

// goTest is one go test invocation of a mutant (or of the control).
type goTest struct {
	Pkg   string   // e.g. ./conformance
	Tests []string // top-level test names; -run '^(A|B)$'
	Args  []string // test binary flags
}

// expect is one thing the failing suite must show: Find looks for it in
// the output of the mutant's go test runs and says what it found, or why
// not.
type expect struct {
	Check string // which test reports it, for the table
	// Observed says what that test sees on the mutant that it does not
	// see on the original: what execution tells the mutant apart (the
	// README's table shows it). outputHas sets it.
	Observed string
	Find     func(out string) (observed string, err error)
}

type mutant struct {
	Name    string
	Rule    string // the rule of the algorithm, or the clause of a package's contract, broken
	Doc     string // how the patch breaks it
	Patches []patch
	Runs    []goTest
	// Want is the property of the algorithm the suite must name (a
	// spec.Property), or "" for a mutant that breaks no property of the
	// algorithm but a package's own contract: Expect then says what
	// names the breach.
	Want spec.Property
	// Expect lists what the suite must report, all of it.
	Expect []expect
}

// mutants is every mutant, each file mutants_<pkg>_test.go appending its
// package's in an init function.
var mutants []mutant

// The conformance runs that mutants of several packages use.
var (
	fifoRun    = goTest{Pkg: "./conformance/fifo", Tests: []string{"TestMemoryChannelsAreLinearizableFIFO"}}
	runtimeRun = goTest{Pkg: "./conformance", Tests: []string{"TestRuntimeMemory"}}
)

// runtimeSeed is the root seed of the conformance runtime tests the
// mutants run (MARKERWAVE_SEED, see the conformance package doc): the
// caller's $MARKERWAVE_SEED if set, else fixed, so that the workloads and
// delays are the same on every run (the goroutine scheduling is not).
func runtimeSeed() string {
	if s := os.Getenv("MARKERWAVE_SEED"); s != "" {
		return s
	}
	return "20261201"
}

// outputHas: the output matches re; observed says, for the table and the
// log, what that match means.
func outputHas(check, observed string, re *regexp.Regexp) expect {
	return expect{Check: check, Observed: observed, Find: func(out string) (string, error) {
		if !re.MatchString(out) {
			return "", fmt.Errorf("%s does not report %s", check, observed)
		}
		return check + ": " + observed, nil
	}}
}

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

// pkgOf is the package directory (or directories) a mutant patches.
func pkgOf(m mutant) string {
	var dirs []string
	for _, p := range m.Patches {
		if d := path.Dir(p.File); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ", ")
}

// ordered is ms sorted by package, in the order of the list within one.
func ordered(ms []mutant) []mutant {
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b mutant) int { return strings.Compare(pkgOf(a), pkgOf(b)) })
	return ms
}

// controlRuns is every test the mutants ms run, one go test per package
// and test binary flags: the control must pass all of them.
func controlRuns(ms []mutant) []goTest {
	var runs []goTest
	for _, m := range ms {
		for _, r := range m.Runs {
			i := slices.IndexFunc(runs, func(c goTest) bool { return c.Pkg == r.Pkg && slices.Equal(c.Args, r.Args) })
			if i < 0 {
				runs = append(runs, goTest{Pkg: r.Pkg, Args: r.Args})
				i = len(runs) - 1
			}
			for _, name := range r.Tests {
				if !slices.Contains(runs[i].Tests, name) {
					runs[i].Tests = append(runs[i].Tests, name)
				}
			}
		}
	}
	return runs
}

// result is one row of the log's table.
type result struct {
	name, pkg, rule, want, observed string
	ok                              bool
	took                            time.Duration
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
	for i, m := range ordered(mutants) {
		rank[m.Name] = i
	}
	rows := slices.Clone(tb.rows)
	slices.SortFunc(rows, func(a, b result) int { return rank[a.name] - rank[b.name] })
	head := []string{"mutant", "package", "rule broken", "property", "reported by", "verdict", "time"}
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
		cells = append(cells, []string{r.name, r.pkg, r.rule, r.want, r.observed, v, r.took.Round(100 * time.Millisecond).String()})
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
		t.Skip("the mutation test builds and runs conformance and package tests once per mutant; skipped under -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root := moduleRoot(t, goBin)
	src := pin(t, root, trackedFiles(t, root))

	selected := ordered(mutants)
	if s := os.Getenv("MUTATION_ONLY"); s != "" {
		only := map[string]bool{}
		for _, n := range strings.Split(s, ",") {
			n = strings.TrimSpace(n)
			if !slices.ContainsFunc(mutants, func(m mutant) bool { return m.Name == n }) {
				t.Fatalf("MUTATION_ONLY names %q, which is no mutant", n)
			}
			only[n] = true
		}
		selected = slices.DeleteFunc(selected, func(m mutant) bool { return !only[m.Name] })
	}

	control := controlRuns(selected)
	start := time.Now()
	rn := newRunner(goBin, src.root)
	sb := buildSchemataBinaries(t, rn, src, selected, control)
	rn.listPackages(t, src, control, len(sb.sch.fallback) > 0)
	tb := &table{}
	var controlOut string
	t.Run("all", func(t *testing.T) {
		t.Run("control", func(t *testing.T) {
			t.Parallel()
			var r result
			r, controlOut = runControl(t, rn, rn.binaryCmd(sb.bins, ""), workDir(t, "control"), control)
			tb.add(r)
		})
		for _, m := range selected {
			t.Run(m.Name, func(t *testing.T) {
				t.Parallel()
				tb.add(runMutant(t, rn, src, sb, m))
			})
		}
	})
	if controlOut != "" {
		t.Run("distinct", func(t *testing.T) { distinct(t, selected, controlOut) })
	}
	t.Logf("mutation results (%d %s and the control in %v, up to %d at a time):\n%s",
		len(selected), plural(len(selected), "mutant"), time.Since(start).Round(100*time.Millisecond), parallelism(), tb)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// parallelism is how many mutants run at once: go test's -parallel,
// GOMAXPROCS unless set.
func parallelism() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil {
			return n
		}
	}
	return 1
}

// rapidArgs adds to the arguments of a package whose tests use rapid
// -rapid.nofailfile and, unless they name one, the seed of the mutation
// run (MUTATION_SEED, else fixed), so that the properties draw the same
// inputs for a mutant and for the control on every run.
func rapidArgs(args []string) []string {
	if !slices.Contains(args, "-rapid.nofailfile") {
		args = append(args, "-rapid.nofailfile")
	}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-rapid.seed=") }) {
		args = append(args, "-rapid.seed="+lockstepSeed())
	}
	return args
}

// runner runs the go tests of the mutants and the control.
type runner struct {
	goBin, root string
	// rapid holds the directories of the packages whose test binaries
	// link pgregory.net/rapid: their runs get -rapid.nofailfile, since
	// rapid would otherwise write each failing input of a caught mutant
	// into the package's testdata/rapid in the work tree.
	rapid map[string]bool
}

func newRunner(goBin, root string) *runner {
	return &runner{goBin: goBin, root: root, rapid: map[string]bool{}}
}

// listPackages finds which of the runs' packages link rapid. With
// compile (mutants outside the schemata, each built by its own go test)
// it also compiles, once and with all the cores, every package the runs
// need, unmutated, into the build cache (go list -export compiles without
// linking or running anything): those mutants, started together, then
// find them there instead of each compiling them at the same time. A
// failure is the control's to report.
func (rn *runner) listPackages(t *testing.T, src *source, runs []goTest, compile bool) {
	start := time.Now()
	overlay, _, err := src.overlay(t, "unmutated", nil)
	if err != nil {
		t.Fatal(err)
	}
	const format = `{{.ImportPath}}|{{.Dir}}{{range .Deps}}{{if eq . "pgregory.net/rapid"}}|rapid{{end}}{{end}}`
	args := []string{"list", "-overlay=" + overlay, "-deps", "-test", "-e", "-f", format}
	if compile {
		args = append(args, "-export")
	}
	for _, r := range runs {
		if !slices.Contains(args, r.Pkg) {
			args = append(args, r.Pkg)
		}
	}
	cmd := exec.Command(rn.goBin, args...)
	cmd.Dir = rn.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Logf("listing the unmutated packages: %v (the control will say why)\n%s", err, tail(stderr.String(), 20))
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 3 && strings.HasSuffix(f[0], ".test") && f[2] == "rapid" {
			rn.rapid[f[1]] = true
		}
	}
	if compile {
		t.Logf("compiled the unmutated packages in %v", time.Since(start).Round(100*time.Millisecond))
	}
}

// distinct: no expectation of the mutants ms is found in the output of
// the control, which passed: each tells its mutant apart from the
// original (the README's table says so of them).
func distinct(t *testing.T, ms []mutant, controlOut string) {
	for _, m := range ms {
		for _, e := range m.Expect {
			if obs, err := e.Find(controlOut); err == nil {
				t.Errorf("mutant %s: the unmutated tree's passing tests show what %s must report (%s), so it does not tell the mutant apart: make it name the failure", m.Name, e.Check, obs)
			}
		}
	}
}

// runControl runs runs on the unmutated tree: it must pass them all, or
// the mutants' failures prove nothing. It returns the output when they
// do.
func runControl(t *testing.T, rn *runner, launch launcher, work string, runs []goTest) (result, string) {
	start := time.Now()
	r := result{name: "control", rule: "-", want: "pass", observed: "pass"}
	out, failed, err := rn.runAll(launch, work, runs)
	r.took = time.Since(start)
	switch {
	case err != nil:
		r.observed = "error"
		t.Errorf("control: %v", err)
	case failed:
		r.observed = "FAIL"
		why := "the unmutated tree fails the mutants' test selection, so their failures prove nothing"
		if buildFailed(out) {
			why = "the tracked files, as they are in the work tree, do not build"
		}
		t.Errorf("control: %s:\n%s", why, tail(out, 80))
	default:
		r.ok = true
		return r, out
	}
	return r, ""
}

func runMutant(t *testing.T, rn *runner, src *source, sb schemataBuild, m mutant) result {
	start := time.Now()
	r := result{name: m.Name, pkg: pkgOf(m), rule: m.Rule, want: string(m.Want)}
	if r.want == "" {
		r.want = "-"
	}
	done := func(observed string) result {
		r.observed, r.took = observed, time.Since(start)
		return r
	}
	var out string
	var failed bool
	var err error
	if sb.sch.in[m.Name] {
		out, failed, err = rn.runAll(rn.binaryCmd(sb.bins, m.Name), workDir(t, m.Name), m.Runs)
	} else {
		var why string
		if out, failed, why, err = rn.runOwnBuild(t, src, sb, m); why != "" {
			return done(why)
		}
	}
	switch {
	case err != nil:
		t.Errorf("mutant %s: %v", m.Name, err)
		return done("error")
	case !failed:
		t.Errorf("mutant %s SURVIVED: %s\nthe tests %s pass on it; output:\n%s", m.Name, m.Doc, runNames(m.Runs), tail(out, 60))
		return done("suite passes")
	case buildFailed(out):
		t.Errorf("mutant %s does not compile, so it tests nothing: fix its replacement text\n%s", m.Name, tail(out, 40))
		return done("build failed")
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
	if len(missing) > 0 {
		t.Errorf("mutant %s (%s) is caught, but not as it must be:\n  %s\nfailing tests: %s\noutput:\n%s",
			m.Name, m.Doc, strings.Join(missing, "\n  "), strings.Join(failedTests(out), ", "), tail(out, 120))
		return done("wrong report: " + strings.Join(missing, "; "))
	}
	r.ok = true
	t.Logf("mutant %s caught in %v; failing tests: %s", m.Name, time.Since(start).Round(time.Millisecond), strings.Join(failedTests(out), ", "))
	return done(strings.Join(seen, "; "))
}

// runOwnBuild runs m's tests built with its own overlay (a mutant
// outside the schemata); why says why not when its anchors are not
// found (the test has failed saying so).
func (rn *runner) runOwnBuild(t *testing.T, src *source, sb schemataBuild, m mutant) (out string, failed bool, why string, err error) {
	t.Logf("mutant %s is built on its own: %s", m.Name, sb.sch.fallback[m.Name])
	patched, why := patchedFiles(t, src, m)
	if why != "" {
		return "", false, why, nil
	}
	overlay, work, err := src.overlay(t, m.Name, patched)
	if err != nil {
		t.Fatal(err)
	}
	out, failed, err = rn.runAll(rn.goTestCmd(overlay), work, m.Runs)
	return out, failed, "", err
}

// workDir is a fresh directory for what the runs of name write: a
// temporary one, or under MUTATION_KEEP one that stays (logged).
func workDir(t *testing.T, name string) string {
	if os.Getenv("MUTATION_KEEP") == "" {
		return t.TempDir()
	}
	d, err := os.MkdirTemp("", "markerwave-mutant-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: what its runs write is kept in %s", name, d)
	return d
}

// patchedFiles is the text of each file m patches, with its patches, or
// why not (the test has failed saying so).
func patchedFiles(t *testing.T, src *source, m mutant) (map[string][]byte, string) {
	patched := map[string][]byte{}
	for _, p := range m.Patches {
		b, ok := patched[p.File]
		if !ok {
			b, ok = src.files[p.File]
		}
		if !ok {
			t.Errorf("mutant %s: anchor file %s is not tracked: the mutant must be updated", m.Name, p.File)
			return nil, "anchor not found"
		}
		b, err := applyPatch(b, p)
		if err != nil {
			t.Errorf("mutant %s: %v", m.Name, err)
			return nil, "anchor not found"
		}
		patched[p.File] = b
	}
	return patched, ""
}

func buildFailed(out string) bool {
	return strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]")
}

func runNames(runs []goTest) string {
	var s []string
	for _, r := range runs {
		s = append(s, r.Pkg+":"+strings.Join(r.Tests, ","))
	}
	return strings.Join(s, " ")
}

// runAll runs every test run of runs, each launched by launch, and
// returns their combined output and whether any failed. The tests write
// what they keep (failure traces, porcupine's visualisations) under
// work. A test of the selection that does not run at all is an error
// (the mutation test must then be updated), and so is a run that cannot
// start or does not finish within runTimeout.
func (rn *runner) runAll(launch launcher, work string, runs []goTest) (string, bool, error) {
	var all strings.Builder
	failed := false
	for _, r := range runs {
		out, f, err := rn.run(launch, work, r)
		all.WriteString(out)
		if err != nil {
			return all.String(), true, err
		}
		failed = failed || f
	}
	return all.String(), failed, nil
}

// run runs r, launched by launch, within runTimeout and returns its
// command line and output, and whether it failed.
//
// Vet is off: a mutant must be caught by a test (make test vets the real
// tree). The test binaries are linked without the DWARF tables and the
// symbol table (-ldflags=-s -w; tracebacks and file:line come from the
// pclntab, which stays): nobody debugs them.
func (rn *runner) run(launch launcher, work string, r goTest) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd, line := launch(ctx, r)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env,
		"MARKERWAVE_SEED="+runtimeSeed(),
		"MARKERWAVE_FAIL_DIR="+filepath.Join(work, "failures"),
		"MARKERWAVE_FIFO_OUT="+filepath.Join(work, "fifo"),
	)
	buf, err := cmdOutput(cmd)
	out := buf.String()
	logged := fmt.Sprintf("%s\n%s\n", line, out)
	if ctx.Err() != nil {
		return logged, true, fmt.Errorf("the run of %s did not finish within %v:\n%s", r.Pkg, runTimeout, tail(out, 40))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return logged, true, fmt.Errorf("running %s: %v", line, err)
	}
	if buildFailed(out) {
		return logged, true, nil
	}
	for _, name := range r.Tests {
		if !strings.Contains(out, "=== RUN   "+name+"\n") {
			return logged, true, fmt.Errorf("%s has no test %s any more (-run ran nothing): update the mutation test's selection", r.Pkg, name)
		}
	}
	return logged, err != nil, nil
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
// work tree, read once so that every mutant, and the control, is built
// from the same tree even while people edit and commit.
type tree map[string][]byte

func trackedFiles(t *testing.T, root string) tree {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		noGitTree(t, fmt.Sprintf("git is not installed (%v)", err))
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
		noGitTree(t, fmt.Sprintf("%s is not a git work tree (git ls-files: %v: %s)", root, err, strings.TrimSpace(stderr.String())))
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

// noGitTree stops the test when the tracked files cannot be listed: a
// failure in CI, where the mutation test must run, and a skip saying why
// and what to do otherwise (a tree from a tarball has no git metadata).
func noGitTree(t testenv.TB, why string) {
	t.Helper()
	const what = "the mutation test builds its mutants from the repository's tracked files (git ls-files), so it needs a git checkout"
	testenv.Missing(t, why+": "+what, "run it from a git clone (not an archive), or set MUTATION_REV=<commit> in one")
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
	t.Logf("building from the tracked files of %s (MUTATION_REV), not the work tree", rev)
	return files
}

// source is the tree the mutants and the control are built from, pinned
// in the real module with the go command's -overlay: every tracked file
// is replaced by its copy in the snapshot (what the go command reads, so
// edits made while the test runs do not leak in, and MUTATION_REV builds
// that commit), and every other .go file in the module is deleted. The
// packages a mutant does not touch are then the same to the go command
// as in the real module, so their compiled forms come from the build
// cache; only the mutated package and its dependents compile. What a test
// reads at run time (traces/, testdata) it reads from the work tree.
type source struct {
	root  string
	files tree
	// pinned maps every path the go command may read (absolute, as the
	// overlay wants it) to its snapshot copy, or to "" (deleted).
	pinned map[string]string
}

// pin writes the snapshot files once, into a temporary directory (kept
// under MUTATION_KEEP, for the kept overlays).
func pin(t *testing.T, root string, files tree) *source {
	t.Helper()
	snap := t.TempDir()
	if os.Getenv("MUTATION_KEEP") != "" {
		d, err := os.MkdirTemp("", "markerwave-mutants-snapshot-")
		if err != nil {
			t.Fatal(err)
		}
		snap = d
	}
	src := &source{root: root, files: files, pinned: map[string]string{}}
	for f, b := range files {
		dst := filepath.Join(snap, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		src.pinned[filepath.Join(root, filepath.FromSlash(f))] = dst
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir // .git, and what the go command ignores
		}
		if _, ok := src.pinned[p]; !ok && !d.IsDir() && strings.HasSuffix(p, ".go") {
			src.pinned[p] = "" // untracked: not in the tree the mutants are built from
		}
		return nil
	})
	if err != nil {
		t.Fatalf("listing the module's .go files: %v", err)
	}
	return src
}

// overlay writes, in a fresh work directory for name, the patched files
// and the overlay that builds the snapshot with them, and returns the
// overlay file and the work directory. MUTATION_KEEP=1 keeps the
// directory and logs the command that builds the mutant again.
func (s *source) overlay(t *testing.T, name string, patched map[string][]byte) (overlay, work string, err error) {
	t.Helper()
	if os.Getenv("MUTATION_KEEP") != "" {
		if work, err = os.MkdirTemp("", "markerwave-mutant-"+name+"-"); err != nil {
			return "", "", err
		}
		defer func() { t.Logf("%s kept in %s: go test -overlay=%s ...", name, work, overlay) }()
	} else {
		work = t.TempDir()
	}
	replace := make(map[string]string, len(s.pinned)+len(patched))
	for p, to := range s.pinned {
		replace[p] = to
	}
	for f, b := range patched {
		dst := filepath.Join(work, "src", filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", "", err
		}
		replace[filepath.Join(s.root, filepath.FromSlash(f))] = dst
	}
	b, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		return "", "", err
	}
	overlay = filepath.Join(work, "overlay.json")
	return overlay, work, os.WriteFile(overlay, b, 0o644)
}

// applyPatch returns b with p.Old, which must occur exactly once,
// replaced by p.New.
func applyPatch(b []byte, p patch) ([]byte, error) {
	switch n := bytes.Count(b, []byte(p.Old)); n {
	case 1:
	case 0:
		return nil, fmt.Errorf("anchor snippet not found in %s, the code changed: the mutant must be updated\nsnippet:\n%s", p.File, p.Old)
	default:
		return nil, fmt.Errorf("anchor snippet occurs %d times in %s: the mutant must be updated to a unique snippet\nsnippet:\n%s", n, p.File, p.Old)
	}
	return bytes.Replace(b, []byte(p.Old), []byte(p.New), 1), nil
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
	root := filepath.Join("..", "..")
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

	for _, tc := range []struct{ old, want string }{{"c\n", "not found"}, {"a\n", "occurs 2 times"}} {
		_, err := applyPatch([]byte("a\nb\na\n"), patch{File: "f.go", Old: tc.old, New: "x\n"})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "must be updated") {
			t.Errorf("applyPatch(%q) = %v, want an error saying %q and that the mutant must be updated", tc.old, err, tc.want)
		}
	}
	if b, err := applyPatch([]byte("a\nb\na\n"), patch{File: "f.go", Old: "b\n", New: "x\n"}); err != nil || string(b) != "a\nx\na\n" {
		t.Errorf("applyPatch = %q, %v; want \"a\\nx\\na\\n\"", b, err)
	}
}

// docs/conformance.md's mutation table lies between these markers; TestMutantTable
// keeps it equal to renderTable(mutants).
const (
	tableBegin = "<!-- mutants:begin -->"
	tableEnd   = "<!-- mutants:end -->"
	readmePath = "../../docs/conformance.md"
)

// renderTable is the README's mutation table, in markdown: one row per
// mutant, by package, saying which rule (or contract clause) it breaks,
// the property the suite must name, and for each test that must catch it
// what that test sees on the mutant and not on the original.
func renderTable(ms []mutant) string {
	cell := func(s string) string {
		return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", tableBegin)
	b.WriteString("<!-- Written by go test ./conformance/mutation -run TestMutantTable -update, from the mutants in conformance/mutation/mutants_*_test.go: edit those, not this table. -->\n\n")
	b.WriteString("| mutant | package | rule broken | property | caught by: what the test sees that the original never shows |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, m := range ordered(ms) {
		want := string(m.Want)
		if want == "" {
			want = "- (the package's contract)"
		}
		var caught []string
		for _, e := range m.Expect {
			caught = append(caught, fmt.Sprintf("%s: %s", cell(e.Check), cell(e.Observed)))
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", m.Name, cell(pkgOf(m)), cell(m.Rule), cell(want), strings.Join(caught, "<br>"))
	}
	fmt.Fprintf(&b, "\n%s.\n%s", countPhrase(ms), tableEnd)
	return b.String()
}

func countPkgs(ms []mutant) int {
	pkgs := map[string]bool{}
	for _, m := range ms {
		pkgs[pkgOf(m)] = true
	}
	return len(pkgs)
}

// TestMutantTable: docs/conformance.md holds, between the markers, the table
// renderTable makes of the mutants (also under -short; -update rewrites
// it).
func TestMutantTable(t *testing.T) {
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	if i < 0 || j < i || strings.Count(readme, tableBegin) != 1 || strings.Count(readme, tableEnd) != 1 {
		t.Fatalf("docs/conformance.md must hold the mutation table once, between %s and %s", tableBegin, tableEnd)
	}
	got, want := readme[i:j+len(tableEnd)], renderTable(mutants)
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(readme[:i]+want+readme[j+len(tableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the mutation table in docs/conformance.md")
		return
	}
	t.Errorf("docs/conformance.md's mutation table is not the mutants': run go test ./conformance/mutation -run TestMutantTable -update\nwant:\n%s", want)
}

// TestMutantDefinitions: every mutant is complete enough to run and to
// be shown in the table (also under -short).
func TestMutantDefinitions(t *testing.T) {
	if len(mutants) == 0 {
		t.Fatal("no mutants")
	}
	names := map[string]bool{}
	for _, m := range mutants {
		switch {
		case m.Name == "" || strings.ContainsAny(m.Name, ", \t"):
			t.Errorf("mutant %q: a name is one word, no commas (MUTATION_ONLY lists names)", m.Name)
		case names[m.Name]:
			t.Errorf("two mutants are named %s", m.Name)
		}
		names[m.Name] = true
		if m.Rule == "" || m.Doc == "" {
			t.Errorf("mutant %s: the rule it breaks and how (Rule, Doc) must be said", m.Name)
		}
		if len(m.Patches) == 0 {
			t.Errorf("mutant %s patches nothing", m.Name)
		}
		if len(m.Runs) == 0 {
			t.Errorf("mutant %s runs no test", m.Name)
		}
		for _, r := range m.Runs {
			if r.Pkg == "" || len(r.Tests) == 0 {
				t.Errorf("mutant %s: a run names no package or no test: %+v", m.Name, r)
			}
		}
		if len(m.Expect) == 0 {
			t.Errorf("mutant %s: Expect is empty, so any failure would count as its catch", m.Name)
		}
		for _, e := range m.Expect {
			if e.Check == "" || e.Observed == "" || e.Find == nil {
				t.Errorf("mutant %s: an expectation must say which test reports it, what that test sees, and how to find it (Check %q, Observed %q)", m.Name, e.Check, e.Observed)
			}
		}
		if strings.ContainsAny(string(m.Want), " ;,") {
			t.Errorf("mutant %s: Want %q is not a property's name (a spec.Property, or empty for a package's contract)", m.Name, m.Want)
		}
	}
}
