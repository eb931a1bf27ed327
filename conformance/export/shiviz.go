package export

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// ShiVizRegex is the log parser regular expression ShiViz
// (https://distributedclocks.github.io/shiviz/) needs for ShiViz's output:
// a line "<host> <vector clock as JSON>", then a line describing the event.
const ShiVizRegex = `(?<host>\S*) (?<clock>{.*})\n(?<event>.*)`

// ShiViz writes tr as a ShiViz log. The first line is ShiVizRegex and the
// second is empty (no multiple-executions delimiter), the layout of a log
// file uploaded to ShiViz; to paste the log into ShiViz's text box
// instead, put line 1 in "Log parser RegExp" and paste from line 3. Each
// event is then two lines:
//
//	P2 {"P1":2,"P2":3}
//	RecvMarker(P1, P2) [snap 1] first | bal=60 sent=1 rcvd=1
//
// The clock has an entry for every process with a nonzero count, named by
// process id; the host's own entry counts its events (ShiViz requires it
// to grow by one per event of the host, which a trace's clocks do).
func ShiViz(tr spec.Trace, w io.Writer) error {
	top := tr.Header.Topology
	if top == nil {
		return fmt.Errorf("export: trace has no topology")
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s\n\n", ShiVizRegex)
	for k, e := range tr.Events {
		if len(e.VC) != len(top.Procs) {
			return fmt.Errorf("export: event %d (%s): vector clock has %d entries, want %d", k+1, e, len(e.VC), len(top.Procs))
		}
		fmt.Fprintf(bw, "%s {%s}\n%s\n", string(e.Proc), shivizClock(top, e.VC), shivizDesc(e))
	}
	return bw.Flush()
}

// shivizClock renders vc as ShiViz reads a clock: "P1":2,"P2":3, the
// processes with a nonzero count only.
func shivizClock(top *spec.Topology, vc spec.VectorClock) string {
	var parts []string
	for i, p := range top.Procs {
		if vc[i] > 0 {
			parts = append(parts, fmt.Sprintf("%q:%d", string(p), vc[i]))
		}
	}
	return strings.Join(parts, ",")
}

// shivizDesc describes event e on one line: the event, "first" for a
// first marker, and the state after it.
func shivizDesc(e spec.Event) string {
	desc := e.String()
	if e.Action == spec.RecvMarker && e.First {
		desc += " first"
	}
	desc += fmt.Sprintf(" | bal=%d sent=%d rcvd=%d", e.After.Bal, e.After.Sent, e.After.Rcvd)
	return strings.ReplaceAll(desc, "\n", " ")
}
