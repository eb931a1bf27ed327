package dataflow

import (
	"errors"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// This file is the adaptive mode, tla/BarrierAdaptive.tla (line numbers
// below are that module's): a snapshot starts aligned, and an operator
// that is aligning and is told Timeout by its runtime's timer switches
// it to unaligned.

// SnapType mirrors Type (line 48): the type of a node's snapshot, or
// none yet.
type SnapType uint8

// The snapshot types.
const (
	TypeNone SnapType = iota
	TypeAligned
	TypeUnaligned
)

func (t SnapType) String() string {
	switch t {
	case TypeAligned:
		return spec.ModeAligned
	case TypeUnaligned:
		return spec.ModeUnaligned
	}
	return "none"
}

// The reasons a Timeout is refused: each an enabling conjunct of TimeoutV
// (lines 100-106) that is false, or the quantifier n \in NonSrc.
var (
	ErrNotAdaptive         = errors.New("the graph's mode is not adaptive: no alignment times out")
	ErrSourceTimeout       = errors.New("a source does not align: it has no alignment to time out")             // n \in NonSrc, line 126
	ErrTimeoutRecorded     = errors.New("the node has already recorded: its alignment is over")                 // n \notin recorded, line 100
	ErrNotBlocked          = errors.New("no input of the node is blocked: no barrier has arrived")              // bar[n] # {}, line 101
	ErrAlreadySwitched     = errors.New("the node has already switched to unaligned")                           // mode[n] = "aligned", line 102
	ErrFeedsForceAligned   = errors.New("the node feeds a force-aligned edge: it aligns however long it takes") // line 104
	ErrForceAlignedPending = errors.New("the barrier of a force-aligned input has not arrived")                 // line 105
)

// overtakes reports whether the node's barrier overtakes its queued
// output when it records: unaligned, or switched (SendBarriers' mode
// argument, BarrierSnapshots.tla line 222; Timeout passes "unaligned").
func (n *Node) overtakes() bool { return n.g.Mode == Unaligned || n.switched }

// report is what RecvBarrierA adds to RecvBarrierV when the node records
// on a barrier (lines 84-86): it reports its mode and freezes whether
// every input it aligns on delivered its barrier. Nothing in the other
// modes.
func (n *Node) report() {
	if n.g.Mode != Adaptive {
		return
	}
	n.reported = TypeAligned // mode[n]: a switched node has recorded already
	n.cutAligned = n.g.aligned(n.id, n.bar)
}

// CanTimeout reports whether Timeout would switch the node now, and if
// not why (the Err values above): runtimes ask it before acting on their
// timer. The conjuncts of TimeoutV (lines 100-105) in order, after the
// mode and NextA's quantifier n \in NonSrc (line 126).
func (n *Node) CanTimeout() error {
	switch {
	case n.g.Mode != Adaptive:
		return ErrNotAdaptive
	case n.g.Nodes[n.id].Kind == Source:
		return ErrSourceTimeout
	}
	return n.timeoutConjuncts()
}

// timeoutConjuncts checks TimeoutV's enabling conjuncts (lines 100-105)
// in the spec's order, MaxTimeouts aside: the first false one's error.
func (n *Node) timeoutConjuncts() error {
	switch {
	case n.recorded:
		return ErrTimeoutRecorded
	case !n.anyBar():
		return ErrNotBlocked
	case n.switched:
		return ErrAlreadySwitched
	case n.g.feedsForceAligned(n.id):
		return ErrFeedsForceAligned
	case !n.g.forceAlignedIn(n.id, n.bar):
		return ErrForceAlignedPending
	}
	return nil
}

// anyBar reports bar[n] # {} (line 101): some input's barrier arrived.
func (n *Node) anyBar() bool {
	for _, e := range n.g.in[n.id] {
		if n.bar[e] {
			return true
		}
	}
	return false
}

// Timeout mirrors Timeout(n) = TimeoutV(n, TRUE, TRUE, FALSE, FALSE)
// (lines 99-117): the node's alignment timed out, and it switches this
// snapshot to unaligned. It records at once (RecordNode, line 107); its
// inputs whose barrier arrived are done (what alignment held back on
// them is behind their barrier: the next snapshot's), the others start
// recording, the Chandy-Lamport receiving rule (lines 108-110); its
// barrier overtakes each output's queue, persisted as that edge's
// channel state (line 111); it reports unaligned, the type it took
// (lines 112-114). MaxTimeouts (line 103) bounds a model, not a run.
func (n *Node) Timeout() (Step, error) {
	if err := n.CanTimeout(); err != nil {
		return Step{}, n.refuse(ActTimeout, -1, err)
	}
	n.switched = true
	n.startRecording()
	n.reported = TypeUnaligned
	n.cutAligned = n.g.aligned(n.id, n.bar)
	n.record()
	return n.observe(Step{Action: ActTimeout, Edge: -1, Recorded: true}, -1, Item{Barrier: true}), nil
}

// Switched reports whether the node switched its current snapshot to
// unaligned (mode[n] = "unaligned").
func (n *Node) Switched() bool { return n.switched }

// Reported is the type the node reported for its current snapshot
// (reported[n]).
func (n *Node) Reported() SnapType { return n.reported }

// CutAligned is the ghost cutAligned[n] (line 53): whether every input
// the node aligns on had delivered its barrier when it recorded.
func (n *Node) CutAligned() bool { return n.cutAligned }

// Blocked reports whether the node is aligning: it has not recorded and
// some input's barrier has arrived (the inputs blocked in an aligning
// mode). Runtimes start their alignment timer when it becomes true.
func (n *Node) Blocked() bool {
	return n.g.aligns() && !n.recorded && n.anyBar()
}

// loadAdaptive restores the adaptive variables with part p (RestoreA
// leaves mode, reported and cutAligned unchanged, line 78): the node's
// mode and reported type are its part's, and it was aligned when it
// recorded iff it did not switch (a node records unaligned only by
// switching).
func (n *Node) loadAdaptive(p *Part) {
	n.switched, n.reported = p.Switched, p.Type
	n.cutAligned = p.Type != TypeNone && !p.Switched
}

// ForceAlign returns g with the edges named <<from, to>> force-aligned
// (and checked again by NewGraph: g itself is unchanged), or an error
// naming the first that is not an edge of g.
func (g *Graph) ForceAlign(edges [][2]string) (*Graph, error) {
	c := *g
	c.Edges = slices.Clone(g.Edges)
	for _, e := range edges {
		i := g.EdgeIndex(e[0], e[1])
		if i < 0 {
			return nil, graphErr("the graph has no edge %s to force-align", spec.BarrierEdgeKey(e[0], e[1]))
		}
		c.Edges[i].ForceAligned = true
	}
	return NewGraph(c)
}
