package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// The run properties of the adaptive mode (tla/BarrierAdaptive.tla,
// lines 161-172), computed from a barrier trace alone, as barrierRun
// computes those of tla/BarrierSnapshots.tla: UnswitchedNoChannelState,
// ForceAlignedNoChannelState and ReportedTypeTaken.

// takenType is TakenType(n) (line 63) as node n records: "aligned" if
// every input it aligns on (not a back-edge) has delivered its barrier,
// else "unaligned".
func (rs *barrierRunState) takenType(n string) string {
	for _, e := range rs.tr.Graph().In(n) {
		if !e.Back && !rs.bar[e.Key()] {
			return spec.ModeUnaligned
		}
	}
	return spec.ModeAligned
}

// adaptive checks the adaptive properties, in the order of
// spec.AdaptiveInvariants; none for the other modes.
func (rs *barrierRunState) adaptive() []Violation {
	if rs.tr.Graph().Mode != spec.ModeAdaptive {
		return nil
	}
	var vs []Violation
	add := func(p spec.Property, what string, bad []string) {
		if len(bad) > 0 {
			vs = append(vs, Violation{Property: p, Detail: what + ": " + strings.Join(bad, "; ")})
		}
	}
	unswitched, forced := rs.adaptiveChannels()
	add(spec.PropUnswitchedNoChannelState, "channel state on an edge that is not a back-edge, neither of whose ends switched", unswitched)
	add(spec.PropForceAlignedNoChannelState, "channel state on a force-aligned edge", forced)
	add(spec.PropReportedTypeTaken, "a node reported a type it did not take", rs.wrongTypes())
	return vs
}

// adaptiveChannels lists the edges whose channel state breaks
// UnswitchedNoChannelState (lines 165-166) and ForceAlignedNoChannelState
// (line 169).
func (rs *barrierRunState) adaptiveChannels() (unswitched, forced []string) {
	for _, e := range rs.tr.Graph().Edges {
		key := e.Key()
		var over []spec.BarrierRecord
		if p := rs.part[e.From]; p != nil {
			over = p.Overtaken[key]
		}
		ch := slices.Concat(rs.logged[key], over)
		if len(ch) == 0 {
			continue
		}
		if !e.Back && !rs.switched[e.From] && !rs.switched[e.To] {
			unswitched = append(unswitched, fmt.Sprintf("%s records %s", key, seqs(ch)))
		}
		if e.ForceAligned {
			forced = append(forced, fmt.Sprintf("%s records %s", key, seqs(ch)))
		}
	}
	return unswitched, forced
}

// wrongTypes lists the nodes whose reported type is not the one they
// took (ReportedTypeTaken, line 172).
func (rs *barrierRunState) wrongTypes() []string {
	var bad []string
	for _, n := range rs.tr.Graph().Nodes {
		if n.Kind == spec.KindSource || rs.part[n.Name] == nil || rs.reported[n.Name] == rs.taken[n.Name] {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s reported %s, but took %s", n.Name, rs.reported[n.Name], rs.taken[n.Name]))
	}
	return bad
}
