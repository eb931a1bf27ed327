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
// in how many snapshots, the longest time blocked, the bytes the channel
// state cost, and which switched in the snapshot restored from.
func writeSwitches(w io.Writer, o flowOptions, rows []flowRow) {
	for _, r := range rows {
		if r.mode == dataflow.Adaptive {
			fmt.Fprintf(w, "\nadaptive, aligned timeout %v: %s\n", o.alignedTimeout, r.switchSummary())
		}
	}
}

// switchSummary is writeSwitches' words for row r.
func (r flowRow) switchSummary() string {
	if len(r.switched) == 0 {
		return fmt.Sprintf("no operator switched (every alignment ended within the timeout): %d bytes of channel state", r.bytes)
	}
	var names []string
	for _, n := range slices.Sorted(maps.Keys(r.switched)) {
		names = append(names, fmt.Sprintf("%s (%d of %d snapshots)", n, r.switched[n], r.snaps))
	}
	latest := "no operator switched (aligned throughout)"
	if len(r.latest) > 0 {
		latest = strings.Join(r.latest, ", ") + " switched"
	}
	return fmt.Sprintf("switched to unaligned: %s; blocked up to %v; the channel state cost %d bytes\nrestored from snapshot %d, in which %s: exactly once: %v",
		strings.Join(names, ", "), r.align.Round(time.Microsecond), r.bytes, r.restored, latest, r.ok)
}
