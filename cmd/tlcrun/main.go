// Command tlcrun model-checks every model in tla/manifest.json with TLC and
// with the Go explorer, and compares their counts (distinct states, states
// generated, depth) and verdicts with the manifest. It is what `make tlc`
// runs.
//
//	go run ./cmd/tlcrun -jar /path/to/tla2tools.jar [-only MCRing] [-update]
//	go run ./cmd/tlcrun -go-only [-only MCRing] [-update]
//
// With -update it records the measured numbers in the manifest instead of
// comparing them (TLC's in "tlc", the Go explorer's in "go"); the Go
// explorer's counts must still agree with TLC's. -go-only runs the Go
// explorer alone, without TLC or Java, and leaves TLC's numbers and the
// spec hashes alone. Models marked large are skipped unless -large (or
// -only names one): the Go explorer checks them in fingerprint mode, and
// TLC is stopped after -tlc-limit, its counts then recorded as
// incomplete.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
)

// Result is what one TLC run printed.
type Result struct {
	tla.Measure
	Completed bool // "Model checking completed. No error has been found."
	Errors    []string
	left      int64 // states left on queue, of a stopped run
}

var (
	reGenerated = regexp.MustCompile(`(?m)^([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue\.`)
	reDepth     = regexp.MustCompile(`(?m)^The depth of the complete state graph search is (\d+)\.`)
	reInv       = regexp.MustCompile(`(?m)^Error: Invariant (\w+) is violated\.`)
	reAction    = regexp.MustCompile(`(?m)^Error: Action property (.*) is violated\.`)
	reTemporal  = regexp.MustCompile(`(?m)^Error: Temporal properties were violated\.|^Error: Temporal property (\w+) was violated\.`)
	reVersion   = regexp.MustCompile(`(?m)^TLC2 Version (\S+)`)
	reError     = regexp.MustCompile(`(?m)^Error: .*$`)
)

var reProgress = regexp.MustCompile(`(?m)^Progress\((\d+)\) at [^:]*:\d\d:\d\d: ([\d,]+) states generated(?: \([^)]*\))?, ([\d,]+) distinct states found(?: \([^)]*\))?, ([\d,]+) states left on queue\.`)

// ParseProgress reads the last progress line of a TLC run that was
// stopped: the BFS depth reached and the counts then.
func ParseProgress(out string) (Result, error) {
	var r Result
	ms := reProgress.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return r, errors.New("TLC was stopped before its first progress line")
	}
	m := ms[len(ms)-1]
	num := func(s string) int64 { n, _ := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64); return n }
	r.Depth, r.Generated, r.Distinct, r.left = num(m[1]), num(m[2]), num(m[3]), num(m[4])
	if v := reVersion.FindStringSubmatch(out); v != nil {
		r.Version = v[1]
	}
	return r, nil
}

// Parse reads TLC's output.
func Parse(out string) (Result, error) {
	var r Result
	r.Completed = strings.Contains(out, "Model checking completed. No error has been found.")
	ms := reGenerated.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return r, errors.New("no \"states generated\" line in TLC's output")
	}
	m := ms[len(ms)-1]
	r.Generated, _ = strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	r.Distinct, _ = strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
	if d := reDepth.FindStringSubmatch(out); d != nil {
		r.Depth, _ = strconv.ParseInt(d[1], 10, 64)
	}
	if v := reVersion.FindStringSubmatch(out); v != nil {
		r.Version = v[1]
	}
	r.Violation = violated(out)
	r.Errors = reError.FindAllString(out, -1)
	return r, nil
}

// violated is the property TLC's output says is violated: an invariant,
// an action property (actionProperty), a named temporal property, or
// "temporal"; "" if none.
func violated(out string) spec.Property {
	if v := reInv.FindStringSubmatch(out); v != nil {
		return spec.Property(v[1])
	}
	if v := reAction.FindStringSubmatch(out); v != nil {
		return actionProperty(v[1])
	}
	if v := reTemporal.FindStringSubmatch(out); v != nil {
		if v[1] == "" {
			return "temporal"
		}
		return spec.Property(v[1])
	}
	return ""
}

// actionProperty names the property of a violated action property, which
// TLC names by its place (line L, col C to line L2, col C2 of module M):
// the one of the manifest's properties that is an action property is
// SnapshotRefinement, whose [][SNext]_svars is in tla/ConsistentSnapshot.tla.
func actionProperty(where string) spec.Property {
	if strings.HasSuffix(where, " of module ConsistentSnapshot") {
		return spec.PropSnapshotRefinement
	}
	return spec.Property("action property " + where)
}

const howToGetTLC = `TLC is missing: set TLA2TOOLS to the path of tla2tools.jar, e.g.
    make tlc TLA2TOOLS=/opt/tla/tla2tools.jar
tla2tools.jar is released at https://github.com/tlaplus/tlaplus/releases
(Java 11 or newer runs it). Building it from source: in a checkout of
tlaplus/tlaplus, run 'ant -f customBuild.xml compile dist' in
tlatools/org.lamport.tlatools; the jar lands in dist/.`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are tlcrun's flags.
type options struct {
	jar, java, manifest, only string
	update, goOnly, large     bool
	tlcLimit                  time.Duration
}

func run(args []string, stdout, stderr io.Writer) int {
	opt, code := parseOptions(args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if !opt.goOnly {
		if code := findTLC(opt, stderr); code != 0 {
			return code
		}
	}
	man, hashes, err := loadManifest(opt)
	if err != nil {
		fmt.Fprintf(stderr, "tlcrun: %v\n", err)
		return 2
	}
	failed := checkFresh(opt, man, hashes, stdout) + checkModels(opt, filepath.Dir(opt.manifest), man, stdout)
	if opt.update {
		if err := updateManifest(opt, man, hashes); err != nil {
			fmt.Fprintf(stderr, "tlcrun: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "updated %s\n", opt.manifest)
	}
	return exitCode(failed, stdout)
}

// exitCode is 1, saying how many, if any model failed, else 0.
func exitCode(failed int, stdout io.Writer) int {
	if failed > 0 {
		fmt.Fprintf(stdout, "%d model(s) failed\n", failed)
		return 1
	}
	return 0
}

// checkFresh fails (1) if the manifest's TLC numbers predate the specs,
// unless -update measures them again with TLC.
func checkFresh(opt options, man *tla.Manifest, hashes map[string]string, stdout io.Writer) int {
	stale := man.StaleFiles(hashes)
	if len(stale) == 0 || opt.update && !opt.goOnly {
		return 0
	}
	fmt.Fprintf(stdout, "FAIL the manifest's TLC numbers predate changes to %s: measure again with -update\n", strings.Join(stale, ", "))
	return 1
}

// loadManifest reads the manifest, which must name the -only model if
// one is given, and hashes the specs beside it.
func loadManifest(opt options) (*tla.Manifest, map[string]string, error) {
	man, err := tla.Load(opt.manifest)
	if err != nil {
		return nil, nil, err
	}
	if opt.only != "" && !slices.ContainsFunc(man.Models, func(m tla.Model) bool { return m.Name == opt.only }) {
		return nil, nil, fmt.Errorf("-only %s: %s has no such model", opt.only, opt.manifest)
	}
	hashes, err := tla.SpecHashes(filepath.Dir(opt.manifest))
	if err != nil {
		return nil, nil, err
	}
	return man, hashes, nil
}

// updateManifest writes man, measured on this machine, with the specs'
// hashes when every model was checked with TLC.
func updateManifest(opt options, man *tla.Manifest, hashes map[string]string) error {
	man.Machine = fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if opt.only == "" && !opt.goOnly {
		man.SpecSHA256 = hashes
	}
	return tla.Write(opt.manifest, man)
}

// parseOptions reads the flags. It returns the exit code when tlcrun must
// stop (0 after -h, 2 on a usage error), or -1.
func parseOptions(args []string, stdout, stderr io.Writer) (options, int) {
	fs := flag.NewFlagSet("tlcrun", flag.ContinueOnError)
	var opt options
	fs.StringVar(&opt.jar, "jar", os.Getenv("TLA2TOOLS"), "path of tla2tools.jar (default $TLA2TOOLS)")
	fs.StringVar(&opt.manifest, "manifest", "tla/manifest.json", "the manifest")
	fs.StringVar(&opt.only, "only", "", "check only this model (by name)")
	fs.BoolVar(&opt.update, "update", false, "record the measured numbers in the manifest instead of comparing them")
	fs.BoolVar(&opt.goOnly, "go-only", false, "run only the Go explorer (no TLC or Java needed) and compare its counts with the manifest's, or record them with -update")
	fs.StringVar(&opt.java, "java", "java", "the java command")
	fs.BoolVar(&opt.large, "large", false, "also check the models marked large (skipped by default): the Go explorer in fingerprint mode, TLC stopped after -tlc-limit")
	fs.DurationVar(&opt.tlcLimit, "tlc-limit", 30*time.Minute, "on a large model, stop TLC after this long and record the counts it reached as incomplete")
	fs.SetOutput(io.Discard) // errors and usage are printed below
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return opt, 0
		}
		fmt.Fprintf(stderr, "tlcrun: %v\n", err)
		fs.SetOutput(stderr)
		fs.Usage()
		return opt, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tlcrun: unexpected argument %q\n", fs.Arg(0))
		return opt, 2
	}
	return opt, -1
}

// checkModels runs TLC (unless -go-only) and the Go explorer on every
// model (or the -only one), and returns how many failed.
func checkModels(opt options, dir string, man *tla.Manifest, stdout io.Writer) int {
	failed := 0
	for i := range man.Models {
		m := &man.Models[i]
		if opt.selects(m, stdout) && !checkModel(opt, dir, m, stdout) {
			failed++
		}
	}
	return failed
}

// selects reports whether this run checks m: the -only model if one is
// named, else every model but the large ones (unless -large), whose skip
// it reports.
func (opt options) selects(m *tla.Model, stdout io.Writer) bool {
	if opt.only != "" {
		return m.Name == opt.only
	}
	if m.Large && !opt.large {
		fmt.Fprintf(stdout, "skip %s: a large model (-large checks it)\n", m.Name)
		return false
	}
	return true
}

// checkModel runs TLC (unless -go-only) and the Go explorer on m and
// reports whether both passed.
func checkModel(opt options, dir string, m *tla.Model, stdout io.Writer) bool {
	fmt.Fprintf(stdout, "== %s (%s): %s\n", m.Name, m.Kind, m.Demonstrates)
	ok := true
	if !opt.goOnly {
		ok = runTLC(opt, dir, m, stdout)
	}
	if !runGo(opt, dir, m, stdout) || !ok {
		return false
	}
	if !opt.update {
		fmt.Fprintf(stdout, "ok   %s\n", m.Name)
	}
	return true
}

// findTLC checks that tla2tools.jar and java are there, saying how to get
// them if not; it returns the exit code (0 when both are found).
func findTLC(opt options, stderr io.Writer) int {
	if opt.jar == "" {
		fmt.Fprintln(stderr, howToGetTLC)
		return 2
	}
	if _, err := os.Stat(opt.jar); err != nil {
		fmt.Fprintf(stderr, "tlcrun: TLA2TOOLS=%s: %v\n\n%s\n", opt.jar, err, howToGetTLC)
		return 2
	}
	if _, err := exec.LookPath(opt.java); err != nil {
		fmt.Fprintf(stderr, "tlcrun: %s not found: TLC needs Java 11 or newer (Debian: apt-get install default-jre-headless)\n", opt.java)
		return 2
	}
	return 0
}

// runTLC model-checks m with TLC and compares the result with the
// manifest, or records it in m with -update. It reports whether m passed.
func runTLC(opt options, dir string, m *tla.Model, stdout io.Writer) bool {
	var limit time.Duration
	if m.Large {
		limit = opt.tlcLimit
	}
	res, err := check(opt.java, opt.jar, dir, *m, limit, stdout)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s: %v\n", m.Name, err)
		return false
	}
	fmt.Fprintf(stdout, "   tlc: %d distinct, %d generated, depth %d, %.1fs, max RSS %d MiB%s%s\n",
		res.Distinct, res.Generated, res.Depth, res.Seconds, res.MaxRSSKB/1024, violationNote(res.Violation), incompleteNote(res.Incomplete))
	if opt.update {
		m.TLC = res.Measure
		return true
	}
	return report(stdout, m.Name, "tlc", compare(*m, res))
}

// runGo explores m with the Go explorer and compares its counts with TLC's
// (positive models) and with the manifest's go record, or records them in
// m with -update (where they must still agree with TLC's). It reports
// whether m passed.
func runGo(opt options, dir string, m *tla.Model, stdout io.Writer) bool {
	got, err := explore(dir, *m)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s (go): %v\n", m.Name, err)
		return false
	}
	fmt.Fprintf(stdout, "   go:  %d distinct, %d generated, depth %d, %.3fs%s\n",
		got.Distinct, got.Generated, got.Depth, got.Seconds, violationNote(got.Violation))
	record := &m.Go
	if opt.update {
		m.Go, record = got, nil
	}
	return report(stdout, m.Name, "go", m.GoMismatches(got, record))
}

// report prints a FAIL line per problem and reports whether there were
// none.
func report(stdout io.Writer, model, checker string, problems []string) bool {
	for _, p := range problems {
		fmt.Fprintf(stdout, "FAIL %s (%s): %s\n", model, checker, p)
	}
	return len(problems) == 0
}

// explore runs the Go explorer, with every core, on one manifest model
// (a large one in fingerprint mode): tlcrun's one call into the model
// loader and the explorer.
func explore(dir string, m tla.Model) (tla.Measure, error) {
	path := filepath.Join(dir, m.Cfg)
	if mod, err := tlcmodel.SpecModule(path); err == nil {
		switch {
		case barrier.IsSpecModule(mod):
			return exploreBarrier(path)
		case barrier.IsSinkModule(mod):
			return exploreSink(path)
		}
	}
	return exploreCL(path, m.Large)
}

// exploreCL runs the Chandy-Lamport specs' explorer on the model at path
// (in fingerprint mode if large).
func exploreCL(path string, large bool) (tla.Measure, error) {
	cfg, err := model.Load(path)
	if err != nil {
		return tla.Measure{}, err
	}
	res, err := model.Explore(cfg, model.Options{Fingerprint: large})
	if err != nil {
		return tla.Measure{}, err
	}
	if v := res.Violation; v != nil {
		return measured(res.Counts, v.Property, v.Kind)
	}
	return measured(res.Counts, "", "")
}

// measured is what tlcrun records of a Go search: its counts and, when
// kind is not "", the property its violation of that kind names.
func measured(c engine.Counts, prop spec.Property, kind string) (tla.Measure, error) {
	got := tla.Measure{
		Distinct:  c.Distinct,
		Generated: c.Generated,
		Depth:     int64(c.Depth),
		Seconds:   math.Round(c.Duration.Seconds()*1000) / 1000,
		Version:   runtime.Version(),
	}
	if kind != "" {
		if prop == "" {
			return got, fmt.Errorf("the Go explorer reports a %s", kind)
		}
		got.Violation = prop
	}
	return got, nil
}

func incompleteNote(why string) string {
	if why == "" {
		return ""
	}
	return " (incomplete: " + why + ")"
}

func violationNote(v spec.Property) string {
	if v == "" {
		return ""
	}
	return ", violated: " + string(v)
}

// compare checks a TLC result against the manifest (tla.Model.Mismatches)
// and requires TLC to complete on a positive model.
func compare(m tla.Model, r Result) []string {
	p := m.Mismatches(r.Measure, nil)
	if m.Kind == tla.Positive && !r.Completed && r.Incomplete == "" {
		p = append(p, fmt.Sprintf("TLC did not complete: %s", strings.Join(r.Errors, "; ")))
	}
	return p
}

// tlcWorkers is TLC's -workers for model m: one for the models whose
// counts the Go explorer must equal, since only a single worker searches
// strictly breadth first (with several, a state may first be reached by
// a longer path, and TLC's depth comes out larger: MCFaultsTwoSnap
// reports depth 22 with -workers auto on 2 cores and 21, the Go
// explorer's, with one); all cores for a large model, where TLC is only
// run to see how far it gets.
func tlcWorkers(m tla.Model) string {
	if m.Large {
		return "auto"
	}
	return "1"
}

// check runs SANY then TLC on one model, in a scratch copy of the tla
// folder so TLC's state files stay out of the tree. A positive limit
// stops TLC after that long; its last progress line is then the result,
// marked incomplete.
func check(java, jar, dir string, m tla.Model, limit time.Duration, log io.Writer) (Result, error) {
	work, err := os.MkdirTemp("", "tlcrun-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(work)
	if err := copySpecs(dir, work); err != nil {
		return Result{}, err
	}
	cfg := m.Cfg
	module := strings.TrimSuffix(cfg, ".cfg") + ".tla"
	if _, err := os.Stat(filepath.Join(work, module)); err != nil {
		return Result{}, fmt.Errorf("model %s: no module %s beside %s", m.Name, module, cfg)
	}
	if err := sany(java, jar, work, module); err != nil {
		return Result{}, err
	}
	return runTLCIn(java, jar, work, m, module, limit, log)
}

// runTLCIn runs TLC on module, model m's, in work: stopped after limit
// if positive, its last progress line then the result, marked
// incomplete.
func runTLCIn(java, jar, work string, m tla.Model, module string, limit time.Duration, log io.Writer) (Result, error) {
	cfg := m.Cfg
	start := time.Now()
	tlc := exec.Command(java, "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC",
		"-workers", tlcWorkers(m), "-cleanup", "-metadir", filepath.Join(work, "states"),
		"-config", cfg, module)
	tlc.Dir = work
	out := &progressWriter{log: log}
	tlc.Stdout = out
	tlc.Stderr = out
	if err := tlc.Start(); err != nil {
		return Result{}, err
	}
	limit, runErr := waitLimited(tlc, limit)
	secs := time.Since(start).Seconds()
	res, err := parseRun(out.buf.String(), m, limit)
	if err != nil {
		return res, fmt.Errorf("%v (TLC exit: %v)\n%s", err, runErr, tail(out.buf.String(), 30))
	}
	res.Seconds = float64(int(secs*10)) / 10
	if ru, ok := tlc.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSSKB = ru.Maxrss
	}
	return res, nil
}

// waitLimited waits for tlc, started, killing it after limit if that is
// positive. It returns the limit that stopped TLC (0 if TLC ended on its
// own) and TLC's exit.
func waitLimited(tlc *exec.Cmd, limit time.Duration) (time.Duration, error) {
	if limit <= 0 {
		return 0, tlc.Wait()
	}
	stopped := make(chan struct{})
	timer := time.AfterFunc(limit, func() { close(stopped); tlc.Process.Kill() })
	runErr := tlc.Wait()
	if timer.Stop() {
		return 0, runErr // TLC ended on its own
	}
	<-stopped
	return limit, runErr
}

// parseRun reads the result of TLC's run of m from its output: its last
// progress line, marked incomplete, if tlcrun stopped it after limit
// (positive), else its final counts.
func parseRun(out string, m tla.Model, limit time.Duration) (Result, error) {
	if limit <= 0 {
		return Parse(out)
	}
	res, err := ParseProgress(out)
	res.Incomplete = fmt.Sprintf("TLC (-workers %s) stopped by tlcrun -tlc-limit after %s, %d states left on queue", tlcWorkers(m), limit, res.left)
	return res, err
}

// copySpecs copies the .tla and .cfg files of dir into work.
func copySpecs(dir, work string) error {
	names, err := tla.SpecFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sany parses module in work with SANY, the TLA+ front end, and says
// why it rejects it.
func sany(java, jar, work, module string) error {
	cmd := exec.Command(java, "-cp", jar, "tla2sany.SANY", module)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(out, []byte("*** Errors")) {
		return fmt.Errorf("SANY rejected %s: %v\n%s", module, err, tail(string(out), 20))
	}
	return nil
}

// progressWriter keeps all of TLC's output and passes its Progress lines
// through to log as they come, so long runs show life. exec calls Write
// from one goroutine at a time because Stdout and Stderr are the same.
type progressWriter struct {
	log     io.Writer
	buf     bytes.Buffer
	partial []byte
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		if line := string(w.partial[:i]); strings.HasPrefix(line, "Progress(") {
			fmt.Fprintf(w.log, "   %s\n", line)
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
