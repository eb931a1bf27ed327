package barrier

import (
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// This file mirrors the properties of tla/BarrierSnapshots.tla (lines
// 310-362); line numbers refer to it.

// Invariant is a state invariant of the spec.
type Invariant func(cfg *Config, st *State) bool

var invariantFuncs = map[spec.Property]Invariant{
	spec.PropBarrierTypeOK:            TypeOK,
	spec.PropBarrierConsistentCut:     ConsistentCut,
	spec.PropBarrierExactChannelState: ExactChannelState,
	spec.PropAlignedNoChannelState:    AlignedNoChannelState,
	spec.PropBarrierSnapshotReachable: SnapshotReachable,
	spec.PropBarrierExactlyOnce:       ExactlyOnce,
	// tla/BarrierAdaptive.tla (adaptive.go)
	spec.PropAdaptiveTypeOK:             AdaptiveTypeOK,
	spec.PropUnswitchedNoChannelState:   UnswitchedNoChannelState,
	spec.PropForceAlignedNoChannelState: ForceAlignedNoChannelState,
	spec.PropReportedTypeTaken:          ReportedTypeTaken,
}

// InvariantByName returns the invariant named p.
func InvariantByName(p spec.Property) (Invariant, bool) {
	f, ok := invariantFuncs[p]
	return f, ok
}

// TypeOK mirrors BarrierTypeOK (lines 318-330). The Go types give most of
// it; what they do not: queue items are well formed (Item, lines 315-316),
// no barrier is recorded, node and edge sets stay inside Node and Edge.
func TypeOK(cfg *Config, st *State) bool {
	return queuesOK(cfg, st) && inside(st.Recorded, len(cfg.Nodes)) && allInside(st.Bar, len(cfg.Edges))
}

// itemOK: it is a barrier or Rec(src, i, hops, eseq) of a source, i and
// eseq from 1, hops in 0..Iter (lines 315-316).
func (cfg *Config) itemOK(it Item) bool {
	return it.Barrier || (it.Src >= 0 && it.Src < len(cfg.Nodes) && cfg.Kind[it.Src] == Source &&
		it.I >= 1 && it.Hops >= 0 && it.Hops <= cfg.Iter && it.ESeq >= 1)
}

// queuesOK: q[e] holds items, recQ[e] records only.
func queuesOK(cfg *Config, st *State) bool {
	for e := range cfg.Edges {
		if !slices.ContainsFunc(st.Q[e], func(it Item) bool { return !cfg.itemOK(it) }) &&
			!slices.ContainsFunc(st.RecQ[e], func(it Item) bool { return it.Barrier || !cfg.itemOK(it) }) {
			continue
		}
		return false
	}
	return true
}

// inside reports whether the bit set holds only the first n bits.
func inside(set uint64, n int) bool { return set&^(uint64(1)<<n-1) == 0 }

// allInside reports inside for every set.
func allInside(sets []uint64, n int) bool {
	for _, b := range sets {
		if !inside(b, n) {
			return false
		}
	}
	return true
}

// ConsistentCut mirrors BarrierConsistentCut (lines 335-336).
func ConsistentCut(cfg *Config, st *State) bool {
	for e, ends := range cfg.Edges {
		if st.Has(ends[0]) && st.Has(ends[1]) && st.CutRcvd[e] > st.CutSent[e] {
			return false
		}
	}
	return true
}

// ExactChannelState mirrors BarrierExactChannelState (lines 341-344).
func ExactChannelState(cfg *Config, st *State) bool {
	for e := range cfg.Edges {
		if st.RecChan[e] != Done {
			continue
		}
		want := max(st.CutSent[e]-st.CutRcvd[e], 0)
		if len(st.RecQ[e]) != want {
			return false
		}
		for j, r := range st.RecQ[e] {
			if r.ESeq != st.CutRcvd[e]+j+1 {
				return false
			}
		}
	}
	return true
}

// AlignedNoChannelState mirrors AlignedNoChannelState (lines 348-349).
func AlignedNoChannelState(cfg *Config, st *State) bool {
	if cfg.Mode != Aligned {
		return true
	}
	for e := range cfg.Edges {
		if !cfg.Back[e] && len(st.RecQ[e]) != 0 {
			return false
		}
	}
	return true
}

// SnapshotReachable mirrors BarrierSnapshotReachable (lines 353-355).
func SnapshotReachable(cfg *Config, st *State) bool {
	return st.Pre.OK && (!Complete(cfg, st) || sameApp(st.Pre, RecordedApp(st)))
}

func sameApp(a, b App) bool {
	if a.OK != b.OK || !slices.Equal(a.Emitted, b.Emitted) || !slices.Equal(a.Cnt, b.Cnt) || !slices.Equal(a.Out, b.Out) {
		return false
	}
	return slices.EqualFunc(a.Q, b.Q, func(x, y []Item) bool { return slices.Equal(x, y) })
}

// ExactlyOnce mirrors BarrierExactlyOnce (lines 360-362).
func ExactlyOnce(cfg *Config, st *State) bool {
	term := Terminated(cfg, st)
	for _, n := range st.Out {
		if n > 1 || term && n != 1 {
			return false
		}
	}
	return true
}

// liveViolated reports whether a fair behaviour ending, stuttering, in st
// violates BarriersComplete (line 366): no fair action is enabled, a
// source has injected and the snapshot is not complete. See doc.go.
func liveViolated(cfg *Config, st *State) bool {
	return Injected(cfg, st) && !Complete(cfg, st) && !fairEnabled(cfg, st)
}
