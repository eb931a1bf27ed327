package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/spec"
)

// Exit codes of check beyond the common ones (cli.go).
const (
	exitBounded     = 3   // --max-states or --max-memory stopped the search: not a pass
	exitInterrupted = 130 // SIGINT (Ctrl-C) stopped the search: 128 + SIGINT, as shells report it
)

const checkAbout = `Loads a TLC model (FILE.cfg and the module FILE.tla beside it) and checks
it in Go as TLC would: every reachable state (breadth-first, in parallel),
or random behaviours with --simulate. The report (TLC's summary lines, or
one JSON object with --json) goes to stdout; progress and errors to stderr.

Exit status: 0 every property holds; 1 a property is violated (or a
deadlock reached); 2 bad usage or a bad model file (constants that
overflow included); 3 --max-states or --max-memory stopped the search
before it covered every state (not a pass); 130 interrupted by Ctrl-C
(SIGINT), after printing the counts reached.`

// checkFlags are check's flags.
type checkFlags struct {
	*cmdFlags
	model     *string
	workers   *int
	simulate  *bool
	seed      *uint64
	traces    *int
	depth     *int
	progress  *bool
	json      *bool
	maxStates *int64
	maxMemory byteSize

	fingerprint    *bool
	frontierMemory byteSize
	tmpDir         *string
}

func newCheckFlags(stdout, stderr io.Writer) *checkFlags {
	f := &checkFlags{cmdFlags: newFlags("check", "--model FILE.cfg [flags]", checkAbout, stdout, stderr)}
	f.model = f.String("model", "", "the TLC model's `FILE.cfg` (its module, FILE.tla, beside it); required")
	f.workers = f.Int("workers", runtime.GOMAXPROCS(0), "parallel workers for the exhaustive search")
	f.simulate = f.Bool("simulate", false, "check random behaviours instead of every state (like TLC -simulate)")
	f.seed = f.Uint64("seed", 0, "simulation seed (0: from the clock; the seed used is printed)")
	f.traces = f.Int("traces", 1000, "simulation: number of behaviours")
	f.depth = f.Int("depth", 100, "simulation: maximum states per behaviour")
	f.progress = f.Bool("progress", false, "print progress every few seconds to stderr even when it is not a terminal")
	f.json = f.Bool("json", false, "print the verdict as one JSON object (model, verdict, property, counts, counterexample) instead of TLC's lines")
	f.maxStates = f.Int64("max-states", 0, "stop the exhaustive search once more than `N` distinct states are stored (exit 3; 0: no bound)")
	f.Var(&f.maxMemory, "max-memory", "stop the exhaustive search once the stored states take more than `SIZE` (bytes, or e.g. 512MiB, 4GiB; exit 3; 0: no bound); with --fingerprint, the fingerprint set")
	f.fingerprint = f.Bool("fingerprint", false, "store 64-bit fingerprints of the states instead of the states, as TLC does (8 bytes a state; prints TLC's collision probability estimate; a counterexample is rebuilt and confirmed)")
	f.Var(&f.frontierMemory, "frontier-memory", "with --fingerprint, keep at most `SIZE` of the BFS frontier in memory and spill the rest to --tmpdir (0: 256MiB)")
	f.tmpDir = f.String("tmpdir", "", "with --fingerprint, the `DIR` for the spilled frontier and the trace file (default: the system's temporary directory)")
	return f
}

// runCheck is the check command.
func runCheck(args []string, stdout, stderr io.Writer) int {
	f := newCheckFlags(stdout, stderr)
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := f.usage(); bad {
		return f.usageError("%s", msg)
	}
	if err := checkModelFile(*f.model); err != nil {
		return f.fail(exitUsage, err)
	}
	if isBarrierModel(*f.model) {
		return f.runBarrier() // check_barrier.go
	}
	if isSinkModel(*f.model) {
		return f.runSink() // check_sink.go
	}
	cfg, err := model.Load(*f.model)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	if *f.simulate {
		return f.runSimulate(cfg)
	}
	return f.runExplore(cfg)
}

// usage returns the usage error in the flags' values, if any.
func (f *checkFlags) usage() (string, bool) {
	bounded := *f.maxStates > 0 || f.maxMemory > 0 || *f.fingerprint
	spills := f.frontierMemory > 0 || *f.tmpDir != ""
	return broken(
		f.unexpected(),
		rule{*f.model == "", "--model is required"},
		rule{min(*f.workers, *f.traces, *f.depth) < 1, "--workers, --traces and --depth must be at least 1"},
		rule{*f.maxStates < 0, "--max-states must not be negative"},
		rule{*f.simulate && bounded, "--max-states, --max-memory and --fingerprint are for the exhaustive search, not --simulate"},
		rule{!*f.fingerprint && spills, "--frontier-memory and --tmpdir need --fingerprint"},
		rule{*f.tmpDir != "" && !isDir(*f.tmpDir), fmt.Sprintf("--tmpdir %s is not a directory", *f.tmpDir)},
	)
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// checkModelFile names what is wrong with a --model that is not a TLC
// model at all: a trace, or an empty file. Any other file is left to
// the loader, which names what it lacks (a missing file included).
func checkModelFile(path string) error {
	if format, ok := traceFormat(path); ok {
		return fmt.Errorf("--model %s is a trace (%s), not a TLC model: check takes a FILE.cfg (markerwave audit %s replays the trace)", path, format, path)
	}
	if isBlankFile(path) {
		return fmt.Errorf("--model %s is empty: a TLC model names its SPECIFICATION (or INIT and NEXT), CONSTANTS and the properties to check", path)
	}
	return nil
}

// fail reports err (with --json, also as {"model", "error"} on stdout)
// and returns code.
func (f *checkFlags) fail(code int, err error) int {
	f.jsonError(err.Error())
	return f.cmdFlags.fail(code, err)
}

// usageError reports a usage error as cmdFlags does (with --json, also
// on stdout) and returns exitUsage.
func (f *checkFlags) usageError(format string, args ...any) int {
	f.jsonError(fmt.Sprintf(format, args...))
	return f.cmdFlags.usageError(format, args...)
}

// jsonError writes check's --json output for a run that has no verdict:
// the model file and what went wrong.
func (f *checkFlags) jsonError(msg string) {
	if *f.json {
		_ = writeJSON(f.cmdFlags, f.stdout, struct {
			File  string `json:"file"`
			Error string `json:"error"`
		}{*f.model, msg}, exitOK)
	}
}

// header prints what is checked (not with --json).
func (f *checkFlags) header(cfg *model.Config) {
	if *f.json {
		return
	}
	fmt.Fprintf(f.stdout, "Model %s (%s): %s, %s, %s, %s.\n", cfg.Name, *f.model, cfg.Variant,
		plural(cfg.NumProcs(), "process"), plural(cfg.NumChans(), "channel"), plural(cfg.NumSnaps(), "snapshot"))
	if checks := checked(cfg); len(checks) > 0 {
		fmt.Fprintf(f.stdout, "Checking %s.\n", spec.JoinProperties(checks))
	}
}

func checked(cfg *model.Config) []spec.Property {
	return append(slices.Clone(cfg.Invariants), cfg.Properties...)
}

// runExplore is the exhaustive search, stopped by the bounds or SIGINT.
func (f *checkFlags) runExplore(cfg *model.Config) int {
	f.header(cfg)
	f.searchHeader(*f.fingerprint)
	stop, release := interruptible()
	defer release()
	opt := model.Options{Workers: *f.workers, MaxStates: *f.maxStates, MaxMemory: int64(f.maxMemory), Stop: stop,
		Fingerprint: *f.fingerprint, FrontierMemory: int64(f.frontierMemory), TempDir: *f.tmpDir}
	opt.Progress = f.searchProgress()
	r, err := model.Explore(cfg, opt)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	f.searchStopped(r.Violation != nil, r.Counts)
	if *f.json {
		f.writeJSON(exploreVerdict(cfg, *f.model, r))
	} else {
		if r.Violation != nil {
			reportViolation(f.stdout, cfg, r.Violation)
		}
		f.reportSearch(r.Violation != nil, r.Counts)
	}
	return searchCode(r.Violation != nil, r.Stop)
}

// searchHeader prints how the exhaustive search runs (not with --json):
// storing fingerprints or states.
func (f *checkFlags) searchHeader(fingerprint bool) {
	if *f.json {
		return
	}
	mode := ""
	if fingerprint {
		mode = " storing 64-bit fingerprints"
	}
	fmt.Fprintf(f.stdout, "Running breadth-first search with %s%s.\n", plural(*f.workers, "worker"), mode)
}

// The exhaustive searches of both specs (model, and model/barrier for
// tla/BarrierSnapshots.tla) run on model/engine and are reported alike,
// by the functions below.

// searchProgress is the search's progress report on stderr, with
// --progress or when stderr is a terminal (nil otherwise).
func (f *checkFlags) searchProgress() func(engine.Stats) {
	if !*f.progress && !isTerminal(f.stderr) {
		return nil
	}
	return func(s engine.Stats) {
		fmt.Fprintf(f.stderr, "Progress: %d states generated, %d distinct states found, %d states left on queue (%.0f distinct states/s, %.1fs)\n",
			s.Generated, s.Distinct, s.Left, perSecond(s.Distinct, s.Elapsed), s.Elapsed.Seconds())
	}
}

// searchStopped says on stderr why a search that found no violation
// stopped before it covered every state.
func (f *checkFlags) searchStopped(violated bool, c engine.Counts) {
	if !violated && c.Stop != engine.StopDone {
		f.errorf("%s; the search is incomplete", stopWhy(c.Stop, *f.maxStates, int64(f.maxMemory)))
	}
}

// searchCode is the exit status of a search.
func searchCode(violated bool, stop engine.StopReason) int {
	switch {
	case violated:
		return exitFail
	case stop == engine.StopCanceled:
		return exitInterrupted
	case stop != engine.StopDone:
		return exitBounded
	}
	return exitOK
}

// reportSearch prints TLC's summary of a search (after the counterexample,
// if violated), and why it stopped early.
func (f *checkFlags) reportSearch(violated bool, c engine.Counts) {
	w := f.stdout
	switch {
	case violated:
	case c.Stop == engine.StopDone:
		fmt.Fprintf(w, "Model checking completed. No error has been found.\n")
		if c.Fingerprints {
			fmt.Fprintf(w, "  Estimates of the probability that TLC did not check all reachable states\n")
			fmt.Fprintf(w, "  because two distinct states had the same fingerprint:\n")
			fmt.Fprintf(w, "  calculated (optimistic):  val = %s\n", probability(c.Collision))
		}
	default:
		fmt.Fprintf(w, "Model checking stopped before the end: %s. No error has been found in the states explored, but the search is incomplete.\n", stopWhy(c.Stop, *f.maxStates, int64(f.maxMemory)))
	}
	fmt.Fprintf(w, "%d states generated, %d distinct states found, %d states left on queue.\n", c.Generated, c.Distinct, c.Left)
	if c.Stop == engine.StopDone {
		fmt.Fprintf(w, "The depth of the complete state graph search is %d.\n", c.Depth)
	} else {
		fmt.Fprintf(w, "The depth of the search so far is %d.\n", c.Depth)
	}
	fmt.Fprintf(w, "Finished in %s (%.0f distinct states/s).\n", c.Duration.Round(time.Millisecond), perSecond(c.Distinct, c.Duration))
}

// violationHeader prints TLC's lines that open a counterexample.
func violationHeader(w io.Writer, kind string, property spec.Property, detail string) {
	switch kind {
	case engine.KindInvariant:
		fmt.Fprintf(w, "Error: Invariant %s is violated.\n", property)
		fmt.Fprintf(w, "Error: The behavior up to this point is:\n")
	case engine.KindProperty:
		fmt.Fprintf(w, "Error: Temporal property %s was violated.\n", property)
		if detail != "" {
			fmt.Fprintf(w, "Error: %s.\n", detail)
		}
		fmt.Fprintf(w, "Error: The following behavior constitutes a counter-example:\n")
	case engine.KindDeadlock:
		fmt.Fprintf(w, "Error: Deadlock reached.\n")
		fmt.Fprintf(w, "Error: The behavior up to this point is:\n")
	}
}

// probability renders p with two significant digits as TLC does
// (AbstractChecker.ProbabilityToString): 6.0E-8, 0.012.
func probability(p float64) string {
	switch {
	case p == 0:
		return "0.0"
	case p < 1e-3: // where Java's Double.toString switches to E notation
		m, e, _ := strings.Cut(strconv.FormatFloat(p, 'E', 1, 64), "E")
		exp, _ := strconv.Atoi(e)
		return fmt.Sprintf("%sE%d", m, exp)
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

// stopWhy says which bound stopped a search.
func stopWhy(stop engine.StopReason, maxStates, maxMemory int64) string {
	switch stop {
	case model.StopMaxStates:
		return fmt.Sprintf("more than %d distinct states (--max-states)", maxStates)
	case model.StopMaxMemory:
		return fmt.Sprintf("the stored states take more than %s (--max-memory)", byteSize(maxMemory))
	case model.StopCanceled:
		return "interrupted"
	}
	return stop.String()
}

// runSimulate is the random simulation.
func (f *checkFlags) runSimulate(cfg *model.Config) int {
	f.header(cfg)
	seed := cmp.Or(*f.seed, uint64(time.Now().UnixNano()))
	if !*f.json {
		fmt.Fprintf(f.stdout, "Running random simulation with seed %d (%s of at most %s).\n", seed, plural(*f.traces, "behaviour"), plural(*f.depth, "state"))
	}
	stop, release := interruptible()
	defer release()
	r, err := model.Simulate(cfg, model.SimOptions{Seed: seed, Traces: *f.traces, Depth: *f.depth, Stop: stop})
	if err != nil {
		return f.fail(exitUsage, err)
	}
	if r.Canceled && r.Violation == nil {
		f.errorf("interrupted after %s; the simulation is incomplete", plural(r.Traces, "behaviour"))
	}
	if *f.json {
		f.writeJSON(simulateVerdict(cfg, *f.model, seed, r))
	} else {
		f.reportSimulation(cfg, r)
	}
	return simulateCode(r)
}

// simulateCode is the exit status of a simulation.
func simulateCode(r *model.SimResult) int {
	switch {
	case r.Violation != nil:
		return exitFail
	case r.Canceled:
		return exitInterrupted
	}
	return exitOK
}

// reportSimulation prints a simulation's counterexample, if any, and its
// summary, as TLC does.
func (f *checkFlags) reportSimulation(cfg *model.Config, r *model.SimResult) {
	w := f.stdout
	if r.Violation != nil {
		reportViolation(w, cfg, r.Violation)
	} else {
		fmt.Fprintf(w, "No error has been found in %s.\n", plural(r.Traces, "behaviour"))
		if r.Canceled {
			fmt.Fprintf(w, "The simulation was interrupted before %s.\n", plural(*f.traces, "behaviour"))
		}
	}
	fmt.Fprintf(w, "%d states checked in %s (longest %s), %d states generated.\n", r.States, plural(r.Traces, "behaviour"), plural(r.MaxLen, "state"), r.Generated)
	fmt.Fprintf(w, "Finished in %s (%.0f states/s).\n", r.Duration.Round(time.Millisecond), perSecond(r.States, r.Duration))
}

// reportViolation prints a violation and its counterexample as TLC does.
func reportViolation(w io.Writer, cfg *model.Config, v *model.Violation) {
	violationHeader(w, v.Kind, v.Property, v.Detail)
	model.WriteTrace(w, cfg, v)
}

// checkVerdict is check's --json output.
type checkVerdict struct {
	Model         string          `json:"model"` // the module's name
	File          string          `json:"file"`  // the .cfg
	Specification string          `json:"specification"`
	Checked       []spec.Property `json:"checked"`
	Mode          string          `json:"mode"`    // "exhaustive" or "simulate"
	Verdict       string          `json:"verdict"` // "ok", "violated" or "incomplete"
	// Stop says why an exhaustive search ended: done, max-states,
	// max-memory or canceled.
	Stop     string        `json:"stop,omitempty"`
	Property spec.Property `json:"property,omitempty"` // the property violated
	Kind     string        `json:"kind,omitempty"`     // invariant, property (temporal) or deadlock
	Detail   string        `json:"detail,omitempty"`
	Counts   any           `json:"counts"` // exploreCounts or simulateCounts
	Seconds  float64       `json:"duration_seconds"`
	// Counterexample is the violation's behaviour, from the initial state.
	Counterexample []checkStep `json:"counterexample,omitempty"`
	Stuttering     bool        `json:"stuttering,omitempty"` // the behaviour ends stuttering forever
}

type exploreCounts struct {
	Generated int64 `json:"generated"`
	Distinct  int64 `json:"distinct"`
	Depth     int   `json:"depth"`
	Left      int64 `json:"left"`
	// Collision is, with --fingerprint, TLC's optimistic estimate of the
	// probability that two distinct states had the same fingerprint.
	Collision *float64 `json:"collision_probability,omitempty"`
}

type simulateCounts struct {
	Seed       uint64 `json:"seed"`
	Behaviours int    `json:"behaviours"`
	States     int64  `json:"states"`
	Generated  int64  `json:"generated"`
	Longest    int    `json:"longest"`
}

// checkStep is one state of a counterexample: the action that led to it
// ("" for the initial state) and the variables it changed, as TLA+.
type checkStep struct {
	Action  string            `json:"action"`
	Changed map[string]string `json:"changed"`
}

func newVerdict(cfg *model.Config, file, mode string, v *model.Violation) checkVerdict {
	out := checkVerdict{Model: cfg.Name, File: file, Specification: string(cfg.Variant), Checked: checked(cfg), Mode: mode, Verdict: "ok"}
	if out.Checked == nil {
		out.Checked = []spec.Property{}
	}
	if v == nil {
		return out
	}
	out.Verdict, out.Property, out.Kind, out.Detail, out.Stuttering = "violated", v.Property, v.Kind, v.Detail, v.Stutter
	for i, vars := range model.ChangedVars(cfg, v.Trace) {
		st := checkStep{Action: v.Trace[i].Label, Changed: map[string]string{}}
		for _, x := range vars {
			st.Changed[x.Name] = x.Value
		}
		out.Counterexample = append(out.Counterexample, st)
	}
	return out
}

func exploreVerdict(cfg *model.Config, file string, r *model.Result) checkVerdict {
	out := newVerdict(cfg, file, "exhaustive", r.Violation)
	if r.Violation == nil && r.Stop != model.StopDone {
		out.Verdict = "incomplete"
	}
	out.Stop = r.Stop.String()
	counts := exploreCounts{Generated: r.Generated, Distinct: r.Distinct, Depth: r.Depth, Left: r.Left}
	if r.Fingerprints {
		counts.Collision = &r.Collision
	}
	out.Counts = counts
	out.Seconds = r.Duration.Seconds()
	return out
}

func simulateVerdict(cfg *model.Config, file string, seed uint64, r *model.SimResult) checkVerdict {
	out := newVerdict(cfg, file, "simulate", r.Violation)
	out.Stop = "done"
	if r.Canceled {
		out.Stop = "canceled"
		if r.Violation == nil {
			out.Verdict = "incomplete"
		}
	}
	out.Counts = simulateCounts{Seed: seed, Behaviours: r.Traces, States: r.States, Generated: r.Generated, Longest: r.MaxLen}
	out.Seconds = r.Duration.Seconds()
	return out
}

func (f *checkFlags) writeJSON(v checkVerdict) {
	enc := json.NewEncoder(f.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		f.errorf("%v", err)
	}
}

// interruptible returns a channel closed on SIGINT, until release is
// called: the Stop of the explorer and of the simulation.
func interruptible() (stop <-chan struct{}, release func()) {
	ch, done := make(chan struct{}), make(chan struct{})
	sigs, unnotify := notifyInterrupt()
	select {
	case <-sigs: // already pending: stop is closed before any work starts
		close(ch)
		return ch, unnotify
	default:
	}
	go func() {
		select {
		case <-sigs:
			close(ch)
		case <-done:
		}
	}()
	return ch, func() { close(done); unnotify() }
}

// notifyInterrupt relays SIGINT until release is called; tests replace it.
var notifyInterrupt = func() (sigs <-chan os.Signal, release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// byteSize is a flag value: a number of bytes, with an optional unit
// (B, kB, MB, GB, TB or KiB, MiB, GiB, TiB).
type byteSize int64

var byteUnits = []struct {
	suffix string
	n      int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}

func (b *byteSize) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 || n*float64(mult) >= 1<<63 {
		return fmt.Errorf("want a size such as 1000000, 512MiB or 4GiB, got %q", s)
	}
	*b = byteSize(n * float64(mult))
	return nil
}

func (b byteSize) String() string {
	for _, u := range byteUnits[:4] {
		if int64(b) >= u.n && int64(b)%u.n == 0 && int64(b)/u.n < 1024 {
			return fmt.Sprintf("%d%s", int64(b)/u.n, u.suffix)
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}
