// Package run runs a dataflow.Cluster: in memory (Run: one goroutine per
// node, the nodes' output buffers as the edges, a receiver taking the
// head of its sender's buffer under both nodes' locks) or over loopback
// TCP (RunTCP: the edges ride one impl/transport TCP, a connection per
// direction between two nodes joined by an edge, its frames
// acknowledged and resumed after a cut). Either has throttled stages to
// produce backpressure, snapshots injected at a chosen point and then
// every so many records or so much time (successive snapshots), the
// stop-the-world baseline, and a failure after a snapshot completed. It
// is the concurrent driver of the sans-IO core; the core decides every
// step.
//
// In order: build the graph and its logics (impl/dataflow/pipeline),
// NewCluster, Run or RunTCP with Options; to recover, RestoreCluster from
// a Checkpoint's Snapshot (Result.Latest: the last complete one) with
// fresh logics and run again.
package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
)

type runner struct {
	c  *dataflow.Cluster
	b  *book
	mu []sync.Mutex
}

// Run drives c until every source emitted its budget, every buffer is
// empty and every snapshot due completed, or until the failure of
// opt.FailAfter.
func Run(ctx context.Context, c *dataflow.Cluster, opt Options) (*Result, error) {
	ctx, cancel, err := begin(ctx, c, &opt)
	if err != nil {
		return nil, err
	}
	defer cancel()
	n := len(c.Nodes)
	r := &runner{c: c, b: newBook(c, opt), mu: make([]sync.Mutex, n)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.node(i, stop)
		}()
	}
	err = r.b.endSink(r.b.watch(ctx, c, r.drained, nil, haltOnce(stop, &wg)))
	r.b.res.Elapsed = time.Since(r.b.start)
	return r.b.res, err
}

// begin is how a run starts, in memory (Run) or over TCP (RunTCP): the
// default timeout (a minute), the sink's driver checked (checkSink), and
// the run's context, cancelled at that timeout.
func begin(ctx context.Context, c *dataflow.Cluster, opt *Options) (context.Context, context.CancelFunc, error) {
	if opt.Timeout == 0 {
		opt.Timeout = time.Minute
	}
	if err := checkSink(c, *opt); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	return ctx, cancel, nil
}

// haltOnce returns a function that stops the node goroutines (closing
// stop) and waits for them, the first time it is called.
func haltOnce(stop chan struct{}, wg *sync.WaitGroup) func() {
	var once sync.Once
	return func() {
		once.Do(func() { close(stop) })
		wg.Wait()
	}
}

// drained: every source emitted its budget or is paused, and every buffer
// is empty.
func (r *runner) drained() bool {
	for i := range r.mu {
		r.mu[i].Lock()
	}
	defer func() {
		for i := range r.mu {
			r.mu[i].Unlock()
		}
	}()
	return idle(r.c, r.b.mayEmit())
}

// idle reports whether nothing is left to move: no buffer holds an item
// and, if the sources may emit, they emitted their budgets.
func idle(c *dataflow.Cluster, emitting bool) bool {
	g := c.G
	for i, nd := range c.Nodes {
		if emitting && g.Nodes[i].Kind == dataflow.Source && nd.Emitted() < g.Nodes[i].Budget {
			return false
		}
		for _, e := range g.Out(i) {
			if len(nd.Queue(e)) > 0 {
				return false
			}
		}
	}
	return true
}

// node is node i's goroutine: a source emits (and injects when due), the
// others take the heads of their inputs in turn.
func (r *runner) node(i int, stop <-chan struct{}) {
	idle := 0
	for !stopped(stop) {
		if r.step(i) {
			idle = 0
			continue
		}
		idle++
		if idle > 10 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// step is a round of node i: a source emits or injects, another node
// takes the head of each input it can. It reports whether i moved.
func (r *runner) step(i int) bool {
	g := r.c.G
	if g.Nodes[i].Kind == dataflow.Source {
		emitted := r.c.Nodes[i].Emitted() // only this goroutine emits
		moved := r.timer(i)               // its barrier may wait behind its full buffer
		moved = r.source(i) || moved
		if moved && r.c.Nodes[i].Emitted() > emitted {
			pace(r.b, i) // outside its lock: its receiver takes meanwhile
		}
		return moved
	}
	return r.operator(i)
}

// operator is a round of node i that is not a source: the head of each
// input it can take, its timer checked before each (a slow stage's round
// lasts a record's throttle per input: a timer checked once a round
// would switch up to a round late).
func (r *runner) operator(i int) bool {
	g := r.c.G
	moved := false
	for _, e := range g.In(i) {
		moved = r.timer(i) || moved
		if r.take(i, e) {
			moved = true
			if d := r.b.opt.Throttle[i]; d > 0 {
				time.Sleep(d)
			}
		}
	}
	return moved
}

// timer has node i time out, under its lock, if its alignment's timer
// went off (adaptive.go).
func (r *runner) timer(i int) bool {
	nd := r.c.Nodes[i]
	r.mu[i].Lock()
	defer r.mu[i].Unlock()
	return r.b.timeoutDue(nd) && timeOut(r.b, i, nd)
}

func (r *runner) source(i int) bool {
	nd := r.c.Nodes[i]
	r.mu[i].Lock()
	defer r.mu[i].Unlock()
	if inject(r.b, i, nd) {
		return true
	}
	if !r.b.mayEmit() {
		return false
	}
	if _, err := nd.Emit(); err == nil {
		noteQueues(r.b, r.c.G, i, nd)
		r.b.emit(i, nd.Emitted())
		return true
	}
	return false
}

// pace has source i wait its Throttle after a record it emitted (a paced
// source).
func pace(b *book, i int) {
	if d := b.opt.Throttle[i]; d > 0 {
		time.Sleep(d)
	}
}

// inject has source i inject its next snapshot if it is due, and notes
// it: its part is complete at once.
func inject(b *book, i int, nd *dataflow.Node) bool {
	if !b.mayInject(nd.Snap()) {
		return false
	}
	if _, err := nd.Inject(); err != nil {
		return false
	}
	b.recorded(i, nd.Snap())
	b.partDone(i, nd)
	return true
}

// take hands the head of edge e to node i, under both nodes' locks (taken
// in index order).
func (r *runner) take(i, e int) bool {
	from := r.c.G.Edges[e].From
	a, b := min(i, from), max(i, from)
	r.mu[a].Lock()
	r.mu[b].Lock()
	defer r.mu[a].Unlock()
	defer r.mu[b].Unlock()
	it, ok := r.c.Nodes[from].Head(e)
	if !ok {
		return false
	}
	want := dataflow.ActProcess
	if it.Barrier {
		want = dataflow.ActRecvBarrier
	}
	st, err := r.c.Take(e, want)
	if err != nil {
		return false
	}
	took(r.b, r.c.G, i, r.c.Nodes[i], it, st)
	return true
}

// took notes the step st of node i, which took item it.
func took(b *book, g *dataflow.Graph, i int, nd *dataflow.Node, it dataflow.Item, st dataflow.Step) {
	switch {
	case it.Barrier:
		b.barrier(i, it.Snap)
	case g.Nodes[i].Kind == dataflow.Sink:
		b.sink(it)
	default:
		b.step()
	}
	noteQueues(b, g, i, nd)
	if st.Recorded {
		b.recorded(i, nd.Snap())
	}
	sinkStep(b, g, i, nd, it, st)
	b.partDone(i, nd)
}

// noteQueues records the lengths of node i's output buffers (in records,
// barriers not counted), when one may exceed its longest so far. Only
// node i's goroutine notes its outputs (in memory it holds node i), so
// their entries of MaxQueue need no lock, and the run's end (the node
// goroutines stopped) orders them before the result is read.
func noteQueues(b *book, g *dataflow.Graph, i int, nd *dataflow.Node) {
	for _, e := range g.Out(i) {
		q := nd.Queue(e)
		if len(q) <= b.res.MaxQueue[e] {
			continue // holds no more records than its longest
		}
		recs := 0
		for _, it := range q {
			if !it.Barrier {
				recs++
			}
		}
		b.res.MaxQueue[e] = max(b.res.MaxQueue[e], recs)
	}
}

// pending says what keeps a run from terminating: the sources with
// records left, the buffers holding items, the nodes whose part of the
// pending snapshot is not complete. The node goroutines must have stopped.
func pending(c *dataflow.Cluster, b *book) string {
	var parts []string
	snap, open := b.pendingSnapshot()
	for i := range c.Nodes {
		parts = pendingAt(c, i, snap, open, parts)
	}
	if len(parts) == 0 {
		return "nothing pending"
	}
	return strings.Join(parts, "; ")
}

// pendingAt appends what keeps node i from being through: records to
// emit, items in its buffers, its part of the open snapshot snap.
func pendingAt(c *dataflow.Cluster, i, snap int, open bool, parts []string) []string {
	g, nd := c.G, c.Nodes[i]
	name := g.Nodes[i].Name
	if left := g.Nodes[i].Budget - nd.Emitted(); left > 0 {
		parts = append(parts, fmt.Sprintf("%s has %d records to emit", name, left))
	}
	for _, e := range g.Out(i) {
		if q := len(nd.Queue(e)); q > 0 {
			parts = append(parts, fmt.Sprintf("%s holds %d items", g.EdgeName(e), q))
		}
	}
	if open && (nd.Snap() < snap || !nd.Done()) {
		parts = append(parts, fmt.Sprintf("%s has not completed its part of snapshot %d", name, snap))
	}
	return parts
}
