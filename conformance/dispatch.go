package conformance

import (
	"bytes"
	"cmp"
	"fmt"
	"os"

	"github.com/markerwave/markerwave/spec"
)

// The one dispatcher of the audit: what kind of trace a file holds
// decides which replay runs. A barrier trace (its header's format) is
// audited against model/barrier (AuditBarrier); a Chandy-Lamport trace
// with restores is a history of incarnations (replayHistory), each
// replayed by the replay its own events call for; one with fault events
// is replayed against the faults model (replayFaults); any other against
// the model (replayPlain). The replays call down into the shared step
// checks (check.go), never back up here.

// AuditFile audits trace file path (Audit), with the recorded snapshots
// and the drained claim it carries and its line numbers in the report; a
// barrier trace with AuditBarrierFile, a sink trace with AuditSinkFile.
func AuditFile(path string, opts Options) (Report, error) {
	if IsBarrierTraceFile(path) {
		return AuditBarrierFile(path, opts)
	}
	if IsSinkTraceFile(path) {
		return AuditSinkFile(path, opts)
	}
	tr, lines, err := ReadTraceFile(path)
	if err != nil {
		return Report{}, err
	}
	opts.Lines, opts.RecordedLines, opts.RestoreLines = lines.Events, lines.Recorded, lines.Restores
	return Audit(tr, opts), nil
}

// Audit is what markerwave audit decides of one run: a run that does not
// hold every event its vector clocks say happened (Whole; one node's
// own log, say) is not replayed, and Report.Err says why; any other run is
// replayed against the model (Replay).
func Audit(tr spec.Trace, opts Options) Report {
	if err := Whole(tr); err != nil {
		return Report{Err: err}
	}
	return Replay(tr, opts)
}

// hasFaults reports whether tr holds an event of the failure handling.
func hasFaults(tr spec.Trace) bool {
	for _, e := range tr.Events {
		if e.Action.Fault() {
			return true
		}
	}
	return false
}

// Replay replays Chandy-Lamport trace tr against the model its kind
// calls for: a history of incarnations (tr has restores) incarnation by
// incarnation, each by replayIncarnation; any other run by
// replayIncarnation. Every replay checks each step against the model
// (enabled, the same message and state, the invariants, the recorded
// states reported) and, independently, the run properties (CheckRun).
// Before any of it, the vector clocks the events give are checked
// (checkClocks): one the events do not bear out is bad input, Report.Err.
func Replay(tr spec.Trace, opts Options) Report {
	if err := checkClocks(tr, opts); err != nil {
		return Report{Err: err}
	}
	if len(tr.Restores) > 0 {
		return replayHistory(tr, opts, replayIncarnation)
	}
	return replayIncarnation(tr, opts)
}

// replayIncarnation replays a run of one incarnation: against the faults
// model if it holds fault events (replayFaults), else against the model
// (replayPlain).
func replayIncarnation(tr spec.Trace, opts Options) Report {
	if hasFaults(tr) {
		return replayFaults(tr, opts)
	}
	return replayPlain(tr, opts)
}

// IsBarrierTraceFile reports whether the file at path is a barrier
// trace (IsBarrierTrace).
func IsBarrierTraceFile(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && IsBarrierTrace(b)
}

// IsBarrierTrace reports whether trace b is a barrier trace: its first
// non-blank line is a barrier trace's header.
func IsBarrierTrace(b []byte) bool {
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			return spec.IsBarrierTrace(l)
		}
	}
	return false
}

// AuditBarrierFile reads and audits the barrier trace at path.
func AuditBarrierFile(path string, opts Options) (Report, error) {
	tr, err := ReadBarrierTraceFile(path)
	if err != nil {
		return Report{}, err
	}
	return AuditBarrier(tr, opts), nil
}

// AuditSinkFile reads and audits the sink trace at path.
func AuditSinkFile(path string, opts Options) (Report, error) {
	tr, err := ReadSinkTraceFile(path)
	if err != nil {
		return Report{}, err
	}
	return AuditSink(tr, opts), nil
}

// AuditOutsider derives run's trace and replays it; where the log
// leaves recording points open it replays each candidate trace in turn
// (outsider_search.go). An error is bad input: the run's logs cannot be
// read as one run of the spec (named by file, line and field).
func AuditOutsider(run *OutsiderRun, opts Options) (OutsiderReport, error) {
	cs := searchCandidates(run)
	var first *OutsiderReport
	var firstErr error
	for i := range cs.tries() {
		d, err := cs.derive(i)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		r := auditDerived(d, opts)
		r.Search = searchNote(cs, i+1, r.OK())
		if r.OK() {
			return r, nil
		}
		if first == nil || r.Steps > first.Steps {
			first = &r // the candidate that goes furthest explains best
		}
	}
	switch {
	case first == nil:
		return OutsiderReport{}, firstErr
	case cs.total > cs.tries():
		first.Err = fmt.Errorf("ambiguous: the search bound (%d candidate traces) was hit and none conforms: %s", MaxOutsiderCandidates, cs.describe())
	}
	return *first, nil
}

// searchNote says how the search went, "" if nothing was open.
func searchNote(cs candidateSet, tried int, ok bool) string {
	if cs.total <= 1 {
		return ""
	}
	if ok {
		return fmt.Sprintf("candidate %d of %d conforms (%s)", tried, cs.total, cs.describe())
	}
	return fmt.Sprintf("no candidate of %d conforms; this is the verdict on the one the replay followed furthest (%s)", cs.tries(), cs.describe())
}

// auditDerived replays one derived trace.
func auditDerived(d Derived, opts Options) OutsiderReport {
	opts.Lines, opts.Files = d.Lines, d.LineFiles
	opts.RestoreLines, opts.RestoreFiles = d.RestoreLines, d.RestoreFiles
	r := Replay(d.Trace, opts)
	if d.Finding != nil && r.Divergence == nil {
		r.Divergence = d.Finding
	}
	d.nameMessages(&r)
	return OutsiderReport{Report: r, Derived: d}
}
