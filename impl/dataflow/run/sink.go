package run

import (
	"errors"
	"fmt"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
)

// The runtimes' side of an external sink (Options.Sink, a sink.Driver):
// both runtimes call these from the steps they share (took, partDone,
// the run's end), so that the sink node hands each record it processes
// to the driver, pre-commits at its barrier, and the coordinator (the
// book) notifies the driver when a snapshot is complete.

// checkSink checks, at a run's start, that the driver was started at the
// sink's snapshot (sink.Driver.Start with the complete snapshots).
func checkSink(c *dataflow.Cluster, opt Options) error {
	if opt.Sink == nil {
		return nil
	}
	if want := c.Sink().Snap() + 1; opt.Sink.Open() != want {
		return fmt.Errorf("run: the sink's driver has snapshot %d's transaction open, the sink is at snapshot %d: start it with the complete snapshots (sink.Driver.Start)", opt.Sink.Open(), want-1)
	}
	return nil
}

// sinkStep hands the sink node's step to the driver: a record it took
// goes into the open transaction; its recording pre-commits. A sink
// killed or failing fails the run.
func sinkStep(b *book, g *dataflow.Graph, i int, nd *dataflow.Node, it dataflow.Item, st dataflow.Step) {
	d := b.opt.Sink
	if d == nil || g.Nodes[i].Kind != dataflow.Sink {
		return
	}
	var err error
	if !it.Barrier {
		err = d.Take(sink.Record{Src: it.Src, I: it.I, Val: it.Val}, b.emittedAt(it))
	}
	if err == nil && st.Recorded {
		err = d.Barrier(nd.Snap())
	}
	if err != nil {
		b.sinkFailed(err)
	}
}

// emittedAt is when record r was emitted in this run (zero if before).
func (b *book) emittedAt(r dataflow.Item) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if at := b.emitAt[r.Src][r.I]; at > 0 {
		return b.start.Add(time.Duration(at))
	}
	return time.Time{}
}

// sinkFailed ends the run as failed: the sink died (killed between
// pre-commit and commit, or its store failed).
func (b *book) sinkFailed(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.res.Failed = true
	if b.sinkErr == nil {
		b.sinkErr = err
	}
}

// sinkPartDone reports whether node i's part of snapshot snap may count:
// the sink's only once its driver pre-committed snap's transaction.
func (b *book) sinkPartDone(i, snap int) bool {
	return b.opt.Sink == nil || b.g.Nodes[i].Kind != dataflow.Sink || b.opt.Sink.PreCommitted() >= snap
}

// completeSink is the coordinator's notification that snapshot snap is
// complete. The caller holds b.mu; the driver commits on its own
// goroutine.
func (b *book) completeSink(snap int) {
	if b.opt.Sink != nil {
		b.opt.Sink.Complete(snap)
	}
}

// endSink is the sink at the run's end: a run that went through commits
// the rest (sink.Driver.Finish); a failed one stops its committer as a
// process's end would, leaving the rest to the restore's recovery. An
// injected kill is the run's failure, not an error; a store's error is.
func (b *book) endSink(err error) error {
	d := b.opt.Sink
	if d == nil {
		return err
	}
	b.mu.Lock()
	failed, serr := b.res.Failed, b.sinkErr
	b.mu.Unlock()
	if err != nil || failed {
		d.Halt()
		return sinkFailure(err, serr)
	}
	if ferr := d.Finish(); ferr != nil {
		return fmt.Errorf("run: the sink: %w", ferr)
	}
	return nil
}

// sinkFailure is a failed run's error: the run's err, else the sink's
// store error serr; an injected kill (sink.ErrKilled) is the run's
// failure, not an error.
func sinkFailure(err, serr error) error {
	if err == nil && serr != nil && !errors.Is(serr, sink.ErrKilled) {
		return fmt.Errorf("run: the sink: %w", serr)
	}
	return err
}
