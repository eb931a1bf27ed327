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

// Load reads a trace file's text (name is for messages) and audits it.
// A file that is no trace is an error naming what is wrong and where.
// progress, if not nil, is told the events replayed so far and their
// number (conformance.Options.Progress: after every event).
func Load(name, text string, progress func(done, total int)) (*Loaded, error) {
	if len(text) > MaxTraceBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the page reads (%d)", name, len(text), MaxTraceBytes)
	}
	tr, lines, err := spec.ReadTraceLines(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	a, err := export.Analyze(tr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rep := conformance.Audit(tr, conformance.Options{Lines: lines.Events, RecordedLines: lines.Recorded, Progress: progress})
	return &Loaded{name: name, tr: tr, lines: lines, report: rep, analysis: a, lamport: a.Lamport()}, nil
}

// Len is the number of events.
func (l *Loaded) Len() int { return len(l.tr.Events) }

// View renders the verdict and the events.
func (l *Loaded) View() AuditView {
	v := AuditView{Name: l.name, Source: l.tr.Header.Source, Note: l.tr.Header.Note,
		OK: l.report.OK(), Property: l.report.Property(), Anchor: DocumentedAnchor(l.report.Property()), Verdict: l.report.String(),
		Divergence: l.report.Divergence, Violations: []ViolationView{}, Events: []EventView{}, Snapshots: []string{}, SnapIDs: []spec.SnapID{}}
	for _, x := range l.report.Violations {
		v.Violations = append(v.Violations, ViolationView{x.Property, x.Snap, x.Detail})
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
