package run

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// The TCP runtime: each node a goroutine owning its core node, each edge
// a loopback TCP connection from its sender to its receiver. The core
// keeps an edge's queue at the sender until the receiver took the item
// (Head, Take, Pop); over TCP the sender ships copies of its queue's
// items to the receiver, which takes them in order with the core's Take
// and acknowledges how many it took (Ack); the sender then pops them.
// The queue is bounded by the core (Cap), so what is shipped is too: the
// acks are the credit. An unaligned barrier changes the queue's front
// (it overtakes the queued records), which the receiver's copies must not
// race: before a step that may record (a barrier, an injection), an
// unaligned node revokes what it shipped (Revoke; the receiver discards
// its copies and answers with its count, revoked) and ships nothing until
// the step is taken; it then ships its queue again from the front. So
// every step is one the core took, in the order of the edge: the run is
// a run of the core, as in memory.

// The frames on an edge's connection.
const (
	frameItems  byte = 1 // sender to receiver: items of the queue, in order
	frameRevoke byte = 2 // sender to receiver: discard your copies, say what you took
	frameAck    byte = 3 // receiver to sender: how many items it took in all; revoked
)

const itemBytes = 1 + 4 + 4 + 4 + 8 + 8 + 4

func appendItem(b []byte, it dataflow.Item) []byte {
	var f byte
	if it.Barrier {
		f = 1
	}
	b = append(b, f)
	b = binary.BigEndian.AppendUint32(b, uint32(it.Src))
	b = binary.BigEndian.AppendUint32(b, uint32(it.I))
	b = binary.BigEndian.AppendUint32(b, uint32(it.Hops))
	b = binary.BigEndian.AppendUint64(b, uint64(it.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(it.Val))
	return binary.BigEndian.AppendUint32(b, uint32(it.Snap))
}

func readItem(b []byte) (dataflow.Item, error) {
	if b[0] > 1 {
		return dataflow.Item{}, fmt.Errorf("bad item flags %d", b[0])
	}
	return dataflow.Item{Barrier: b[0] == 1, Src: int(int32(binary.BigEndian.Uint32(b[1:]))),
		I: int(int32(binary.BigEndian.Uint32(b[5:]))), Hops: int(int32(binary.BigEndian.Uint32(b[9:]))),
		Seq: int(binary.BigEndian.Uint64(b[13:])), Val: int64(binary.BigEndian.Uint64(b[21:])),
		Snap: int(int32(binary.BigEndian.Uint32(b[29:])))}, nil
}

// frame is a frame read off edge e's connection.
type frame struct {
	e       int
	kind    byte
	items   []dataflow.Item
	took    int
	revoked bool
	err     error // the connection failed: the frame is nothing else
}

// inbox is a node's unbounded queue of frames: its connections' readers
// never block on it, so no two nodes wait on each other's writes.
type inbox struct {
	mu     sync.Mutex
	frames []frame
	wake   chan struct{}
}

func (in *inbox) put(f frame) {
	in.mu.Lock()
	in.frames = append(in.frames, f)
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) take() []frame {
	in.mu.Lock()
	defer in.mu.Unlock()
	f := in.frames
	in.frames = nil
	return f
}

// readFrames reads edge e's frames off r into in until r fails.
func readFrames(r io.Reader, e int, in *inbox) {
	br := bufio.NewReader(r)
	var hdr [9]byte
	for {
		f := frame{e: e}
		if _, err := io.ReadFull(br, hdr[:1]); err != nil {
			in.put(frame{e: e, err: err})
			return
		}
		f.kind = hdr[0]
		var err error
		switch f.kind {
		case frameItems:
			if _, err = io.ReadFull(br, hdr[:4]); err == nil {
				n := binary.BigEndian.Uint32(hdr[:4])
				buf := make([]byte, int(n)*itemBytes)
				if _, err = io.ReadFull(br, buf); err == nil {
					for k := range int(n) {
						var it dataflow.Item
						if it, err = readItem(buf[k*itemBytes:]); err != nil {
							break
						}
						f.items = append(f.items, it)
					}
				}
			}
		case frameRevoke:
		case frameAck:
			if _, err = io.ReadFull(br, hdr[:9]); err == nil {
				f.took, f.revoked = int(binary.BigEndian.Uint64(hdr[:8])), hdr[8] == 1
			}
		default:
			err = fmt.Errorf("unknown frame kind %d", f.kind)
		}
		if err != nil {
			in.put(frame{e: e, err: err})
			return
		}
		in.put(f)
	}
}

// tcpNode is a node of the TCP runtime: its core node, its connections
// and what it shipped and took on them.
type tcpNode struct {
	i     int
	nd    *dataflow.Node
	in    *inbox
	conns map[int]net.Conn      // by edge, in and out
	w     map[int]*bufio.Writer // by edge
	dirty map[int]bool          // edges with unflushed writes

	shipped  map[int]int // output edge: items at the queue's head the receiver has copies of
	popped   map[int]int // output edge: items popped (the receiver's count, acked)
	revoking map[int]bool
	quiesce  bool // a step that may record waits for the revocations

	copies map[int][]dataflow.Item // input edge: the sender's items, not yet taken
	took   map[int]int             // input edge: items taken in all
	acked  map[int]bool            // input edge: took items this round, to acknowledge

	queued atomic.Int64 // items in the output buffers, published each round
	left   atomic.Int64 // records left to emit (a source)
}

// afterConnect, when set (by tests), sees the nodes once connected.
var afterConnect func(nodes []*tcpNode)

// RunTCP drives c over loopback TCP connections, one per edge, with the
// same options and result as Run.
func RunTCP(ctx context.Context, c *dataflow.Cluster, opt Options) (*Result, error) {
	if opt.Timeout == 0 {
		opt.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	b := newBook(c, opt)
	g := c.G
	nodes := make([]*tcpNode, len(c.Nodes))
	for i, nd := range c.Nodes {
		nodes[i] = &tcpNode{i: i, nd: nd, in: &inbox{wake: make(chan struct{}, 1)}, conns: map[int]net.Conn{},
			w: map[int]*bufio.Writer{}, dirty: map[int]bool{}, shipped: map[int]int{}, popped: map[int]int{},
			revoking: map[int]bool{}, copies: map[int][]dataflow.Item{}, took: map[int]int{}, acked: map[int]bool{}}
	}
	if err := connect(g, nodes); err != nil {
		return nil, err
	}
	if afterConnect != nil {
		afterConnect(nodes)
	}
	var wg sync.WaitGroup
	defer func() {
		for _, n := range nodes {
			for _, cn := range n.conns {
				_ = cn.Close()
			}
		}
		wg.Wait()
	}()
	for _, n := range nodes {
		for e, cn := range n.conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				readFrames(cn, e, n.in)
			}()
		}
	}
	stop := make(chan struct{})
	errc := make(chan error, len(nodes))
	var nwg sync.WaitGroup
	for _, n := range nodes {
		n.publish(g)
		nwg.Add(1)
		go func() {
			defer nwg.Done()
			if err := n.loop(g, b, stop); err != nil {
				errc <- fmt.Errorf("run: %s: %w", g.Nodes[n.i].Name, err)
			}
		}()
	}
	drained := func() bool {
		paused := !b.mayEmit()
		for _, n := range nodes {
			if n.queued.Load() > 0 || !paused && n.left.Load() > 0 {
				return false
			}
		}
		return true
	}
	err := b.watch(ctx, c, drained, errc, haltOnce(stop, &nwg))
	b.res.Elapsed = time.Since(b.start)
	return b.res, err
}

// connect opens a listener per node that has inputs and a connection per
// edge, its sender dialling its receiver and saying which edge it is.
func connect(g *dataflow.Graph, nodes []*tcpNode) error {
	type accepted struct {
		e   int
		c   net.Conn
		err error
	}
	acc := make(chan accepted, len(g.Edges))
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	addr := make([]string, len(nodes))
	for i := range nodes {
		if len(g.In(i)) == 0 {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("run: listen for %s: %w", g.Nodes[i].Name, err)
		}
		lns = append(lns, ln)
		addr[i] = ln.Addr().String()
		go func() {
			for range g.In(i) {
				c, err := ln.Accept()
				if err != nil {
					acc <- accepted{err: err}
					return
				}
				var hello [4]byte
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.ReadFull(c, hello[:]); err != nil {
					acc <- accepted{err: fmt.Errorf("the hello on %s's listener: %w", g.Nodes[i].Name, err)}
					return
				}
				_ = c.SetReadDeadline(time.Time{})
				e := int(binary.BigEndian.Uint32(hello[:]))
				if e >= len(g.Edges) || g.Edges[e].To != i {
					acc <- accepted{err: fmt.Errorf("%s was dialled for edge %d, not one of its inputs", g.Nodes[i].Name, e)}
					return
				}
				acc <- accepted{e: e, c: c}
			}
		}()
	}
	for e, ed := range g.Edges {
		c, err := net.Dial("tcp", addr[ed.To])
		if err != nil {
			return fmt.Errorf("run: dial %s for %s: %w", g.Nodes[ed.To].Name, g.EdgeName(e), err)
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		if _, err := c.Write(binary.BigEndian.AppendUint32(nil, uint32(e))); err != nil {
			return fmt.Errorf("run: hello on %s: %w", g.EdgeName(e), err)
		}
		from := nodes[ed.From]
		from.conns[e], from.w[e] = c, bufio.NewWriter(c)
	}
	for range g.Edges {
		a := <-acc
		if a.err != nil {
			return fmt.Errorf("run: %w", a.err)
		}
		to := nodes[g.Edges[a.e].To]
		to.conns[a.e], to.w[a.e] = a.c, bufio.NewWriter(a.c)
	}
	return nil
}

// loop is the node's goroutine: read the frames that came, take the steps
// the core allows, ship and acknowledge, publish, wait for more.
func (n *tcpNode) loop(g *dataflow.Graph, b *book, stop <-chan struct{}) error {
	wait := time.NewTimer(time.Millisecond)
	defer wait.Stop()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		for _, f := range n.in.take() {
			if err := n.handle(g, f); err != nil {
				select {
				case <-stop:
					return nil // the run is over: the connections are closing
				default:
				}
				return err
			}
		}
		moved, err := n.steps(g, b)
		if err != nil {
			return err
		}
		if !n.quiesce {
			n.ship(g)
		}
		n.publish(g)
		if err := n.flush(g); err != nil {
			return err
		}
		if moved {
			continue
		}
		wait.Reset(200 * time.Microsecond)
		select {
		case <-stop:
			return nil
		case <-n.in.wake:
		case <-wait.C:
		}
	}
}

// handle applies a frame off edge f.e.
func (n *tcpNode) handle(g *dataflow.Graph, f frame) error {
	e := f.e
	switch {
	case f.err != nil:
		return fmt.Errorf("%s: the connection failed: %w", g.EdgeName(e), f.err)
	case f.kind == frameItems && g.Edges[e].To == n.i:
		n.copies[e] = append(n.copies[e], f.items...)
	case f.kind == frameRevoke && g.Edges[e].To == n.i:
		n.copies[e] = nil
		n.ack(e, true)
	case f.kind == frameAck && g.Edges[e].From == n.i:
		k := f.took - n.popped[e]
		if k < 0 || k > len(n.nd.Queue(e)) || k > n.shipped[e] {
			return fmt.Errorf("%s: the receiver acknowledged %d items, %d were shipped", g.EdgeName(e), f.took, n.popped[e]+n.shipped[e])
		}
		for range k {
			n.nd.Pop(e)
		}
		n.popped[e], n.shipped[e] = f.took, n.shipped[e]-k
		if f.revoked {
			n.shipped[e], n.revoking[e] = 0, false
		}
	default:
		return fmt.Errorf("%s: frame kind %d in the wrong direction", g.EdgeName(e), f.kind)
	}
	return nil
}

// steps takes what the core allows: a source injects (when due) or
// emits; another node takes the heads of its inputs' copies in turn, as
// many as it can in a round, so that a round's acks and shipments go out
// together.
func (n *tcpNode) steps(g *dataflow.Graph, b *book) (bool, error) {
	unaligned := g.Mode == dataflow.Unaligned
	if g.Nodes[n.i].Kind == dataflow.Source {
		if b.mayInject(n.nd.Snap()) {
			if unaligned && !n.revoked(g) {
				return false, nil // the outputs' copies are revoked first
			}
			n.quiesce = false
			return inject(b, n.i, n.nd), nil
		}
		if !b.mayEmit() {
			return false, nil
		}
		if _, err := n.nd.Emit(); err != nil {
			return false, nil
		}
		noteQueues(b, g, n.i, n.nd)
		b.emit(n.i, n.nd.Emitted())
		return true, nil
	}
	moved := false
	for _, e := range g.In(n.i) {
		for len(n.copies[e]) > 0 {
			ok, err := n.takeHead(g, b, e)
			if err != nil {
				return moved, err
			}
			if !ok {
				break
			}
			moved = true
		}
	}
	return moved, nil
}

// takeHead has the core take the head of input e's copies, if it can.
func (n *tcpNode) takeHead(g *dataflow.Graph, b *book, e int) (bool, error) {
	it := n.copies[e][0]
	mayRecord := it.Barrier && (it.Snap != n.nd.Snap() || !n.nd.Recorded())
	if mayRecord && g.Mode == dataflow.Unaligned && !n.revoked(g) {
		return false, nil // the outputs' copies are revoked first
	}
	st, err := n.nd.Take(e, it)
	if err != nil {
		if errors.Is(err, dataflow.ErrSeq) || errors.Is(err, dataflow.ErrBadItem) || errors.Is(err, dataflow.ErrBarrierOrder) {
			return false, fmt.Errorf("%s: %w", g.EdgeName(e), err)
		}
		return false, nil // blocked, no room, the previous snapshot: later
	}
	if it.Barrier {
		n.quiesce = false
	}
	n.copies[e] = n.copies[e][1:]
	n.took[e]++
	n.acked[e] = true
	took(b, g, n.i, n.nd, it, st)
	if d := b.opt.Throttle[n.i]; d > 0 && !it.Barrier {
		time.Sleep(d)
	}
	return true, nil
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
			_ = n.w[e].WriteByte(frameRevoke)
			n.dirty[e] = true
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
		items := q[n.shipped[e]:]
		buf := binary.BigEndian.AppendUint32([]byte{frameItems}, uint32(len(items)))
		for _, it := range items {
			buf = appendItem(buf, it)
		}
		_, _ = n.w[e].Write(buf)
		n.shipped[e] = len(q)
		n.dirty[e] = true
	}
}

// ack tells input e's sender how many items the node took in all.
func (n *tcpNode) ack(e int, revoked bool) {
	var r byte
	if revoked {
		r = 1
	}
	buf := binary.BigEndian.AppendUint64([]byte{frameAck}, uint64(n.took[e]))
	_, _ = n.w[e].Write(append(buf, r))
	n.dirty[e] = true
}

// flush acknowledges what the round took and sends what it wrote.
func (n *tcpNode) flush(g *dataflow.Graph) error {
	for e := range n.acked {
		n.ack(e, false)
		delete(n.acked, e)
	}
	for e := range n.dirty {
		if err := n.w[e].Flush(); err != nil {
			return fmt.Errorf("%s: %w", g.EdgeName(e), err)
		}
		delete(n.dirty, e)
	}
	return nil
}

// publish says how many items the node's buffers hold and how many
// records it has left to emit, for the run's end and the stop-the-world
// drain. It comes before the round's acks are flushed: a sender pops an
// item only after its receiver published the step that took it.
func (n *tcpNode) publish(g *dataflow.Graph) {
	q := 0
	for _, e := range g.Out(n.i) {
		q += len(n.nd.Queue(e))
	}
	n.queued.Store(int64(q))
	n.left.Store(int64(g.Nodes[n.i].Budget - n.nd.Emitted()))
}
