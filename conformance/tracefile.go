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
	return readTraceFileProgress(path, nil)
}

// readTraceFileProgress is ReadTraceFile reporting how many events it read to
// progress, if not nil (spec.ReadTraceLinesProgress).
func readTraceFileProgress(path string, progress func(events int)) (spec.Trace, spec.TraceLines, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return spec.Trace{}, spec.TraceLines{}, err
	}
	tr, lines, err := spec.ReadTraceLinesProgress(bytes.NewReader(b), progress)
	if err != nil {
		return tr, lines, fmt.Errorf("%s: %w", path, err)
	}
	return tr, lines, nil
}
