package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

const auditAbout = `
Replays each run step by step against the model of tla/ChandyLamport.tla
and checks every completed snapshot against the recorded state the trace
reports (derived from the events if it reports none). A barrier trace (a
dataflow run, format markerwave-barrier-trace/1) is replayed against
model/barrier (tla/BarrierSnapshots.tla) for its protocol, and its
snapshot checked from its events (traces/README.md, "Barrier traces").

A TRACE is a trace file, or a directory standing for the .jsonl files in
it. Outsider logs (format markerwave-outsider/1: what each node of an
implementation that is not this project's observes; docs/conformance.md)
in one directory, node logs and reported snapshots alike, are one run
(a file beside them without their header's format refuses it):
the audit derives what they leave out, and says which checks ran on the
implementation's own values and which on derived ones. A trace file holds one run (the demo's out/demo-*/trace.jsonl). The
per-node logs of one run (the runtime's DIR/P1.jsonl, ..., each one
process's events), given together or as their directory, are merged in
causal order and audited as one run (node logs carry no recorded
snapshots: the events imply them). Several runs (a glob such as
out/demo-*/trace.jsonl) are audited one by one, each verdict prefixed by
its path. A run missing events its vector clocks say happened (one node's
log alone) is incomplete and not audited. A run with crashes and
recoveries (restore lines in its trace, or the logs of several
incarnations in the directory, chained by restored_from) is audited
across its restores: each incarnation from the snapshot it was restored
from, and a ledger of transfers over the whole history. A run with
failures (Suspect, Unsuspect, Abort and DropMarker events) is replayed
against tla/ChandyLamportFaults.tla, each step in its node's view of the
suspicions and aborts; a killed node's log simply ends, and its crash is
taken just after its last step when a node still suspects it at the end
(traces/README.md states the rule).

With --json each run's verdict is one JSON object on its own line of
stdout:
  {"trace": path (the directory of merged logs), "files": [merged logs],
   "ok": true if it conforms, "error": why it could not be audited,
   "property": the property violated, "steps": events replayed,
   "snapshots": snapshots complete, "incarnations": a run with restores'
   incarnations (absent for one), "divergence": the first, or null:
   {"step": from 1 in the run's order (a merged run's, 0: at the end),
   "line": its trace line (0: unknown), "file": the file of that line
   in a run of several outsider logs (its node's log; absent otherwise),
   "action", "check": the check that failed, "detail", "expected": the
   model's, "reported": the implementation's, "diff"}, "violations": the
   run properties that fail: [{"property", "snapshot", "detail"}],
   "incomplete": the snapshots initiated and never completed:
   [{"snapshot", "lacks": what each lacks] (empty after a divergence
   at a step: the replay stops there), "aborted": the snapshots
   aborted (absent if none): [{"snapshot", "cause", "initiator",
   "incarnation" (a run with restores'), "why": in the words of the node
   logs and markerwave snapshots}], "notes": what the audit
   derived rather than read (a barrier trace's records without seq,
   parts without counts; absent if nothing)}
An outsider run (format markerwave-outsider/1) adds "format",
"provenance": [{"what", "given", "total", "checks"}] (which values were
the implementation's own, which derived), "notes" and "search"; its
snapshot ids are the implementation's (a JSON number, or a string for a
string id, in "snapshot" and the texts).

Exit status: 0 every run conforms; 1 a run diverges or violates a
property; 2 bad usage, or a trace is unreadable, malformed or incomplete;
130 interrupted (SIGINT): the verdicts printed so far stand, the rest are
not given.`

// auditOpts are audit's flags.
type auditOpts struct {
	drained  bool
	json     bool
	progress bool
}

// runAudit runs `markerwave audit`: it gathers the runs its arguments
// name, audits each and prints one verdict per run. SIGINT stops it
// (exit 130), saying so.
func runAudit(args []string, stdout, stderr io.Writer) int {
	f := newFlags("audit", "[flags] TRACE...", auditAbout, stdout, stderr)
	var o auditOpts
	f.BoolVar(&o.drained, "drained", false, "claim every run ended drained even if its header does not: every channel must end empty and every initiated snapshot complete")
	f.BoolVar(&o.json, "json", false, "print each verdict as one line of JSON (see above)")
	f.BoolVar(&o.progress, "progress", false, "report progress on stderr every 2s (reading the file, the replay, the snapshots' checks) even when stderr is not a terminal")
	if code, done := f.parse(args); done {
		return code
	}
	if f.NArg() == 0 {
		return f.usageError("want at least one TRACE")
	}
	o.progress = o.progress || isTerminal(stderr)
	return untilInterrupt(f, func(g *cmdFlags, stop <-chan struct{}) int {
		a := auditor{f: g, o: o}
		gatherRuns(g, g.Args(), stop, o.progress, a.audit)
		return a.code
	})
}

// untilInterrupt runs work, which reports through g (f with its output
// gated), until it returns or SIGINT: then it says so, drops what work
// still writes and returns exitInterrupted. Work should stop at the next
// point it checks stop.
func untilInterrupt(f *cmdFlags, work func(g *cmdFlags, stop <-chan struct{}) int) int {
	stop, release := interruptible()
	defer release()
	out, errs := &gate{w: f.stdout}, &gate{w: f.stderr}
	g := *f
	g.stdout, g.stderr = out, errs
	done := make(chan int, 1)
	go func() { done <- work(&g, stop) }()
	var code int
	select {
	case code = <-done:
	case <-stop:
		code = exitInterrupted
	}
	if code == exitInterrupted {
		out.close()
		errs.close()
		f.errorf("interrupted")
	}
	return code
}

// gate passes writes to w until closed, then drops them.
type gate struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gate) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(b), nil
	}
	return g.w.Write(b)
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// auditor audits runs and keeps the worst exit status.
type auditor struct {
	f    *cmdFlags
	o    auditOpts
	code int // the worst exit status so far
}

// audit audits r and keeps the worst exit status.
func (a *auditor) audit(r auditRun, several bool) {
	a.code = max(a.code, r.audit(a.f, a.o, several))
}

// gatherRuns reads the runs args name (expandArgs) and hands each to
// each, as its file is read, except the node logs
// (conformance.NodeLog), which it holds until every file is read and
// then merges, a directory's into one run. several says whether there
// is more than one file. A close of stop ends it before the next file.
// With progress, reading a long trace file reports on stderr
// (readProgressEvery).
func gatherRuns(f *cmdFlags, args []string, stop <-chan struct{}, progress bool, each func(r auditRun, several bool)) {
	files := expandArgs(args)
	g := runGatherer{f: f, each: each, several: len(files) > 1, progress: progress, logs: map[string][]auditRun{}, outsider: map[string][]string{},
		strays: map[string][]string{}}
	g.findOutsider(files)
	for _, file := range files {
		if stopped(stop) {
			return
		}
		g.add(file)
	}
	for _, d := range g.outsiderDirs {
		if stopped(stop) {
			return
		}
		each(auditRun{name: d, files: g.outsider[d], strays: g.strays[d], outsider: true}, g.several)
	}
	for _, d := range g.dirs {
		for _, r := range mergeLogs(d, g.logs[d]) {
			if stopped(stop) {
				return
			}
			each(r, g.several)
		}
	}
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// runGatherer is gatherRuns' state: the node logs held, by directory.
type runGatherer struct {
	f        *cmdFlags
	each     func(auditRun, bool)
	several  bool                  // more than one file
	progress bool                  // report the reading of a long file
	logs     map[string][]auditRun // node logs by directory
	dirs     []string              // the keys of logs, in order
	// outsider holds the outsider logs (markerwave-outsider/1) by
	// directory, audited together as one run; outsiderDirs its keys.
	outsider     map[string][]string
	outsiderDirs []string
	// isOutsider marks the files that are outsider logs, and
	// outsiderIn the directories holding one (findOutsider); strays
	// are, by directory, the other files of such a directory, which
	// refuse its run (auditOutsider).
	isOutsider map[string]bool
	outsiderIn map[string]bool
	strays     map[string][]string
}

// findOutsider marks the outsider logs among files, and the
// directories that hold them, before any file is handed on: a file of
// such a directory that is no outsider log (no format, or another) is
// one of that run's files with a wrong header, not a run of its own.
func (g *runGatherer) findOutsider(files []auditRun) {
	g.isOutsider, g.outsiderIn = map[string]bool{}, map[string]bool{}
	for _, r := range files {
		if r.err == nil && conformance.IsOutsiderTraceFile(r.name) {
			g.isOutsider[r.name], g.outsiderIn[filepath.Dir(r.name)] = true, true
		}
	}
}

// add reads file r and hands it on, or holds it if it is a node's log,
// to merge it with the other logs of its directory.
func (g *runGatherer) add(r auditRun) {
	if r.err == nil && (conformance.IsBarrierTraceFile(r.name) || conformance.IsSinkTraceFile(r.name)) {
		r.barrier = true
		g.each(r, g.several)
		return
	}
	if r.err == nil && g.outsiderIn[filepath.Dir(r.name)] {
		g.addOutsider(r.name, g.isOutsider[r.name])
		return
	}
	r = g.read(r)
	if _, ok := conformance.NodeLog(r.tr); r.err != nil || !ok {
		g.each(r, g.several)
		return
	}
	d := filepath.Dir(r.name)
	if g.logs[d] == nil {
		g.dirs = append(g.dirs, d)
	}
	g.logs[d] = append(g.logs[d], r)
}

// read reads trace file r (conformance.ReadCrashedNodeLog: a node log's
// last line cut short by a kill is dropped, saying so).
func (g *runGatherer) read(r auditRun) auditRun {
	if r.err != nil {
		return r
	}
	var cut bool
	var progress func(int)
	if g.progress {
		progress = newProgress(g.f, r.name).read
	}
	r.tr, r.lines, cut, r.err = conformance.ReadCrashedNodeLogProgress(r.name, progress)
	if cut {
		g.f.errorf("%s: its last line is cut short (its node was killed while writing it): dropped", r.name)
	}
	return r
}

// auditRun is one run to audit: a trace file, or per-node logs to merge,
// or a file that could not be read.
type auditRun struct {
	name  string   // the file, or the directory of the logs
	files []string // the logs merged, nil for a trace file
	tr    spec.Trace
	lines spec.TraceLines // none for merged logs
	err   error           // why the run cannot be read; it names the file
	// barrier: a barrier or a sink trace, audited from its file
	// (conformance.AuditFile)
	barrier bool
	// outsider: the outsider logs files, one run (auditOutsider);
	// strays the files beside them that are no outsider logs
	outsider bool
	strays   []string
}

// expandArgs lists the files args name, as runs yet to read: a directory
// stands for the .jsonl files in it (one without any is an error).
func expandArgs(args []string) []auditRun {
	var files []auditRun
	for _, a := range args {
		if !isDir(a) {
			files = append(files, auditRun{name: a}) // reading it reports the error
			continue
		}
		files = append(files, dirRuns(a)...)
	}
	return files
}

// dirRuns are the .jsonl files in directory dir, as runs yet to read;
// a run that cannot be read if there are none.
func dirRuns(dir string) []auditRun {
	m, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err == nil && len(m) == 0 {
		err = fmt.Errorf("%s: no .jsonl files in this directory", dir)
	}
	if err != nil {
		return []auditRun{{name: dir, err: err}}
	}
	runs := make([]auditRun, len(m))
	for i, p := range m {
		runs[i] = auditRun{name: p}
	}
	return runs
}

// mergeLogs merges the node logs of directory dir into one run; a run
// that cannot be read if they do not merge. A single log stays as it is.
func mergeLogs(dir string, logs []auditRun) []auditRun {
	if len(logs) < 2 {
		return logs
	}
	trs := make([]spec.Trace, len(logs))
	files := make([]string, len(logs))
	for i, l := range logs {
		trs[i], files[i] = l.tr, l.name
	}
	tr, err := conformance.MergeNodeLogs(trs)
	if err != nil {
		err = fmt.Errorf("%s: cannot merge its %s: %w%s", dir, plural(len(logs), "node log"), err, staleNote(logs))
	}
	return []auditRun{{name: dir, files: files, tr: tr, err: err}}
}

// staleNote names the logs among logs that belong to no chain of this
// run: restored from a snapshot that no log of the run (from the fresh
// start on, following each restore) took. They are left from an earlier
// run in the same directory; "" if there are none.
func staleNote(logs []auditRun) string {
	chained := chainedLogs(logs)
	var stale []string
	for i, l := range logs {
		if !chained[i] {
			stale = append(stale, fmt.Sprintf("%s (restored from snapshot %d)", l.name, l.tr.Header.RestoredFrom))
		}
	}
	if len(stale) == 0 {
		return ""
	}
	return fmt.Sprintf("; stale logs of an earlier run (restored from a snapshot no log of this run took): %s; move them out of the directory", strings.Join(stale, ", "))
}

// chainedLogs marks the logs of the run: the fresh start's, then each
// restored from a snapshot a marked log took, until none is added.
func chainedLogs(logs []auditRun) []bool {
	taken := map[spec.SnapID]bool{0: true}
	chained := make([]bool, len(logs))
	for grew := true; grew; {
		grew = false
		for i, l := range logs {
			if !chained[i] && taken[l.tr.Header.RestoredFrom] {
				chained[i], grew = true, true
				snapsTaken(l.tr.Events, taken)
			}
		}
	}
	return chained
}

// snapsTaken adds to taken the snapshots evs record a step of.
func snapsTaken(evs []spec.Event, taken map[spec.SnapID]bool) {
	for _, e := range evs {
		if e.Action == spec.Initiate || e.Action == spec.RecvMarker {
			taken[e.Snap] = true
		}
	}
}

// audit replays r and prints its verdict; it returns the exit status.
func (r auditRun) audit(f *cmdFlags, o auditOpts, several bool) int {
	if r.outsider {
		return r.auditOutsider(f, o, several)
	}
	rep := r.replay(f, o)
	if o.json {
		printJSON(f.stdout, r, rep)
	}
	if rep.Err != nil {
		return f.fail(exitUsage, rep.Err)
	}
	if !o.json {
		printVerdict(f.stdout, r, rep, several)
	}
	if rep.OK() {
		return exitOK
	}
	return exitFail
}

// replay replays r against the model, unless r could not be read or is
// incomplete; rep.Err then says why, naming the file.
func (r auditRun) replay(f *cmdFlags, o auditOpts) conformance.Report {
	var rep conformance.Report
	if r.err != nil {
		rep.Err = r.err
		return rep
	}
	opts := conformance.Options{Drained: o.drained, Lines: r.lines.Events, RecordedLines: r.lines.Recorded, RestoreLines: r.lines.Restores}
	if o.progress {
		p := newProgress(f, r.name)
		opts.Progress, opts.SnapshotProgress = p.report, p.snapshots
	}
	if r.barrier {
		var err error
		if rep, err = conformance.AuditFile(r.name, opts); err != nil {
			rep.Err = err // it names the file
			return rep
		}
	} else {
		rep = conformance.Audit(r.tr, opts)
	}
	if rep.Err != nil {
		rep.Err = fmt.Errorf("%s: %w", r.name, rep.Err)
	}
	return rep
}

// printVerdict prints r's verdict for people. Its first line starts with
// the run's name when there are several runs, and with the directory and
// how many logs for merged node logs.
func printVerdict(w io.Writer, r auditRun, rep conformance.Report, several bool) {
	prefix := ""
	switch {
	case r.files != nil:
		prefix = fmt.Sprintf("%s (%s merged): ", r.name, plural(len(r.files), "node log"))
	case several:
		prefix = r.name + ": "
	}
	fmt.Fprint(w, prefix+rep.String())
}

// auditJSON is a run's verdict for machines (documented in auditAbout).
type auditJSON struct {
	Trace     string        `json:"trace"`
	Files     []string      `json:"files,omitempty"`
	OK        bool          `json:"ok"`
	Error     string        `json:"error,omitempty"`
	Property  spec.Property `json:"property"`
	Steps     int           `json:"steps"`
	Snapshots int           `json:"snapshots"`
	// Incarnations is a run with restores' number of incarnations.
	Incarnations int             `json:"incarnations,omitempty"`
	Divergence   *divergenceJSON `json:"divergence"`
	Violations   []violationJSON `json:"violations"`
	// Incomplete lists the snapshots initiated and never completed.
	Incomplete []incompleteJSON `json:"incomplete"`
	// Aborted lists the snapshots aborted, each with why.
	Aborted []abortedJSON `json:"aborted,omitempty"`
	// Notes say what the audit derived rather than read (a barrier
	// trace's missing seqs and parts).
	Notes []string `json:"notes,omitempty"`
}

// incompleteJSON's and violationJSON's Snapshot is a spec.SnapID, or
// for an outsider run the implementation's id (json.RawMessage).
type incompleteJSON struct {
	Snapshot any    `json:"snapshot"`
	Lacks    string `json:"lacks"`
}

// abortedJSON is an aborted snapshot: Why in the words of the node's log
// and of markerwave snapshots (spec.AbortVerdict).
type abortedJSON struct {
	Snapshot    any         `json:"snapshot"`
	Cause       spec.ProcID `json:"cause"`
	Initiator   spec.ProcID `json:"initiator,omitempty"`
	Incarnation int         `json:"incarnation,omitempty"`
	Why         string      `json:"why"`
}

type divergenceJSON struct {
	Step     int           `json:"step"`
	Line     int           `json:"line"`
	File     string        `json:"file,omitempty"`
	Action   string        `json:"action"`
	Check    spec.Property `json:"check"`
	Detail   string        `json:"detail"`
	Expected string        `json:"expected"`
	Reported string        `json:"reported"`
	Diff     string        `json:"diff"`
}

type violationJSON struct {
	Property spec.Property `json:"property"`
	Snapshot any           `json:"snapshot"`
	Detail   string        `json:"detail"`
}

// printJSON prints r's verdict as one line of JSON.
func printJSON(w io.Writer, r auditRun, rep conformance.Report) {
	v := auditJSON{Trace: r.name, Files: r.files, OK: rep.OK(), Property: rep.Property(),
		Steps: rep.Steps, Snapshots: rep.Snapshots, Incarnations: rep.Incarnations, Violations: []violationJSON{}, Notes: rep.Notes}
	if rep.Err != nil {
		v.Error = rep.Err.Error()
	}
	if d := rep.Divergence; d != nil {
		v.Divergence = &divergenceJSON{Step: d.Step, Line: d.Line, File: d.File, Action: d.Action, Check: d.Property,
			Detail: d.Detail, Expected: d.Expected, Reported: d.Reported, Diff: d.Diff}
	}
	for _, x := range rep.Violations {
		v.Violations = append(v.Violations, violationJSON{Property: x.Property, Snapshot: x.Snap, Detail: x.Detail})
	}
	v.Incomplete = []incompleteJSON{}
	for _, x := range rep.Incomplete {
		v.Incomplete = append(v.Incomplete, incompleteJSON{Snapshot: x.Snap, Lacks: x.Lacks})
	}
	for _, a := range rep.Aborted {
		v.Aborted = append(v.Aborted, abortedJSON{Snapshot: a.Snap, Cause: a.Cause, Initiator: a.Initiator, Incarnation: a.Incarnation, Why: a.String()})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "P1->P2", not "P1-\u003eP2"
	_ = enc.Encode(v)        // v always encodes; a failing stdout goes unreported, as with the text verdicts
}

// progress reports a replay's progress on stderr every progressEvery.
type progress struct {
	f       *cmdFlags
	name    string
	start   time.Time
	last    time.Time
	printed bool
	seen    int // read: the events counted at the last look
}

func newProgress(f *cmdFlags, name string) *progress {
	now := time.Now()
	return &progress{f: f, name: name, start: now, last: now}
}

// report is a conformance.Options.Progress callback.
func (p *progress) report(done, total int) {
	now := time.Now()
	if done < total && now.Sub(p.last) < progressEvery || done == total && !p.printed {
		return // not yet due; or a short replay, done before any report
	}
	took := now.Sub(p.start).Round(time.Second)
	if done < total {
		p.f.errorf("%s: replayed %d of %s (%d%%) in %v", p.name, done, plural(total, "event"), done*100/total, took)
	} else {
		p.f.errorf("%s: replayed all %s in %v; checking the snapshots", p.name, plural(total, "event"), took)
	}
	p.last, p.printed = now, true
}

// readProgressEvery is how many events apart the reading of a trace file
// looks at the clock, to report every progressEvery (a variable for the
// tests).
var readProgressEvery = 100_000

// read is a conformance.ReadCrashedNodeLogProgress callback: the events
// read so far, reported every progressEvery, looked at every
// readProgressEvery events.
func (p *progress) read(events int) {
	if events == 0 || events%readProgressEvery != 0 || events == p.seen {
		return
	}
	p.seen = events
	now := time.Now()
	if now.Sub(p.last) < progressEvery {
		return
	}
	p.f.errorf("%s: read %s in %v", p.name, plural(events, "event"), now.Sub(p.start).Round(time.Second))
	p.last, p.printed = now, true
}

// snapshots is a conformance.Options.SnapshotProgress callback: the
// snapshots checked after the replay, every progressEvery.
func (p *progress) snapshots(done, total int) {
	now := time.Now()
	if done < total && now.Sub(p.last) < progressEvery || done == total && !p.printed {
		return
	}
	p.f.errorf("%s: checked %d of %s in %v", p.name, done, plural(total, "snapshot"), now.Sub(p.start).Round(time.Second))
	p.last, p.printed = now, true
}
