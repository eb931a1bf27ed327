package run

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
)

// Options says how to run.
type Options struct {
	// InjectAt: the sources inject the first snapshot's barrier once this
	// many records have been emitted in the run (negative: no snapshot).
	InjectAt int
	// Every and Interval make snapshots successive (the graph must be
	// Successive): once snapshot k completed, the sources inject k+1 when
	// Every more records have been emitted since they injected k (Every >
	// 0), or Interval after they injected k (Interval > 0), whichever
	// comes first (snapshots go on while records are in the graph). Both
	// 0: one snapshot. A restored cluster starts from
	// its snapshot's id, counting from the run's start.
	Every    int
	Interval time.Duration
	// StopTheWorld is the baseline: when a snapshot is due the sources
	// stop emitting, the buffers drain, then the sources inject (the
	// barriers cross empty buffers: no channel state, no alignment wait),
	// and they emit again once the snapshot completed.
	StopTheWorld bool
	// FailAfter: once FailFrom snapshots completed in the run (0: one)
	// and the sink has processed this many more records, the run stops as
	// if every node failed (negative: no failure).
	FailAfter int
	FailFrom  int
	// Throttle: the time node i spends on each record it processes (a slow
	// stage: its inputs fill up and backpressure reaches the sources), or
	// at a source after each record it emits (a paced source: below the
	// pipeline's capacity, its buffers stay short).
	Throttle map[int]time.Duration
	// Timeout bounds the run (0: one minute).
	Timeout time.Duration
	// AlignedTimeout: in a graph of dataflow.Adaptive, how long a snapshot
	// runs aligned (from its injection) before a node still aligning, or
	// whose barrier still waits behind a full output buffer, switches it
	// to unaligned (adaptive.go); 0: at once.
	AlignedTimeout time.Duration
	// Sink, if set, is the external sink the sink node writes to (sink.go):
	// started (Start) at the sink's snapshot before the run.
	Sink *sink.Driver
}

// Checkpoint is a completed snapshot and what it took.
type Checkpoint struct {
	Snapshot *dataflow.Snapshot
	// Injected is from the run's start to the first source injecting it;
	// Took from then to its completion (the checkpoint duration).
	Injected, Took time.Duration
	// Align is, per node, the time from its first barrier of the snapshot
	// to its recording (0 for the sources: they record when they inject).
	Align []time.Duration
}

// Result is what a run did.
type Result struct {
	Failed bool // stopped by FailAfter
	// Checkpoints are the completed snapshots, in the order of their ids.
	Checkpoints []Checkpoint
	// Latency is, for each record the sink processed that was emitted in
	// this run, the time from its source emitting it to the sink taking it.
	Latency []time.Duration
	// Paused is how long the sources were stopped (StopTheWorld).
	Paused time.Duration
	// MaxQueue is the most records each edge's buffer held after a step
	// of its sender (at most Cap but for back-edges and restored channel
	// state).
	MaxQueue []int
	// Steps taken (records moved) and the run's wall time.
	Steps   int
	Elapsed time.Duration
}

// Latest is the last completed snapshot, nil if none completed.
func (r *Result) Latest() *dataflow.Snapshot {
	if len(r.Checkpoints) == 0 {
		return nil
	}
	return r.Checkpoints[len(r.Checkpoints)-1].Snapshot
}

// book is a run's bookkeeping, shared by the node goroutines of either
// runtime (in memory, TCP): when snapshots are due, which completed and
// what they took, records' latencies, the failure. Its methods lock it.
type book struct {
	mu    sync.Mutex
	g     *dataflow.Graph
	opt   Options
	start time.Time
	res   *Result

	total   int       // every source's budget
	emitted int       // records emitted in this run
	emitAt  [][]int64 // per source, per record: when emitted (ns since start)
	target  int       // the latest snapshot due: sources inject up to it
	done    int       // the latest snapshot completed (the restored one at first)
	lastInj int       // records emitted when the latest was injected
	injAt   time.Time // when the latest was injected
	parts   []*dataflow.Part
	nParts  int
	noted   []atomic.Int64 // per node, the snapshot whose part needs no noting any more (partDone)
	bar     []time.Time    // per node, its first barrier of its current snapshot
	barSnap []int
	align   []time.Duration

	paused   bool // StopTheWorld: the sources wait
	drained  bool // StopTheWorld: the buffers emptied, inject
	pausedAt time.Time

	sinkAfter int   // records at the sink since FailFrom snapshots completed
	sinkErr   error // the external sink's failure (sink.go)
}

func newBook(c *dataflow.Cluster, opt Options) *book {
	n := len(c.Nodes)
	b := &book{g: c.G, opt: opt, start: time.Now(), res: &Result{MaxQueue: make([]int, len(c.G.Edges))},
		emitAt: make([][]int64, n), noted: make([]atomic.Int64, n), bar: make([]time.Time, n), barSnap: make([]int, n), align: make([]time.Duration, n)}
	for i, nd := range c.Nodes {
		b.total += c.G.Nodes[i].Budget
		b.emitAt[i] = make([]int64, c.G.Nodes[i].Budget+1)
		b.done = max(b.done, nd.Snap())
	}
	b.target = b.done
	b.injAt = b.start
	b.due()
	return b
}

// due decides whether the next snapshot is due, and if so makes it the
// target. The caller holds b.mu.
func (b *book) due() {
	if b.target != b.done || b.paused || !b.nextDue() {
		return // the latest is not complete yet, or the next not due
	}
	b.target++
	b.lastInj, b.injAt = b.emitted, time.Now()
	b.parts, b.nParts = make([]*dataflow.Part, len(b.g.Nodes)), 0
	if b.opt.StopTheWorld {
		b.paused, b.drained, b.pausedAt = true, false, b.injAt
	}
}

// nextDue reports whether the snapshot after the latest is due: the
// first once InjectAt records were emitted, the next ones (Successive)
// once Every more records were or Interval passed.
func (b *book) nextDue() bool {
	switch {
	case b.target == 0:
		return b.opt.InjectAt >= 0 && b.emitted >= b.opt.InjectAt
	case !b.g.Successive:
		return false
	}
	return b.opt.Every > 0 && b.emitted-b.lastInj >= b.opt.Every ||
		b.opt.Interval > 0 && time.Since(b.injAt) >= b.opt.Interval
}

// tick re-evaluates a due Interval.
func (b *book) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.due()
}

// mayEmit reports whether the sources may emit (not paused).
func (b *book) mayEmit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.paused
}

// needsDrain reports whether a stop-the-world snapshot waits for the
// buffers to empty; setDrained says they did.
func (b *book) needsDrain() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused && !b.drained
}

func (b *book) setDrained() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drained = true
}

// mayInject reports whether a source now in snapshot snap injects the
// next one.
func (b *book) mayInject(snap int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return snap < b.target && (!b.opt.StopTheWorld || b.drained)
}

// emit notes that source src emitted record i.
func (b *book) emit(src, i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.emitted++
	b.res.Steps++
	b.emitAt[src][i] = int64(time.Since(b.start))
	b.due()
}

// step notes a record taken by node i (not the sink: see sink).
func (b *book) step() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.res.Steps++
}

// sink notes that the sink took record r: its latency, the failure.
func (b *book) sink(r dataflow.Item) {
	now := int64(time.Since(b.start))
	b.mu.Lock()
	defer b.mu.Unlock()
	b.res.Steps++
	if at := b.emitAt[r.Src][r.I]; at > 0 {
		b.res.Latency = append(b.res.Latency, time.Duration(now-at))
	}
	if len(b.res.Checkpoints) >= max(b.opt.FailFrom, 1) {
		b.sinkAfter++
		if b.opt.FailAfter >= 0 && b.sinkAfter >= b.opt.FailAfter {
			b.res.Failed = true
		}
	}
}

// barrier notes that node i took a barrier of snapshot snap.
func (b *book) barrier(i, snap int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.barSnap[i] != snap {
		b.barSnap[i], b.bar[i] = snap, time.Now()
	}
}

// recorded notes that node i recorded its state (from its first barrier:
// its alignment; 0 for a source).
func (b *book) recorded(i, snap int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.align[i] = 0
	if b.barSnap[i] == snap {
		b.align[i] = time.Since(b.bar[i])
	}
}

// partDone notes node nd's part, if it is complete (its Part is final
// then) and not noted yet, and the snapshot's completion when it is the
// last. Nodes call it after every step: it copies the part (Part) only
// the first time, and takes the book's lock only until the node's part
// of its snapshot is noted (or needs no noting: an earlier snapshot, or
// one complete), as noted[i] says.
func (b *book) partDone(i int, nd *dataflow.Node) {
	snap := nd.Snap()
	if b.noted[i].Load() == int64(snap) || !nd.Done() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.sinkPartDone(i, snap) {
		return // not noted: the sink has not pre-committed; asked again after its next step
	}
	b.noted[i].Store(int64(snap))
	if snap != b.target || b.target == b.done || b.parts[i] != nil {
		return
	}
	b.parts[i] = nd.Part()
	b.nParts++
	if b.nParts == len(b.parts) {
		b.completed()
	}
}

// completed notes the target snapshot's completion, every part noted:
// its checkpoint, the sink's commit, the next snapshot's due time. The
// caller holds b.mu.
func (b *book) completed() {
	now := time.Now()
	b.res.Checkpoints = append(b.res.Checkpoints, Checkpoint{Snapshot: &dataflow.Snapshot{Parts: b.parts},
		Injected: b.injAt.Sub(b.start), Took: now.Sub(b.injAt), Align: append([]time.Duration(nil), b.align...)})
	b.done = b.target
	b.completeSink(b.done)
	if b.paused {
		b.paused = false
		b.res.Paused += now.Sub(b.pausedAt)
	}
	b.due()
}

// failed reports whether the run's failure came.
func (b *book) failed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res.Failed
}

// settled reports whether every snapshot due completed: a run ends
// when it is settled and every record is through. (Snapshots fall due on
// emits, completions and the runtime's ticks, not here: a run that is
// through ends between an Interval's snapshots.)
func (b *book) settled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.target == b.done
}

// pendingSnapshot says which snapshot is incomplete, if one is.
func (b *book) pendingSnapshot() (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.target, b.target != b.done
}

// watch is a runtime's coordinator: every 200 µs it lets an Interval's
// snapshot fall due, tells a stop-the-world snapshot when the buffers
// drained, and ends the run at the failure, or once every record is
// through (drained) and every snapshot due completed; or at ctx's end
// (an error saying what is pending), or at an error from a node (errc).
// It calls halt, which stops the node goroutines and waits for them,
// before it returns.
func (b *book) watch(ctx context.Context, c *dataflow.Cluster, drained func() bool, errc <-chan error, halt func()) error {
	defer halt()
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			halt()
			return fmt.Errorf("run: %w after %d steps: %s", ctx.Err(), b.res.Steps, pending(c, b))
		case err := <-errc:
			return err
		case <-tick.C:
			if b.over(drained) {
				return nil
			}
		}
	}
}

// over is a tick of watch: it lets an Interval's snapshot fall due and
// tells a stop-the-world snapshot when the buffers drained; it reports
// whether the run is over (the failure came, or every record is through
// and every snapshot due completed).
func (b *book) over(drained func() bool) bool {
	b.tick()
	if b.needsDrain() && drained() {
		b.setDrained()
	}
	return b.failed() || drained() && b.settled()
}
