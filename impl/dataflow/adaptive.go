package dataflow

import (
	"errors"
	"maps"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// This file is the adaptive mode, tla/BarrierAdaptive.tla (line numbers
// below are that module's): a snapshot starts aligned, and an operator
// that is aligning and is told Timeout by its runtime's timer switches
// it to unaligned.

// SnapType mirrors Type (line 54): the type of a node's snapshot, or
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
// (lines 108-114) that is false, or the quantifier n \in NonSrc.
var (
	ErrNotAdaptive         = errors.New("the graph's mode is not adaptive: no alignment times out")
	ErrSourceTimeout       = errors.New("a source does not align: it has no alignment to time out")             // n \in NonSrc, line 184
	ErrTimeoutRecorded     = errors.New("the node has already recorded: its alignment is over")                 // n \notin recorded, line 108
	ErrNotBlocked          = errors.New("no input of the node is blocked: no barrier has arrived")              // bar[n] # {}, line 109
	ErrAlreadySwitched     = errors.New("the node has already switched to unaligned")                           // mode[n] = "aligned", line 110
	ErrFeedsForceAligned   = errors.New("the node feeds a force-aligned edge: it aligns however long it takes") // line 112
	ErrForceAlignedPending = errors.New("the barrier of a force-aligned input has not arrived")                 // line 113
)

// overtakes reports whether the node's barrier overtakes its queued
// output when it records: unaligned, or switched (SendBarriers' mode
// argument, BarrierSnapshots.tla line 222; Timeout passes "unaligned").
func (n *Node) overtakes() bool { return n.g.Mode == Unaligned || n.switched }

// report is what RecvBarrierA adds to RecvBarrierV when the node records
// on a barrier (lines 92-94): it reports its mode and freezes whether
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
// timer. The conjuncts of TimeoutV (lines 108-113) in order, after the
// mode and NextA's quantifier n \in NonSrc (line 184).
func (n *Node) CanTimeout() error {
	switch {
	case n.g.Mode != Adaptive:
		return ErrNotAdaptive
	case n.g.Nodes[n.id].Kind == Source:
		return ErrSourceTimeout
	}
	return n.timeoutConjuncts()
}

// timeoutConjuncts checks TimeoutV's enabling conjuncts (lines 108-113)
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

// anyBar reports bar[n] # {} (line 109): some input's barrier arrived.
func (n *Node) anyBar() bool {
	for _, e := range n.g.in[n.id] {
		if n.bar[e] {
			return true
		}
	}
	return false
}

// Timeout mirrors Timeout(n) = TimeoutV(n, TRUE, TRUE, FALSE, FALSE)
// (lines 107-125): the node's alignment timed out, and it switches this
// snapshot to unaligned. It records at once (RecordNode, line 115); its
// inputs whose barrier arrived are done (what alignment held back on
// them is behind their barrier: the next snapshot's), the others start
// recording, the Chandy-Lamport receiving rule (lines 116-118); its
// barrier overtakes each output's queue, persisted as that edge's
// channel state (line 119); it reports unaligned, the type it took
// (lines 120-122). MaxTimeouts (line 111) bounds a model, not a run.
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

// CutAligned is the ghost cutAligned[n] (line 59): whether every input
// the node aligns on had delivered its barrier when it recorded.
func (n *Node) CutAligned() bool { return n.cutAligned }

// Blocked reports whether the node is aligning: it has not recorded and
// some input's barrier has arrived (the inputs blocked in an aligning
// mode). Runtimes start their alignment timer when it becomes true.
func (n *Node) Blocked() bool {
	return n.g.aligns() && !n.recorded && n.anyBar()
}

// loadAdaptive restores the adaptive variables with part p (RestoreA
// leaves mode, reported and cutAligned unchanged, line 86): the node's
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

// The reasons a TimeoutOut is refused (TimeoutOutV, lines 159-173),
// besides ErrNotAdaptive and ErrAlreadySwitched.
var (
	ErrTimeoutNotRecorded = errors.New("the node has not recorded: its timeout is the alignment's")           // n \in recorded, line 161
	ErrNothingQueued      = errors.New("no output it may overtake holds records ahead of the node's barrier") // E # {}, line 164
)

// CanTimeoutOut reports whether TimeoutOut would switch the node now,
// and if not why: the conjuncts of TimeoutOutV (lines 161-164) in order,
// after the mode (NextA's quantifier is n \in Node, line 185: a source's
// barrier too may wait behind its full output buffer).
func (n *Node) CanTimeoutOut() error {
	switch {
	case n.g.Mode != Adaptive:
		return ErrNotAdaptive
	case !n.recorded:
		return ErrTimeoutNotRecorded
	case n.switched:
		return ErrAlreadySwitched
	case n.barOut == 0 || len(n.queued()) == 0:
		return ErrNothingQueued
	}
	return nil
}

// queued mirrors Queued(n, TRUE) (lines 135-136): the outputs that are
// not force-aligned on which the barrier of the node's snapshot is still
// queued behind records (of this snapshot: an earlier snapshot's barrier
// ahead of it bounds what it may overtake).
func (n *Node) queued() []int {
	var es []int
	for _, e := range n.g.out[n.id] {
		if !n.g.Edges[e].ForceAligned && len(n.ahead(e)) > 0 {
			es = append(es, e)
		}
	}
	return es
}

// barrierAt is the position of the barrier of the node's snapshot in
// output e's buffer, and that of the first record it may overtake:
// behind the last barrier ahead of it (BarrierPos, lines 129-130).
func (n *Node) barrierAt(e int) (from, at int) {
	at = slices.IndexFunc(n.q[e], func(it Item) bool { return it.Barrier && it.Snap == n.snap })
	if at < 0 {
		return 0, -1
	}
	for i, it := range n.q[e][:at] {
		if it.Barrier {
			from = i + 1
		}
	}
	return from, at
}

// ahead is Ahead(e) (line 131): the records queued ahead of the node's
// barrier on output e (none if the barrier has left).
func (n *Node) ahead(e int) []Item {
	from, at := n.barrierAt(e)
	if at < 0 {
		return nil
	}
	return n.q[e][from:at]
}

// TimeoutOut mirrors TimeoutOut(n) = TimeoutOutV(n, TRUE, TRUE, FALSE)
// (lines 138-175): the node recorded aligned, but its barrier still
// waits behind full output buffers when the timeout passes (Flink's
// aligned-checkpoint-timeout in the output buffers). On each output that
// is not force-aligned the barrier overtakes the records ahead of it
// (lines 165-167), persisted in the node's part as that edge's channel
// state (line 168); the node switches and reports unaligned (lines
// 169-171). Its recorded state is unchanged. The part is replaced, not
// changed: a runtime may hold the one it had (Part's copy shares maps).
func (n *Node) TimeoutOut() (Step, error) {
	if err := n.CanTimeoutOut(); err != nil {
		return Step{}, n.refuse(ActTimeoutOut, -1, err)
	}
	p := *n.part
	p.Overtaken = maps.Clone(p.Overtaken)
	for _, e := range n.queued() {
		from, at := n.barrierAt(e)
		bar := n.q[e][at]
		over := slices.Clone(n.q[e][from:at])
		p.Overtaken[e] = append(p.Overtaken[e], over...)
		q := slices.Concat(n.q[e][:from], []Item{bar}, over, n.q[e][at+1:])
		n.q[e] = q
	}
	n.switched, n.cutAligned = true, false
	if n.g.Nodes[n.id].Kind != Source { // a source reports no type
		n.reported = TypeUnaligned // its barrier overtook records
	}
	p.Type, p.Switched, p.OutTimeout = n.reported, true, true
	n.part = &p
	return n.observe(Step{Action: ActTimeoutOut, Edge: -1}, -1, Item{Barrier: true}), nil
}
