package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// The TCP runtime: each node a goroutine owning its core node, its edges
// carried by one transport.TCP over loopback (impl/transport: one
// connection per directed pair of nodes, frames acknowledged, resumed
// after a cut connection, incarnations checked). Node i is process
// "n<i>"; each edge From->To uses the transport channel From->To for the
// queue's items and To->From for the receiver's acknowledgements, and
// every message names its edge (tcpmsg.go), so that the edges between one
// pair share the pair's frames.
//
// The core keeps an edge's queue at the sender until the receiver took the
// item (Head, Take, Pop); over TCP the sender ships copies of its queue's
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
//
// Batching: a node's round takes what its inbox holds, takes the steps
// the core allows, and then sends one frame per peer node carrying every
// message of the round for that peer (all the items shipped on every edge
// to it, every ack); the transport writes the frames queued while its
// writer was busy with one system call.

// afterStart, when set (by tests), sees the transport and the nodes once
// every connection is up.
var afterStart func(tr *transport.TCP, nodes []*tcpNode)

// procOf is node i's process id in the transport's topology.
func procOf(i int) spec.ProcID { return spec.ProcID(fmt.Sprintf("n%d", i)) }

// topology is the transport topology of g: a process per node and, for
// every edge, the channels both ways between its ends.
func topology(g *dataflow.Graph) (*spec.Topology, error) {
	procs := make([]spec.ProcID, len(g.Nodes))
	for i := range g.Nodes {
		procs[i] = procOf(i)
	}
	seen := map[spec.Channel]bool{}
	var chans []spec.Channel
	for _, ed := range g.Edges {
		for _, c := range []spec.Channel{{From: procOf(ed.From), To: procOf(ed.To)}, {From: procOf(ed.To), To: procOf(ed.From)}} {
			if !seen[c] {
				seen[c] = true
				chans = append(chans, c)
			}
		}
	}
	top, err := spec.NewTopology(procs, chans)
	if err != nil {
		return nil, fmt.Errorf("run: the graph's transport topology: %w", err)
	}
	return top, nil
}

// RunTCP drives c over loopback TCP connections (a transport.TCP), with
// the same options and result as Run.
func RunTCP(ctx context.Context, c *dataflow.Cluster, opt Options) (*Result, error) {
	ctx, cancel, err := begin(ctx, c, &opt)
	if err != nil {
		return nil, err
	}
	defer cancel()
	fatal := make(chan error, 1)
	tr, err := startTCP(ctx, c.G, fatal)
	if err != nil {
		return nil, err
	}
	defer closeTCP(tr)
	nodes, err := tcpNodes(c, tr)
	if err != nil {
		return nil, err
	}
	if afterStart != nil {
		afterStart(tr, nodes)
	}
	b := newBook(c, opt)
	stop := make(chan struct{})
	errc := make(chan error, len(nodes)+1)
	go func() {
		select {
		case err := <-fatal:
			errc <- err
		case <-stop:
		}
	}()
	var nwg sync.WaitGroup
	startNodes(c.G, b, nodes, stop, errc, &nwg)
	err = b.endSink(b.watch(ctx, c, func() bool { return tcpDrained(c, b, nodes) }, errc, haltOnce(stop, &nwg)))
	b.res.Elapsed = time.Since(b.start)
	return b.res, err
}

// startNodes runs each node's loop on a goroutine of its own (counted in
// nwg) until stop; a node's error goes to errc, named by the node.
func startNodes(g *dataflow.Graph, b *book, nodes []*tcpNode, stop <-chan struct{}, errc chan<- error, nwg *sync.WaitGroup) {
	for _, n := range nodes {
		nwg.Add(1)
		go func() {
			defer nwg.Done()
			if err := n.loop(g, b, stop); err != nil {
				errc <- fmt.Errorf("run: %s: %w", g.Nodes[n.i].Name, err)
			}
		}()
	}
}

// tcpNodes are c's nodes over tr.
func tcpNodes(c *dataflow.Cluster, tr *transport.TCP) ([]*tcpNode, error) {
	nodes := make([]*tcpNode, len(c.Nodes))
	for i, nd := range c.Nodes {
		var err error
		if nodes[i], err = newTCPNode(c.G, i, nd, tr); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// tcpDrained: every source emitted its budget or is paused, and every
// buffer is empty, checked between rounds: with every node's lock held,
// as Run's drained does. An item stays in its sender's queue until the
// receiver's ack, which the receiver sends in the round that took it, so
// an item in flight (on the wire, or a copy not taken yet) is in a
// buffer here; a source's decision to emit and its emission are one
// round, so none comes after a pause that this check saw.
func tcpDrained(c *dataflow.Cluster, b *book, nodes []*tcpNode) bool {
	for _, n := range nodes {
		n.mu.Lock()
	}
	defer func() {
		for _, n := range nodes {
			n.mu.Unlock()
		}
	}()
	return idle(c, b.mayEmit())
}

// startTCP starts the transport for g's nodes, every one served here and
// listening on loopback, and brings up every connection (connectAll).
// Errors that break the transport's protocol (a channel that cannot go
// on) are sent to fatal, naming the edges.
func startTCP(ctx context.Context, g *dataflow.Graph, fatal chan<- error) (*transport.TCP, error) {
	top, err := topology(g)
	if err != nil {
		return nil, err
	}
	addrs := map[spec.ProcID]string{}
	for _, p := range top.Procs {
		addrs[p] = "127.0.0.1:0"
	}
	tr, err := transport.NewTCP(top, transport.TCPConfig{Addrs: addrs, DrainTimeout: 100 * time.Millisecond,
		OnError: func(err error) { reportFatal(g, err, fatal) }})
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if err := connectAll(ctx, tr, top); err != nil {
		closeTCP(tr)
		return nil, err
	}
	return tr, nil
}

// reportFatal sends the run's error for a transport error that stops a
// channel to fatal (the first one only).
func reportFatal(g *dataflow.Graph, err error, fatal chan<- error) {
	if ferr := fatalError(g, err); ferr != nil {
		select {
		case fatal <- ferr:
		default:
		}
	}
}

// connectAll brings up every connection of tr: each channel carries a
// heartbeat, and every inbox must receive all of its own before the run
// starts.
func connectAll(ctx context.Context, tr *transport.TCP, top *spec.Topology) error {
	for _, ch := range top.Chans {
		if err := tr.Send(wire.Envelope{Chan: ch, Frame: wire.Frame{Kind: wire.KindHeartbeat, Seq: tr.Incarnation()}}); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}
	for _, p := range top.Procs {
		if err := awaitHeartbeats(ctx, tr, p, len(top.In(p))); err != nil {
			return fmt.Errorf("run: connecting %s: %w", p, err)
		}
	}
	return nil
}

// awaitHeartbeats takes the n heartbeats of p's inbound channels.
func awaitHeartbeats(ctx context.Context, tr *transport.TCP, p spec.ProcID, n int) error {
	in, err := tr.Inbox(p)
	if err != nil {
		return err
	}
	var batch []wire.Envelope
	for got := 0; got < n; {
		select {
		case <-in.Ready():
		case <-ctx.Done():
			return fmt.Errorf("%d of %d connections up: %w", got, n, ctx.Err())
		}
		batch, _ = in.Take(batch, 0)
		for _, env := range batch {
			if env.Frame.Kind != wire.KindHeartbeat {
				return fmt.Errorf("%s: %s before the run started", env.Chan, env.Frame)
			}
		}
		got += len(batch)
	}
	return nil
}

// closeTCP stops the transport. The *transport.ShutdownError it may
// return lists what was left in flight (the last acks of a run, the
// frames of a failure): the book decided the run's end, and every item
// it counts was taken by the core, so nothing there is the run's.
func closeTCP(tr *transport.TCP) { _ = tr.Close() }

// fatalError is the run's error for a transport error that stops a
// channel, naming the edges the channel carries; nil for one the
// transport recovers from by itself (a failed dial, retried).
func fatalError(g *dataflow.Graph, err error) error {
	if !errors.Is(err, wire.ErrProtocol) && !errors.Is(err, transport.ErrRejected) {
		return nil
	}
	var ce *transport.ConnError
	if !errors.As(err, &ce) || ce.Chan == (spec.Channel{}) {
		return fmt.Errorf("run: the transport: %w", err)
	}
	return fmt.Errorf("run: %s: %w", edgesOf(g, ce.Chan), err)
}

// edgesOf names the edges channel ch carries messages of: those between
// its ends, either way.
func edgesOf(g *dataflow.Graph, ch spec.Channel) string {
	var names []string
	for e, ed := range g.Edges {
		if joins(ed, ch) {
			names = append(names, g.EdgeName(e))
		}
	}
	if len(names) == 0 {
		return ch.String()
	}
	return strings.Join(names, ", ")
}

// joins reports whether edge ed joins the ends of ch, either way.
func joins(ed dataflow.EdgeSpec, ch spec.Channel) bool {
	a, b := procOf(ed.From), procOf(ed.To)
	return a == ch.From && b == ch.To || a == ch.To && b == ch.From
}
