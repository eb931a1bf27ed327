package run

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// tcpNode is a node of the TCP runtime: its core node, its inbox and
// what it shipped and took on its edges (indexed by edge).
type tcpNode struct {
	// mu is held for each whole round, so that the run's drain check
	// (tcpDrained, holding every node's) sees each core between rounds:
	// never a source that decided to emit before a stop-the-world pause
	// and has not emitted yet, and never an item's products at one node
	// before its taking, nor its pop at the sender after it.
	mu    sync.Mutex
	i     int
	g     *dataflow.Graph
	nd    *dataflow.Node
	inbox *transport.Inbox
	send  func(wire.Envelope) error
	batch []wire.Envelope // the last batch taken from the inbox

	shipped  []int  // output edge: items at the queue's head the receiver has copies of
	popped   []int  // output edge: items popped (the receiver's count, acked)
	revoking []bool // output edge: a revoke is on its way
	quiesce  bool   // a step that may record waits for the revocations
	barrier  bool   // the round injected or took a barrier: send at once

	copies  [][]dataflow.Item // input edge: the sender's items, not yet taken
	took    []int             // input edge: items taken in all
	ackedTo []int             // input edge: took, as last acknowledged
	toAck   []int             // input edges that took items this round, to acknowledge
	acked   []bool            // input edge: in toAck

	out   [][]byte // by peer node: the round's messages to it
	seq   []uint64 // by peer node: frames sent to it
	peers []int    // peers with messages this round
}

// newTCPNode is node i of g over tr (nil: no transport, for tests of
// the message handling).
func newTCPNode(g *dataflow.Graph, i int, nd *dataflow.Node, tr *transport.TCP) (*tcpNode, error) {
	ne, nn := len(g.Edges), len(g.Nodes)
	n := &tcpNode{i: i, g: g, nd: nd, shipped: make([]int, ne), popped: make([]int, ne), revoking: make([]bool, ne),
		copies: make([][]dataflow.Item, ne), took: make([]int, ne), ackedTo: make([]int, ne), acked: make([]bool, ne),
		out: make([][]byte, nn), seq: make([]uint64, nn)}
	if tr == nil {
		return n, nil
	}
	var err error
	if n.inbox, err = tr.Inbox(procOf(i)); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	n.send = tr.Send
	return n, nil
}

// loop is the node's goroutine: handle the messages that came, take the
// steps the core allows, ship and acknowledge, send the round's frames,
// wait for more.
func (n *tcpNode) loop(g *dataflow.Graph, b *book, stop <-chan struct{}) error {
	wait := time.NewTimer(time.Millisecond)
	defer wait.Stop()
	for !stopped(stop) {
		moved, err := n.round(g, b)
		if err != nil {
			if stopped(stop) {
				return nil // the run is over: the transport is closing
			}
			return err
		}
		if moved {
			continue
		}
		wait.Reset(200 * time.Microsecond)
		select {
		case <-stop:
			return nil
		case <-n.inbox.Ready():
		case <-wait.C:
		}
	}
	return nil
}

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// testHookInRound, set by tests only, runs in a round once its steps
// were taken, with the node's lock held.
var testHookInRound func(n *tcpNode)

// round is one round of the loop, under the node's lock; it reports
// whether the node took a step.
func (n *tcpNode) round(g *dataflow.Graph, b *book) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.receive(g); err != nil {
		return false, err
	}
	moved, err := n.steps(g, b)
	if err != nil {
		return false, err
	}
	if testHookInRound != nil {
		testHookInRound(n)
	}
	if moved && !n.due(g) {
		return true, nil // more rounds first: more to a frame
	}
	if !n.quiesce {
		n.ship(g)
	}
	return moved, n.flush(g)
}

// due reports whether the round's output goes now although the node
// moves on: it goes when the node is idle (it took no step), when it
// injected or took a barrier (which it sent on), or when an edge's
// credit (Cap) is half used, by items not shipped yet on an output
// or items taken and not acknowledged yet on an input, so that the other
// end can go on meanwhile.
func (n *tcpNode) due(g *dataflow.Graph) bool {
	if n.barrier {
		n.barrier = false
		return true // a barrier is on its way: alignment downstream waits for it
	}
	half := max(1, g.Cap/2)
	for _, e := range n.toAck {
		if n.took[e]-n.ackedTo[e] >= half {
			return true
		}
	}
	for _, e := range g.Out(n.i) {
		if len(n.nd.Queue(e))-n.shipped[e] >= half {
			return true
		}
	}
	return false
}

// receive handles every frame waiting in the inbox (the transport queues
// each read batch apart), so that the round answers them all at once.
func (n *tcpNode) receive(g *dataflow.Graph) error {
	for {
		n.batch, _ = n.inbox.Take(n.batch, 0)
		if len(n.batch) == 0 {
			return nil
		}
		for _, env := range n.batch {
			if err := n.frame(g, env); err != nil {
				return err
			}
		}
	}
}

// frame handles the messages of one frame, from the node at the other
// end of env.Chan.
func (n *tcpNode) frame(g *dataflow.Graph, env wire.Envelope) error {
	if env.Frame.Kind != wire.KindApp {
		return fmt.Errorf("%s: unexpected %s", edgesOf(g, env.Chan), env.Frame)
	}
	for b := env.Frame.Payload; len(b) > 0; {
		m, rest, err := nextMsg(g, b)
		if err != nil {
			return fmt.Errorf("%s: %w", env.Chan, err)
		}
		if err := n.handle(g, env.Chan.From, m); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// handle applies message m, which came from process from.
func (n *tcpNode) handle(g *dataflow.Graph, from spec.ProcID, m msg) error {
	e, ed := m.e, g.Edges[m.e]
	switch {
	case m.kind == msgItems && n.inputFrom(ed, from):
		n.copies[e] = slices.Grow(n.copies[e], len(m.items)/itemBytes)
		return m.eachItem(func(it dataflow.Item) { n.copies[e] = append(n.copies[e], it) })
	case m.kind == msgRevoke && n.inputFrom(ed, from):
		n.copies[e] = n.copies[e][:0]
		n.ack(e, true)
		return nil
	case m.kind == msgAck && ed.From == n.i && procOf(ed.To) == from:
		return n.acknowledged(g, m)
	}
	return fmt.Errorf("%s: message kind %d in the wrong direction", g.EdgeName(e), m.kind)
}

// inputFrom reports whether ed is an input of the node sent by process
// from.
func (n *tcpNode) inputFrom(ed dataflow.EdgeSpec, from spec.ProcID) bool {
	return ed.To == n.i && procOf(ed.From) == from
}

// acknowledged pops the items output edge m.e's receiver took.
func (n *tcpNode) acknowledged(g *dataflow.Graph, m msg) error {
	e := m.e
	k := m.took - n.popped[e]
	if k < 0 || k > len(n.nd.Queue(e)) || k > n.shipped[e] {
		return fmt.Errorf("%s: the receiver acknowledged %d items, %d were shipped", g.EdgeName(e), m.took, n.popped[e]+n.shipped[e])
	}
	for range k {
		n.nd.Pop(e)
	}
	n.popped[e], n.shipped[e] = m.took, n.shipped[e]-k
	if m.revoked {
		n.shipped[e], n.revoking[e] = 0, false
	}
	return nil
}

// steps takes what the core allows: a source injects (when due) or
// emits; another node takes the heads of its inputs' copies in turn, as
// many as it can in a round, so that a round's acks and shipments go out
// together.
func (n *tcpNode) steps(g *dataflow.Graph, b *book) (bool, error) {
	if g.Nodes[n.i].Kind == dataflow.Source {
		moved := n.timer(g, b) // its barrier may wait behind its full buffer (adaptive.go)
		return n.sourceStep(g, b) || moved, nil
	}
	moved := n.timer(g, b) // the adaptive mode's alignment timer (adaptive.go)
	for _, e := range g.In(n.i) {
		k, err := n.takeHeads(g, b, e)
		moved = moved || k > 0
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// takeHeads has the core take the heads of input e's copies in order,
// as many as it can, and drops those from the copies (moving the rest to
// the front: the next items shipped reuse the array); it returns how
// many it took.
func (n *tcpNode) takeHeads(g *dataflow.Graph, b *book, e int) (int, error) {
	k := 0
	var err error
	for _, it := range n.copies[e] {
		var ok bool
		if ok, err = n.takeHead(g, b, e, it); !ok {
			break
		}
		k++
	}
	n.copies[e] = n.copies[e][:copy(n.copies[e], n.copies[e][k:])]
	return k, err
}

// sourceStep has a source inject, when due (its outputs' copies revoked
// first if unaligned), or emit.
func (n *tcpNode) sourceStep(g *dataflow.Graph, b *book) bool {
	if b.mayInject(n.nd.Snap()) {
		if g.Mode == dataflow.Unaligned && !n.revoked(g) {
			return false // the outputs' copies are revoked first
		}
		n.quiesce = false
		n.barrier = inject(b, n.i, n.nd)
		return n.barrier
	}
	if !b.mayEmit() {
		return false
	}
	if _, err := n.nd.Emit(); err != nil {
		return false
	}
	noteQueues(b, g, n.i, n.nd)
	b.emit(n.i, n.nd.Emitted())
	pace(b, n.i)
	return true
}

// takeHead has the core take it, the head of input e's copies, if it
// can.
func (n *tcpNode) takeHead(g *dataflow.Graph, b *book, e int, it dataflow.Item) (bool, error) {
	if n.mayRecord(it) && g.Mode == dataflow.Unaligned && !n.revoked(g) {
		return false, nil // the outputs' copies are revoked first
	}
	st, err := n.nd.Take(e, it)
	if err != nil {
		return false, fatalTake(g, e, err)
	}
	if it.Barrier {
		n.quiesce, n.barrier = false, true
	}
	n.took[e]++
	n.noteAck(e)
	took(b, g, n.i, n.nd, it, st)
	if d := b.opt.Throttle[n.i]; d > 0 && !it.Barrier {
		time.Sleep(d)
	}
	return true, nil
}

// mayRecord reports whether taking it may make the node record: a
// barrier of a snapshot it has not recorded.
func (n *tcpNode) mayRecord(it dataflow.Item) bool {
	return it.Barrier && (it.Snap != n.nd.Snap() || !n.nd.Recorded())
}

// fatalTake is the run's error for a Take the core refused: an item out
// of order or malformed (named by its edge), or nil for a refusal that
// passes (blocked, no room, the previous snapshot: later).
func fatalTake(g *dataflow.Graph, e int, err error) error {
	if errors.Is(err, dataflow.ErrSeq) || errors.Is(err, dataflow.ErrBadItem) || errors.Is(err, dataflow.ErrBarrierOrder) {
		return fmt.Errorf("%s: %w", g.EdgeName(e), err)
	}
	return nil
}

// noteAck lists input e among those to acknowledge this round.
func (n *tcpNode) noteAck(e int) {
	if !n.acked[e] {
		n.acked[e] = true
		n.toAck = append(n.toAck, e)
	}
}

// revoked reports whether no output has copies at its receiver, asking
// for them back (and shipping nothing meanwhile) if some have.
func (n *tcpNode) revoked(g *dataflow.Graph) bool {
	all := true
	for _, e := range g.Out(n.i) {
		if n.shipped[e] == 0 && !n.revoking[e] {
			continue
		}
		all = false
		if !n.revoking[e] {
			n.revoking[e] = true
			to := g.Edges[e].To
			n.put(to, appendRevoke(n.out[to], e))
		}
	}
	n.quiesce = !all
	return all
}

// ship sends each output's items the receiver has no copies of yet.
func (n *tcpNode) ship(g *dataflow.Graph) {
	for _, e := range g.Out(n.i) {
		q := n.nd.Queue(e)
		if n.revoking[e] || n.shipped[e] >= len(q) {
			continue
		}
		to := g.Edges[e].To
		n.put(to, appendItems(n.out[to], e, q[n.shipped[e]:]))
		n.shipped[e] = len(q)
	}
}

// ack tells input e's sender how many items the node took in all.
func (n *tcpNode) ack(e int, revoked bool) {
	from := n.edgeFrom(e)
	n.put(from, appendAck(n.out[from], e, n.took[e], revoked))
	n.ackedTo[e] = n.took[e]
}

// edgeFrom is the sender of input edge e.
func (n *tcpNode) edgeFrom(e int) int { return n.g.Edges[e].From }

// put sets the round's messages to peer to, noting the peer.
func (n *tcpNode) put(to int, b []byte) {
	if len(n.out[to]) == 0 {
		n.peers = append(n.peers, to)
	}
	n.out[to] = b
}

// flush acknowledges what the round took and sends the round's
// messages, one frame per peer.
func (n *tcpNode) flush(g *dataflow.Graph) error {
	for _, e := range n.toAck {
		n.ack(e, false)
		n.acked[e] = false
	}
	n.toAck = n.toAck[:0]
	for _, to := range n.peers {
		n.seq[to]++
		ch := spec.Channel{From: procOf(n.i), To: procOf(to)}
		err := n.send(wire.Envelope{Chan: ch, Frame: wire.Frame{Kind: wire.KindApp, Seq: n.seq[to], Payload: n.out[to]}})
		if err != nil {
			return fmt.Errorf("%s: %w", edgesOf(g, ch), err)
		}
		n.out[to] = n.out[to][:0] // Send copied it
	}
	n.peers = n.peers[:0]
	return nil
}
