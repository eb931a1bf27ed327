package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/spec"
)

const exportAbout = `
Exports TRACE (JSON lines, as written by the runtime, the demo or the
conformance tests; or a directory: the per-node logs of one
multi-process run in it, merged in causal order as markerwave audit DIR
merges them) as one or more views of the run: a space-time diagram,
a ShiViz log, a TLC trace-validation model, optionally checked by TLC.
A barrier trace (a dataflow run, markerwave-barrier-trace/1) has a
diagram only: a lane per node, records and barriers as arrows, the
channel state (logged and overtaken records) thick, inputs blocked by
alignment shaded, the cut and any restore. So does a sink trace (a
two-phase-commit sink's steps, markerwave-sink-trace/1): a lane for the
sink and one for the store, a column per step, each restore a divider,
and the step where its audit diverges, if it does, ringed in red.

A run missing events its vector clocks say happened (one node's log
alone) is incomplete and not drawn, as audit does not audit it: its
receives from the other nodes would have no sends. Give the directory
of the run's node logs instead.

Exit status: 0 done (and, with --run-tlc, TLC accepted the trace); 1 TLC
rejected the trace: it is not a behaviour of tla/ChandyLamport.tla; 2 bad
usage, an unreadable, malformed or incomplete trace, an unwritable
output, or TLC could not run.`

// exportJob is one export run, as the flags describe it.
type exportJob struct {
	trace   string
	diagram string // diagram file, "" for none
	format  export.Format
	view    export.View // the diagram's snapshot and columns
	window  string      // --window FROM:TO, "" for none
	shiviz  string      // ShiViz log file, "" for none
	tlcDir  string      // TLC model folder, "" for none
	specDir string      // where the spec modules are, "" to find them
	runTLC  bool        // run TLC on tlcDir
	jar     string      // tla2tools.jar
	java    string
	timeout time.Duration
}

// runExport runs `markerwave export`: it reads the trace, then writes each
// export asked for, in order, and runs TLC if asked.
func runExport(args []string, stdout, stderr io.Writer) int {
	f := newFlags("export", "[flags] TRACE", exportAbout, stdout, stderr)
	var j exportJob
	j.define(f)
	if code, done := f.parse(args); done {
		return code
	}
	if code := j.settle(f); code != exitOK {
		return code
	}
	tr, kind, code := j.read(f)
	switch {
	case code != exitOK:
		return code
	case kind == barrierTraceFile:
		return j.exportBarrier(f)
	case kind == sinkTraceFile:
		return j.exportSink(f)
	}
	for _, step := range []func(*cmdFlags, spec.Trace) int{j.whole, j.writeDiagram, j.writeShiViz, j.writeTLC, j.checkTLC} {
		if code := step(f, tr); code != exitOK {
			return code
		}
	}
	return exitOK
}

// whole refuses a run that lacks events its vector clocks say happened
// (one node's log alone, or a directory missing one), as audit does
// (conformance.Whole): drawn, its receives from the missing nodes would
// have no sends, and its snapshots' messages would look like orphans.
func (j *exportJob) whole(f *cmdFlags, tr spec.Trace) int {
	if err := conformance.Whole(tr); err != nil {
		return exportFailed(f, fmt.Errorf("%s: %w", j.trace, err))
	}
	return exitOK
}

// define defines export's flags into j.
func (j *exportJob) define(f *cmdFlags) {
	f.StringVar(&j.diagram, "diagram", "", "write a space-time diagram with every snapshot's cut to `FILE` (.svg, or .html for a zoomable page with a table of the snapshots), events in columns of causal depth (Lamport time), and print the columns drawn, the size, and each snapshot's total and its orphan and missing messages")
	f.Func("snap", "with --diagram: draw only snapshot `N` (its cut, markers and messages) and, without --window, only its neighbourhood: the columns of its recording points and its markers' receives, widened towards the sends and receives of the messages its cut classifies up to "+fmt.Sprint(export.MaxSpan)+" columns, and "+fmt.Sprint(export.Margin)+" more either side", j.setSnap)
	f.StringVar(&j.window, "window", "", "with --diagram: draw only columns `FROM:TO` (inclusive; either may be empty for the run's start or end). The diagram's columns are Lamport times, shown on its axis and in each event's hover text: concurrent events share one")
	f.StringVar(&j.shiviz, "shiviz", "", "write a ShiViz log to `FILE` (its parser regex on the first line)")
	f.StringVar(&j.tlcDir, "tlc", "", "write a TLC trace-validation model to `DIR`: MCTrace.tla, MCTrace.cfg and the spec modules ChandyLamport.tla and TraceChandyLamport.tla")
	f.StringVar(&j.jar, "run-tlc", "", "with --tlc: also run TLC, tla2tools.jar at `JAR` (empty: $TLA2TOOLS), and print its verdict")
	f.StringVar(&j.specDir, "spec-dir", "", "the `DIR` holding the spec modules (default: $MARKERWAVE_TLA_DIR, else the repository's tla/ found from the working directory or a parent)")
	f.StringVar(&j.java, "java", "java", "the java `command` that runs TLC")
	f.DurationVar(&j.timeout, "tlc-timeout", 5*time.Minute, "bound on the TLC run")
}

// setSnap is --snap's value: a snapshot id.
func (j *exportJob) setSnap(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return fmt.Errorf("want a snapshot id, a positive integer")
	}
	j.view.Snap = spec.SnapID(n)
	return nil
}

// traceFile is the kind of trace export reads: a Chandy-Lamport run's,
// or a barrier or sink trace's file (which exportBarrier and exportSink
// read).
type traceFile int

const (
	runTraceFile traceFile = iota
	barrierTraceFile
	sinkTraceFile
)

// read reads the run to export: TRACE, or the one run the files of
// directory TRACE make, the node logs of a multi-process run merged as
// markerwave audit merges them (gatherRuns). kind says whether j.trace
// is instead a barrier or a sink trace's file, left unread.
func (j *exportJob) read(f *cmdFlags) (tr spec.Trace, kind traceFile, code int) {
	if !isDir(j.trace) {
		return j.readFile(f)
	}
	var runs []auditRun
	gatherRuns(f, []string{j.trace}, nil, false, func(r auditRun, _ bool) { runs = append(runs, r) })
	if len(runs) != 1 {
		return tr, runTraceFile, f.usageError("%s holds %s, not the node logs of one run: export draws one run, give one of its files", j.trace, plural(len(runs), "run"))
	}
	r := runs[0]
	if r.err != nil {
		return tr, runTraceFile, exportFailed(f, r.err)
	}
	if r.files != nil {
		f.errorf("%s: merged %s (%s)", j.trace, plural(len(r.files), "node log"), strings.Join(r.files, ", "))
	}
	j.trace = r.name
	if r.barrier {
		return r.tr, barrierTraceFile, exitOK
	}
	return r.tr, runTraceFile, exitOK
}

// readFile reads trace file j.trace, or says it is a barrier or sink
// trace's.
func (j *exportJob) readFile(f *cmdFlags) (spec.Trace, traceFile, int) {
	switch {
	case conformance.IsBarrierTraceFile(j.trace):
		return spec.Trace{}, barrierTraceFile, exitOK
	case conformance.IsSinkTraceFile(j.trace):
		return spec.Trace{}, sinkTraceFile, exitOK
	}
	tr, _, err := conformance.ReadTraceFile(j.trace)
	if err != nil {
		return tr, runTraceFile, exportFailed(f, err)
	}
	return tr, runTraceFile, exitOK
}

// settle checks the arguments and completes j from them: the trace, the
// diagram's format, whether to run TLC and with which jar. It returns
// exitOK or reports a usage error.
func (j *exportJob) settle(f *cmdFlags) int {
	if f.NArg() != 1 {
		return f.usageError("want exactly one TRACE, got %d", f.NArg())
	}
	j.trace = f.Arg(0)
	if j.diagram == "" && j.shiviz == "" && j.tlcDir == "" {
		return f.usageError("nothing to do: give --diagram, --shiviz or --tlc")
	}
	for _, step := range []func(*cmdFlags) int{j.settleDiagram, j.settleWindow, j.settleTLC} {
		if code := step(f); code != exitOK {
			return code
		}
	}
	return exitOK
}

// settleDiagram takes the diagram's format from its file name; --snap
// and --window need a diagram.
func (j *exportJob) settleDiagram(f *cmdFlags) int {
	if j.diagram == "" {
		if f.isSet("snap") || j.window != "" {
			return f.usageError("--snap and --window need --diagram")
		}
		return exitOK
	}
	format, err := export.FormatOf(j.diagram)
	if err != nil {
		return f.usageError("--diagram %s: diagram file must end in .svg or .html", j.diagram)
	}
	j.format = format
	return exitOK
}

// settleWindow parses --window into the diagram's view.
func (j *exportJob) settleWindow(f *cmdFlags) int {
	if j.window == "" {
		return exitOK
	}
	from, to, ok := parseWindow(j.window)
	if !ok {
		return f.usageError("--window %s: want FROM:TO, column numbers from 1 with FROM <= TO, either may be empty", j.window)
	}
	j.view.From, j.view.To = from, to
	return exitOK
}

// settleTLC checks --run-tlc: it needs --tlc and a tla2tools.jar (the
// flag's, else $TLA2TOOLS).
func (j *exportJob) settleTLC(f *cmdFlags) int {
	j.runTLC = f.isSet("run-tlc")
	if !j.runTLC {
		return exitOK
	}
	if j.tlcDir == "" {
		return f.usageError("--run-tlc needs --tlc DIR")
	}
	j.jar = cmp.Or(j.jar, os.Getenv("TLA2TOOLS"))
	if j.jar == "" {
		return f.usageError("--run-tlc: no tla2tools.jar given and TLA2TOOLS is unset")
	}
	return exitOK
}

// writeDiagram writes the diagram, if asked, and prints its notes: each
// snapshot's total and faulty messages.
func (j *exportJob) writeDiagram(f *cmdFlags, tr spec.Trace) int {
	if j.diagram == "" {
		return exitOK
	}
	a, err := export.Analyze(tr)
	if err == nil {
		err = a.CheckView(j.view) // before the file is created
	}
	if err != nil {
		return exportFailed(f, err)
	}
	ext, code := j.drawDiagram(f, func(w io.Writer) (export.Extent, []string, error) {
		ext, err := a.Draw(w, j.format, j.view)
		return ext, a.Notes(j.view.Snap), err
	})
	if code == exitOK && ext.Width > wideDiagram && j.view == (export.View{}) {
		f.errorf("the diagram is %d px wide; --snap N or --window FROM:TO draws a part of the run", ext.Width)
	}
	return code
}

// drawDiagram writes the diagram file with draw and prints what it drew
// (the columns, the size) and draw's notes: the one output of both
// diagrams, a Chandy-Lamport run's and a barrier trace's.
func (j *exportJob) drawDiagram(f *cmdFlags, draw func(io.Writer) (export.Extent, []string, error)) (export.Extent, int) {
	var ext export.Extent
	var notes []string
	if err := writeFile(j.diagram, func(w io.Writer) (err error) {
		ext, notes, err = draw(w)
		return err
	}); err != nil {
		return ext, exportFailed(f, err)
	}
	fmt.Fprintf(f.stdout, "wrote %s: %s\n", j.diagram, ext)
	for _, l := range notes {
		fmt.Fprintf(f.stdout, "  %s\n", l)
	}
	return ext, exitOK
}

// wideDiagram is the width, in pixels, above which export suggests
// --snap or --window.
const wideDiagram = 20000

// parseWindow parses --window's FROM:TO; an empty end is 0, the run's.
func parseWindow(s string) (from, to int, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	end := func(t string) (int, bool) {
		if t == "" {
			return 0, true
		}
		n, err := strconv.Atoi(t)
		return n, err == nil && n >= 1
	}
	from, ok1 := end(a)
	to, ok2 := end(b)
	return from, to, ok1 && ok2 && (to == 0 || from <= to)
}

// writeShiViz writes the ShiViz log, if asked.
func (j *exportJob) writeShiViz(f *cmdFlags, tr spec.Trace) int {
	if j.shiviz == "" {
		return exitOK
	}
	if err := writeFile(j.shiviz, func(w io.Writer) error { return export.ShiViz(tr, w) }); err != nil {
		return exportFailed(f, err)
	}
	fmt.Fprintf(f.stdout, "wrote %s\n", j.shiviz)
	fmt.Fprintf(f.stdout, "  ShiViz parser regex (first line of the file): %s\n", export.ShiVizRegex)
	return exitOK
}

// writeTLC writes the TLC trace-validation model, if asked.
func (j *exportJob) writeTLC(f *cmdFlags, tr spec.Trace) int {
	if j.tlcDir == "" {
		return exitOK
	}
	specDir := j.specDir
	if specDir == "" {
		var err error
		if specDir, err = export.FindSpecDir(); err != nil {
			return exportFailed(f, err)
		}
	}
	if err := export.ExportTLCFrom(tr, j.tlcDir, specDir); err != nil {
		return exportFailed(f, err)
	}
	fmt.Fprintf(f.stdout, "wrote %s/MCTrace.tla and MCTrace.cfg (%s), with %s\n", j.tlcDir, plural(len(tr.Events), "event"), strings.Join(export.SpecFiles, ", "))
	return exitOK
}

// checkTLC runs TLC on the written model, if asked, and prints its
// verdict: exitOK if it accepts the trace, exitFail if it rejects it.
func (j *exportJob) checkTLC(f *cmdFlags, tr spec.Trace) int {
	if !j.runTLC {
		return exitOK
	}
	ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
	defer cancel()
	v, err := export.RunTLC(ctx, j.java, j.jar, j.tlcDir)
	if err != nil {
		return exportFailed(f, err)
	}
	n := len(tr.Events)
	switch {
	case v.Accepted && v.Events != n:
		return f.fail(exitUsage, fmt.Errorf("TLC consumed %s but the trace has %d; is %s/MCTrace.tla stale?", plural(v.Events, "event"), n, j.tlcDir))
	case v.Accepted:
		fmt.Fprintf(f.stdout, "TLC: ACCEPTED: all %s are a behaviour of ChandyLamport; invariants hold along it\n", plural(v.Events, "event"))
		return exitOK
	}
	printRejected(f.stdout, tr, v)
	return exitFail
}

// printRejected prints TLC's rejection of trace tr: the property, TLC's
// errors and the first event that does not match.
func printRejected(w io.Writer, tr spec.Trace, v export.TLCVerdict) {
	n := len(tr.Events)
	fmt.Fprintf(w, "TLC: REJECTED: the trace is not a behaviour of ChandyLamport\nproperty: %s\n", v.Property())
	for _, e := range v.Errors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	if v.Consumed >= 0 && v.Consumed < n {
		fmt.Fprintf(w, "  matched %d of %s; the first that does not match is event %d: %s\n", v.Consumed, plural(n, "event"), v.Consumed+1, tr.Events[v.Consumed])
	}
}

// exportFailed reports err, without the library's "export: " prefix (the
// command's prefix says it), and returns exitUsage.
func exportFailed(f *cmdFlags, err error) int {
	return f.fail(exitUsage, errors.New(strings.TrimPrefix(err.Error(), "export: ")))
}

// writeFile creates path and writes it with gen; an error names path.
func writeFile(path string, gen func(io.Writer) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	err = gen(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
