package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/dataflow/run"
)

// The adaptive protocol in the flow demo: --aligned-timeout,
// --force-aligned, and what the switches cost.

// parseEdges reads --force-aligned: edges A->B, comma-separated.
func parseEdges(s string) ([][2]string, error) {
	var edges [][2]string
	for _, part := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(part), "->")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("--force-aligned %q: want edges A->B, comma-separated", part)
		}
		edges = append(edges, [2]string{from, to})
	}
	return edges, nil
}

// checkForceAligned checks --force-aligned against the pipeline's graph:
// each edge must be one of its (named as in the error).
func (o flowOptions) checkForceAligned() error {
	if o.forceAligned == "" {
		return nil
	}
	g, _, err := pipeline.Pipeline(o.par, o.records, o.capacity, dataflow.Adaptive)
	if err == nil {
		_, err = o.forceAlign(g)
	}
	if err != nil {
		return fmt.Errorf("--force-aligned: %w", err)
	}
	return nil
}

// switches adds checkpoint cp's switches to the row: which operators
// switched, and the channel-state bytes.
func (row *flowRow) switches(g *dataflow.Graph, cp run.Checkpoint) {
	row.latest = nil
	for i, c := range cp.Costs() {
		if c.Switched {
			row.switched[g.Nodes[i].Name]++
			row.latest = append(row.latest, g.Nodes[i].Name)
		}
		row.bytes += c.Bytes
	}
}

// writeSwitches says, for the adaptive protocol, which operators switched
// in how many snapshots, the longest time blocked and the bytes the
// channel state cost.
func writeSwitches(w io.Writer, o flowOptions, rows []flowRow) {
	for _, r := range rows {
		if r.mode != dataflow.Adaptive {
			continue
		}
		fmt.Fprintf(w, "\nadaptive, aligned timeout %v: ", o.alignedTimeout)
		if len(r.switched) == 0 {
			fmt.Fprintf(w, "no operator switched (every alignment ended within the timeout): %d bytes of channel state\n", r.bytes)
			continue
		}
		var names []string
		for _, n := range slices.Sorted(maps.Keys(r.switched)) {
			names = append(names, fmt.Sprintf("%s (%d of %d snapshots)", n, r.switched[n], r.snaps))
		}
		fmt.Fprintf(w, "switched to unaligned: %s; blocked up to %v; the channel state cost %d bytes\n",
			strings.Join(names, ", "), r.align.Round(time.Microsecond), r.bytes)
		if len(r.latest) > 0 {
			fmt.Fprintf(w, "restored from snapshot %d, in which %s switched: exactly once: %v\n", r.restored, strings.Join(r.latest, ", "), r.ok)
		} else {
			fmt.Fprintf(w, "restored from snapshot %d, in which no operator switched (aligned throughout): exactly once: %v\n", r.restored, r.ok)
		}
	}
}
