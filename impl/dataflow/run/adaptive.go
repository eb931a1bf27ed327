package run

import (
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// The adaptive mode's timer (tla/BarrierAdaptive.tla's Timeout, driven by
// the wall clock): in a graph of dataflow.Adaptive, a node whose
// alignment has lasted Options.AlignedTimeout since its first barrier of
// the snapshot is told Timeout, and switches to unaligned. Each node's
// loop checks its deadline every round (the in-memory runtime's node
// goroutine, the TCP runtime's round), so a switch comes within a round
// of the deadline: 0 switches at the first barrier that blocks, as
// Flink's execution.checkpointing.aligned-checkpoint-timeout of 0 does.

// timeoutDue reports whether node i (core node nd) is aligning and its
// alignment has lasted the timeout: the timer went off.
func (b *book) timeoutDue(i int, nd *dataflow.Node) bool {
	if b.g.Mode != dataflow.Adaptive || !nd.Blocked() || nd.CanTimeout() != nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.barSnap[i] == nd.Snap() && time.Since(b.bar[i]) >= b.opt.AlignedTimeout
}

// timeOut tells node i its alignment timed out and notes the switch: it
// recorded (its alignment ended; a sink with an external sink driver
// pre-commits, as on the barrier it records on), and its part may be
// complete. It reports whether the node switched.
func timeOut(b *book, i int, nd *dataflow.Node) bool {
	st, err := nd.Timeout()
	if err != nil {
		return false
	}
	b.recorded(i, nd.Snap())
	sinkStep(b, b.g, i, nd, dataflow.Item{Barrier: true}, st) // a switched sink pre-commits as it records
	b.partDone(i, nd)
	return true
}

// ChannelBytes is the size of node i's share of the channel state of its
// part p, on the TCP runtime's wire: the records its barrier overtook on
// its outputs and those it logged on its inputs (what the switch costs
// in the adaptive mode).
func ChannelBytes(p *dataflow.Part) int {
	n := 0
	for _, m := range []map[int][]dataflow.Item{p.Overtaken, p.Logged} {
		for _, its := range m {
			for _, it := range its {
				n += len(appendItem(nil, it))
			}
		}
	}
	return n
}

// timer has the TCP node time out if its alignment's timer went off,
// once its outputs' copies at their receivers are revoked (its barrier
// overtakes them, as an unaligned node's does: sourceStep, takeHead).
func (n *tcpNode) timer(g *dataflow.Graph, b *book) bool {
	if !b.timeoutDue(n.i, n.nd) || !n.revoked(g) {
		return false
	}
	n.quiesce = false
	n.barrier = timeOut(b, n.i, n.nd)
	return n.barrier
}

// NodeCost is what one node's part of a checkpoint took: the type it
// reported and whether it switched (the adaptive mode), how long it was
// blocked aligning (from its first barrier to its recording), and the
// bytes of channel state its part holds (ChannelBytes).
type NodeCost struct {
	Type     dataflow.SnapType
	Switched bool
	Blocked  time.Duration
	Bytes    int
}

// Costs is, per node, what the checkpoint took (NodeCost).
func (cp Checkpoint) Costs() []NodeCost {
	cs := make([]NodeCost, len(cp.Snapshot.Parts))
	for i, p := range cp.Snapshot.Parts {
		cs[i] = NodeCost{Type: p.Type, Switched: p.Switched, Blocked: cp.Align[i], Bytes: ChannelBytes(p)}
	}
	return cs
}
