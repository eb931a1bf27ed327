package conformance

import (
	"bytes"
	"fmt"
	"os"

	"github.com/markerwave/markerwave/spec"
)

// A trace file (spec.WriteTrace) is self-contained: its header says
// whether the run was drained (Header.Drained), and its {"recorded": ...}
// lines carry the global states the implementation reported. Without
// recorded lines the recorded states are derived from the events.

// ReadTraceFile reads trace file path with spec.ReadTraceLines: the trace
// and the line of each event and recorded snapshot (for reports).
func ReadTraceFile(path string) (spec.Trace, spec.TraceLines, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return spec.Trace{}, spec.TraceLines{}, err
	}
	tr, lines, err := spec.ReadTraceLines(bytes.NewReader(b))
	if err != nil {
		return tr, lines, fmt.Errorf("%s: %w", path, err)
	}
	return tr, lines, nil
}

// AuditFile audits trace file path (Audit), with the recorded snapshots
// and the drained claim it carries and its line numbers in the report; a
// barrier trace with AuditBarrierFile.
func AuditFile(path string, opts Options) (Report, error) {
	if IsBarrierTraceFile(path) {
		return AuditBarrierFile(path, opts)
	}
	tr, lines, err := ReadTraceFile(path)
	if err != nil {
		return Report{}, err
	}
	opts.Lines, opts.RecordedLines, opts.RestoreLines = lines.Events, lines.Recorded, lines.Restores
	return Audit(tr, opts), nil
}

// Audit is what markerwave audit decides of one run: a run that does not
// hold every event its vector clocks say happened (Incomplete; one node's
// own log, say) is not replayed, and Report.Err says why; any other run is
// replayed against the model (Replay).
func Audit(tr spec.Trace, opts Options) Report {
	if err := Incomplete(tr); err != nil {
		err = fmt.Errorf("incomplete: %w", err)
		if p, ok := NodeLog(tr); ok {
			err = fmt.Errorf("%w; the trace holds only %s's events, as one node's own log does: give all the run's node logs, or their directory, to merge them", err, string(p))
		}
		return Report{Err: err}
	}
	return Replay(tr, opts)
}
