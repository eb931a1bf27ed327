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

// AuditFile replays trace file path, with the recorded snapshots and the
// drained claim it carries.
func AuditFile(path string, opts Options) (Report, error) {
	tr, lines, err := ReadTraceFile(path)
	if err != nil {
		return Report{}, err
	}
	opts.Lines, opts.RecordedLines = lines.Events, lines.Recorded
	return Replay(tr, opts), nil
}
