package explorer

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/spec"
)

// MaxTraceBytes bounds a trace file the page reads.
const MaxTraceBytes = 64 << 20

// prefixDiagramEvents is the longest trace whose diagram the page draws
// up to the cursor; a longer one is drawn in a window of columns around
// the cursor's event.
const prefixDiagramEvents = 300

// windowColumns is how many columns before the cursor's a long trace's
// window shows (and a tenth of it after).
const windowColumns = 40

// Loaded is a trace file the page audits: the trace, its verdict
// (conformance.Audit, as markerwave audit decides), and its analysis for
// the diagram.
type Loaded struct {
	name     string
	barrier  *spec.BarrierTrace // a barrier trace; nil for a Chandy-Lamport one
	tr       spec.Trace
	lines    spec.TraceLines
	report   conformance.Report
	analysis *export.Analysis
	lamport  []int
}

// AuditView is what the page shows of a loaded trace.
type AuditView struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Note   string `json:"note"`
	// OK: the trace conforms; else Property names what it violates.
	OK       bool          `json:"ok"`
	Property spec.Property `json:"property"`
	// Anchor is Property's section of docs/properties.md, "" if it has
	// none (the replay's own checks: Enabled, RecordedState, ...).
	Anchor  string `json:"anchor"`
	Verdict string `json:"verdict"` // the audit's report, as markerwave audit prints it
	// Divergence is the model replay's first divergence, nil if none;
	// its Step is the 1-based event number the page jumps to.
	Divergence *conformance.Divergence `json:"divergence"`
	Violations []ViolationView         `json:"violations"`
	Events     []EventView             `json:"events"`
	Snapshots  []string                `json:"snapshots"` // each cut's summary
	SnapIDs    []spec.SnapID           `json:"snap_ids"`
}

// ViolationView is a run property that fails for one snapshot.
type ViolationView struct {
	Property spec.Property `json:"property"`
	Snap     spec.SnapID   `json:"snap"`
	Detail   string        `json:"detail"`
}

// EventView is one event of the trace.
type EventView struct {
	Line  int    `json:"line"`
	Label string `json:"label"`
}

// TraceFile is one file the page was given: its name and its text.
type TraceFile struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// LoadFiles audits the files the page was given together: one trace file
// (Load), or the node logs of one run, merged in causal order as
// markerwave audit merges a directory of them (conformance.MergeNodeLogs)
// and audited as one run. A barrier trace among several files, or logs
// that do not merge, is an error naming the file or what is wrong.
func LoadFiles(files []TraceFile, progress func(done, total int)) (*Loaded, error) {
	switch len(files) {
	case 0:
		return nil, fmt.Errorf("no trace file given")
	case 1:
		return Load(files[0].Name, files[0].Text, progress)
	}
	trs, names, err := readNodeLogs(files)
	if err != nil {
		return nil, err
	}
	tr, err := conformance.MergeNodeLogs(trs)
	if err != nil {
		return nil, fmt.Errorf("cannot merge the %d node logs %s: %w", len(files), strings.Join(names, ", "), err)
	}
	return loadTrace(fmt.Sprintf("%d node logs merged (%s)", len(files), strings.Join(names, ", ")), tr, spec.TraceLines{}, progress)
}

// readNodeLogs reads the files given together as the node logs of one
// run, each a Chandy-Lamport trace.
func readNodeLogs(files []TraceFile) ([]spec.Trace, []string, error) {
	total := 0
	trs := make([]spec.Trace, len(files))
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
		if total += len(f.Text); total > MaxTraceBytes {
			return nil, nil, fmt.Errorf("%s: the files hold more than the page reads (%d bytes)", f.Name, MaxTraceBytes)
		}
		if conformance.IsBarrierTrace([]byte(f.Text)) {
			return nil, nil, fmt.Errorf("%s is a barrier trace, one run in one file: open it alone (several files are the node logs of one Chandy-Lamport run)", f.Name)
		}
		tr, _, err := spec.ReadTraceLines(strings.NewReader(f.Text))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		trs[i] = tr
	}
	return trs, names, nil
}

// Load reads a trace file's text (name is for messages) and audits it: a
// barrier trace (its header's format, conformance.IsBarrierTrace)
// against model/barrier, any other as a Chandy-Lamport trace. A file
// that is no trace is an error naming what is wrong and where.
// progress, if not nil, is told the events replayed so far and their
// number (conformance.Options.Progress: after every event).
func Load(name, text string, progress func(done, total int)) (*Loaded, error) {
	if len(text) > MaxTraceBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the page reads (%d)", name, len(text), MaxTraceBytes)
	}
	if conformance.IsBarrierTrace([]byte(text)) {
		return loadBarrier(name, text, progress)
	}
	tr, lines, err := spec.ReadTraceLines(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return loadTrace(name, tr, lines, progress)
}

// loadTrace audits a Chandy-Lamport trace read from its file (or
// merged) and analyses it for the diagram.
func loadTrace(name string, tr spec.Trace, lines spec.TraceLines, progress func(done, total int)) (*Loaded, error) {
	a, err := export.Analyze(tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rep := conformance.Audit(tr, conformance.Options{Lines: lines.Events, RecordedLines: lines.Recorded, RestoreLines: lines.Restores, Progress: progress})
	return &Loaded{name: name, tr: tr, lines: lines, report: rep, analysis: a, lamport: a.Lamport()}, nil
}

// loadBarrier reads and audits a barrier trace (conformance.AuditBarrier,
// as markerwave audit does).
func loadBarrier(name, text string, progress func(done, total int)) (*Loaded, error) {
	bt, err := spec.ReadBarrierTrace(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rep := conformance.AuditBarrier(bt, conformance.Options{Progress: progress})
	return &Loaded{name: name, barrier: bt, report: rep}, nil
}

// Len is the number of events.
func (l *Loaded) Len() int {
	if l.barrier != nil {
		return len(l.barrier.Events)
	}
	return len(l.tr.Events)
}

// View renders the verdict and the events.
func (l *Loaded) View() AuditView {
	v := AuditView{Name: l.name, Source: l.tr.Header.Source, Note: l.tr.Header.Note,
		OK: l.report.OK(), Property: l.report.Property(), Anchor: DocumentedAnchor(l.report.Property()), Verdict: l.report.String(),
		Divergence: l.report.Divergence, Violations: []ViolationView{}, Events: []EventView{}, Snapshots: []string{}, SnapIDs: []spec.SnapID{}}
	for _, x := range l.report.Violations {
		v.Violations = append(v.Violations, ViolationView{x.Property, x.Snap, x.Detail})
	}
	if l.barrier != nil {
		l.barrierView(&v)
		return v
	}
	for i, e := range l.tr.Events {
		ev := EventView{Label: e.String()}
		if i < len(l.lines.Events) {
			ev.Line = l.lines.Events[i]
		}
		v.Events = append(v.Events, ev)
	}
	for _, c := range l.analysis.Cuts {
		v.Snapshots = append(v.Snapshots, c.Summary())
		v.SnapIDs = append(v.SnapIDs, c.Snap)
	}
	return v
}

// Diagram draws the trace as it stands after its first upto events (all
// of them for upto <= 0 or past the end) or, with snap, snapshot snap's
// neighbourhood (export.View). A short trace is drawn up to the cursor
// (the reported snapshots only once every event is in); a long one in a
// window of columns ending a little after the cursor's event.
func (l *Loaded) Diagram(upto int, snap spec.SnapID) (string, error) {
	if l.barrier != nil {
		return l.barrierDiagram()
	}
	n := len(l.tr.Events)
	if upto <= 0 || upto > n {
		upto = n
	}
	if n == 0 {
		return "", nil
	}
	var b bytes.Buffer
	switch {
	case snap != 0:
		if _, err := l.analysis.Draw(&b, export.SVG, export.View{Snap: snap}); err != nil {
			return "", err
		}
	case n <= prefixDiagramEvents:
		tr := spec.Trace{Header: l.tr.Header, Events: l.tr.Events[:upto]}
		if upto == n {
			tr.Recorded = l.tr.Recorded
		}
		if err := export.Diagram(tr, &b, export.SVG, export.View{}); err != nil {
			return "", err
		}
	default:
		col := l.lamport[upto-1]
		v := export.View{From: max(1, col-windowColumns), To: col + windowColumns/10}
		if _, err := l.analysis.Draw(&b, export.SVG, v); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// barrierLabel renders a barrier trace's event for the page's list:
// Process at map on src->map: src#3.
func barrierLabel(e spec.BarrierEvent) string {
	var b strings.Builder
	b.WriteString(e.Action)
	if e.Node != "" {
		b.WriteString(" at " + e.Node)
	}
	if e.From != "" || e.To != "" {
		b.WriteString(" on " + e.From + "->" + e.To)
	}
	if r := e.Rec; r != nil {
		fmt.Fprintf(&b, ": %s#%d", r.Src, r.I)
	}
	return b.String()
}

// barrierDiagram draws a barrier trace whole: a barrier diagram has no
// window.
func (l *Loaded) barrierDiagram() (string, error) {
	var b bytes.Buffer
	_, _, err := export.BarrierDiagram(l.barrier, &b, export.SVG)
	return b.String(), err
}

// barrierView sets a barrier trace's header and events in v.
func (l *Loaded) barrierView(v *AuditView) {
	v.Source, v.Note = l.barrier.Header.Source, l.barrier.Header.Note
	for i, e := range l.barrier.Events {
		v.Events = append(v.Events, EventView{Line: l.barrier.Lines[i], Label: barrierLabel(e)})
	}
}
