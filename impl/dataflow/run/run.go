// Package run runs a dataflow.Cluster in memory: one goroutine per node,
// the nodes' output buffers as the edges (a receiver takes the head of
// its sender's buffer under both nodes' locks), a throttled stage to
// produce backpressure, one snapshot injected at a chosen point, and a
// failure after it completed. It is the concurrent driver of the sans-IO
// core; the core decides every step.
//
// In order: build the graph and its logics (impl/dataflow/pipeline),
// NewCluster, Run with Options; to recover, RestoreCluster from the
// Result's Snapshot with fresh logics and Run again.
package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// Options says how to run.
type Options struct {
	// InjectAt: the sources inject the snapshot's barrier once this many
	// records have been emitted in all (negative: no snapshot). Ignored
	// when the cluster was restored (its snapshot is taken).
	InjectAt int
	// FailAfter: once the snapshot completed and the sink has processed
	// this many more records, the run stops as if every node failed
	// (negative: no failure).
	FailAfter int
	// Throttle: the time node i spends on each record it processes (a slow
	// stage: its inputs fill up and backpressure reaches the sources).
	Throttle map[int]time.Duration
	// Timeout bounds the run (0: one minute).
	Timeout time.Duration
}

// Result is what a run did.
type Result struct {
	Failed    bool               // stopped by FailAfter
	Snapshot  *dataflow.Snapshot // the completed snapshot, if one was taken
	Injected  time.Duration      // from the start to the first barrier injected
	Completed time.Duration      // from the first injection to completion
	// Align is, per node, the time from its first barrier to its
	// recording (0 for the sources: they record when they inject).
	Align []time.Duration
	// MaxQueue is the most records each edge's buffer held after a step
	// of its sender (a barrier may join Cap records) (at most Cap but for back-edges and restored channel state).
	MaxQueue []int
	// Steps taken (records moved) and the run's wall time.
	Steps   int
	Elapsed time.Duration
}

type runner struct {
	c     *dataflow.Cluster
	opt   Options
	mu    []sync.Mutex
	start time.Time

	smu       sync.Mutex // guards the fields below
	emitted   int
	injected  bool
	injAt     time.Time
	firstBar  []time.Time
	res       *Result
	sinkAfter int
	parts     []*dataflow.Part // each node's final part, once done
	total     int              // every source's budget
	nParts    int
}

// Run drives c until every source emitted its budget and every buffer is
// empty (and the snapshot, if one was injected, completed), or until the
// failure of opt.FailAfter.
func Run(ctx context.Context, c *dataflow.Cluster, opt Options) (*Result, error) {
	if opt.Timeout == 0 {
		opt.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	n := len(c.Nodes)
	r := &runner{c: c, opt: opt, mu: make([]sync.Mutex, n), start: time.Now(),
		firstBar: make([]time.Time, n), parts: make([]*dataflow.Part, n), res: &Result{Align: make([]time.Duration, n)}}
	r.res.MaxQueue = make([]int, len(c.G.Edges))
	for i, nd := range c.Nodes {
		r.total += c.G.Nodes[i].Budget
		if nd.Recorded() {
			r.injected = true // restored: the snapshot is taken
		}
	}
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.node(i, stop)
		}()
	}
	var err error
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			halt()
			wg.Wait()
			err = fmt.Errorf("run: %w after %d steps: %s", ctx.Err(), r.steps(), r.pending())
			break loop
		case <-tick.C:
			if r.failed() || r.terminated() {
				break loop
			}
		}
	}
	halt()
	wg.Wait()
	r.res.Elapsed = time.Since(r.start)
	return r.res, err
}

func (r *runner) steps() int {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.res.Steps
}

func (r *runner) failed() bool {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.res.Failed
}

// terminated: every source emitted its budget, every buffer is empty and
// the snapshot, if injected, completed.
func (r *runner) terminated() bool {
	for i := range r.mu {
		r.mu[i].Lock()
	}
	defer func() {
		for i := range r.mu {
			r.mu[i].Unlock()
		}
	}()
	g := r.c.G
	for i, nd := range r.c.Nodes {
		if g.Nodes[i].Kind == dataflow.Source && nd.Emitted() < g.Nodes[i].Budget {
			return false
		}
		for _, e := range g.Out(i) {
			if len(nd.Queue(e)) > 0 {
				return false
			}
		}
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	if !r.injected {
		return r.opt.InjectAt < 0 || r.opt.InjectAt > r.total
	}
	return r.c.Complete()
}

// node is node i's goroutine: a source emits (and injects when due), the
// others take the heads of their inputs in turn.
func (r *runner) node(i int, stop <-chan struct{}) {
	g := r.c.G
	nd := r.c.Nodes[i]
	idle := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		moved := false
		if g.Nodes[i].Kind == dataflow.Source {
			moved = r.source(i, nd)
		} else {
			for _, e := range g.In(i) {
				if r.take(i, e) {
					moved = true
					if d := r.opt.Throttle[i]; d > 0 {
						time.Sleep(d)
					}
				}
			}
		}
		if moved {
			idle = 0
			continue
		}
		idle++
		if idle > 10 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

func (r *runner) source(i int, nd *dataflow.Node) bool {
	r.smu.Lock()
	due := !r.injected && r.opt.InjectAt >= 0 && r.emitted >= r.opt.InjectAt
	if due {
		r.injected, r.injAt = true, time.Now()
		r.res.Injected = r.injAt.Sub(r.start)
	}
	injectNow := r.injected && r.opt.InjectAt >= 0
	r.smu.Unlock()
	r.mu[i].Lock()
	defer r.mu[i].Unlock()
	if injectNow && !nd.Recorded() {
		if _, err := nd.Inject(); err == nil {
			r.smu.Lock()
			r.partDone(i, nd)
			r.smu.Unlock()
			return true
		}
	}
	if _, err := nd.Emit(); err == nil {
		r.smu.Lock()
		r.noteQueues(i)
		r.emitted++
		r.res.Steps++
		r.smu.Unlock()
		return true
	}
	return false
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
	nd := r.c.Nodes[i]
	if it.Barrier {
		r.smu.Lock()
		if r.firstBar[i].IsZero() {
			r.firstBar[i] = time.Now()
		}
		r.smu.Unlock()
	}
	want := dataflow.ActProcess
	if it.Barrier {
		want = dataflow.ActRecvBarrier
	}
	st, err := r.c.Take(e, want)
	if err != nil {
		return false
	}
	r.smu.Lock()
	defer r.smu.Unlock()
	if !it.Barrier {
		r.res.Steps++
	}
	r.noteQueues(i)
	if st.Recorded {
		r.res.Align[i] = time.Since(r.firstBar[i])
	}
	if r.c.G.Nodes[i].Kind == dataflow.Sink && !it.Barrier && r.res.Snapshot != nil {
		r.sinkAfter++
		if r.opt.FailAfter >= 0 && r.sinkAfter >= r.opt.FailAfter {
			r.res.Failed = true
		}
	}
	r.partDone(i, nd)
	return true
}

// partDone notes that node i completed its part of the snapshot (its
// Part is final then), and the snapshot's completion when it is the last.
// The caller holds node i's lock and r.smu.
func (r *runner) partDone(i int, nd *dataflow.Node) {
	if r.parts[i] != nil || !nd.Done() || r.res.Snapshot != nil || r.injAt.IsZero() {
		return
	}
	r.parts[i] = nd.Part()
	r.nParts++
	if r.nParts == len(r.parts) {
		r.res.Completed = time.Since(r.injAt)
		r.res.Snapshot = &dataflow.Snapshot{Parts: r.parts}
	}
}

// noteQueues records the lengths of node i's output buffers. The caller
// holds node i's lock and r.smu.
func (r *runner) noteQueues(i int) {
	for _, e := range r.c.G.Out(i) {
		recs := 0
		for _, it := range r.c.Nodes[i].Queue(e) {
			if !it.Barrier {
				recs++
			}
		}
		r.res.MaxQueue[e] = max(r.res.MaxQueue[e], recs)
	}
}

// pending says what keeps a run from terminating: the sources with
// records left, the buffers holding items, the nodes whose part of the
// snapshot is not complete. The node goroutines must have stopped.
func (r *runner) pending() string {
	g := r.c.G
	var parts []string
	for i, nd := range r.c.Nodes {
		name := g.Nodes[i].Name
		if left := g.Nodes[i].Budget - nd.Emitted(); left > 0 {
			parts = append(parts, fmt.Sprintf("%s has %d records to emit", name, left))
		}
		for _, e := range g.Out(i) {
			if q := len(nd.Queue(e)); q > 0 {
				parts = append(parts, fmt.Sprintf("%s holds %d items", g.EdgeName(e), q))
			}
		}
		if r.injected && !nd.Done() {
			parts = append(parts, fmt.Sprintf("%s has not completed its part of the snapshot", name))
		}
	}
	if len(parts) == 0 {
		return "nothing pending"
	}
	return strings.Join(parts, "; ")
}
