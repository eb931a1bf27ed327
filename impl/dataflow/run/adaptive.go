package run

import (
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// The adaptive mode's timer (tla/BarrierAdaptive.tla's Timeout and
// TimeoutOut, driven by the wall clock): in a graph of dataflow.Adaptive,
// once the snapshot has lasted Options.AlignedTimeout since it was
// injected, a node still aligning is told Timeout and switches to
// unaligned, and a node that recorded aligned but whose barrier still
// waits behind records in an output buffer (backpressure) is told
// TimeoutOut: its barrier overtakes them, persisted, as Flink's
// aligned-checkpoint-timeout does for a barrier still in an output buffer
// (FLINK-27251). The timeout runs from the snapshot's start, as Flink's
// runs from the checkpoint's (FLINK-19681), not from each node's first
// barrier: the operators of a chain behind backpressure each waiting a
// timeout of their own would add one timeout per hop to the checkpoint,
// and the checkpoint is to take at most the timeout plus an unaligned
// one. A barrier that arrives after the timeout passed switches at
// once. Each node's
// loop checks its deadline every round (the in-memory runtime's node
// goroutine, the TCP runtime's round), so a switch comes within a round
// of the deadline: 0 switches at the first barrier that blocks, as
// Flink's execution.checkpointing.aligned-checkpoint-timeout of 0 does.

// timeoutDue reports whether node nd could switch (it is aligning, or
// its barrier waits in an output buffer) and its snapshot, the one in
// progress, has lasted the timeout since it was injected: the timer went
// off.
func (b *book) timeoutDue(nd *dataflow.Node) bool {
	if b.g.Mode != dataflow.Adaptive || nd.CanTimeout() != nil && nd.CanTimeoutOut() != nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return nd.Snap() == b.target && b.target > b.done && time.Since(b.injAt) >= b.opt.AlignedTimeout
}

// timeOut tells node i its timer went off and notes the switch: Timeout
// while it aligns, TimeoutOut (timeOutOut) once it recorded.
func timeOut(b *book, i int, nd *dataflow.Node) bool {
	if nd.Recorded() {
		return timeOutOut(b, i, nd)
	}
	return timeOutAligning(b, i, nd)
}

// timeOutOut has node i's barrier overtake its output buffers and, if
// the book noted its part already, notes the new one (the snapshot
// cannot have completed: the barrier has not reached the receiver).
func timeOutOut(b *book, i int, nd *dataflow.Node) bool {
	if _, err := nd.TimeoutOut(); err != nil {
		return false
	}
	if b.noted[i].Load() != int64(nd.Snap()) {
		return true // noted later, with the new part
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if nd.Snap() == b.target && b.done != b.target && b.parts[i] != nil {
		b.parts[i] = nd.Part()
	}
	return true
}

// timeOutAligning tells node i its alignment timed out and notes the
// switch: it recorded (its alignment ended; a sink with an external sink
// driver pre-commits, as on the barrier it records on), and its part may
// be complete. It reports whether the node switched.
func timeOutAligning(b *book, i int, nd *dataflow.Node) bool {
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

// timer has the TCP node time out if its timer went off, once its
// outputs' copies at their receivers are revoked (its barrier overtakes
// them, as an unaligned node's does: sourceStep, takeHead). If the
// switch is no longer possible meanwhile (the barrier it would have
// overtaken was taken, or it recorded aligned), shipping resumes: in the
// adaptive mode only the timer quiesces, and ship leaves the edges still
// being revoked alone.
func (n *tcpNode) timer(g *dataflow.Graph, b *book) bool {
	if !b.timeoutDue(n.nd) {
		if g.Mode == dataflow.Adaptive {
			n.quiesce = false
		}
		return false
	}
	if !n.revoked(g) {
		return false
	}
	n.quiesce = false
	n.barrier = timeOut(b, n.i, n.nd)
	return n.barrier
}

// NodeCost is what one node's part of a checkpoint took: the type it
// reported and whether it switched (the adaptive mode; OutTimeout when
// the switch came after it recorded aligned, its barrier overtaking full
// output buffers), how long it was blocked aligning (from its first
// barrier to its recording), and the bytes of channel state its part
// holds (ChannelBytes).
type NodeCost struct {
	Type       dataflow.SnapType
	Switched   bool
	OutTimeout bool
	Blocked    time.Duration
	Bytes      int
}

// Costs is, per node, what the checkpoint took (NodeCost).
func (cp Checkpoint) Costs() []NodeCost {
	cs := make([]NodeCost, len(cp.Snapshot.Parts))
	for i, p := range cp.Snapshot.Parts {
		cs[i] = NodeCost{Type: p.Type, Switched: p.Switched, OutTimeout: p.OutTimeout, Blocked: cp.Align[i], Bytes: ChannelBytes(p)}
	}
	return cs
}
