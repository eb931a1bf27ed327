package sink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Guarantee is what a Driver promises the output.
type Guarantee uint8

// The guarantees.
const (
	// ExactlyOnce: two-phase commit, a transaction per snapshot.
	ExactlyOnce Guarantee = iota
	// AtLeastOnce: records written straight into the output (Append), in
	// batches; after a restore the replayed ones are there twice.
	AtLeastOnce
)

// Driver is the two-phase-commit sink function over a Store, in the
// shape of Flink's TwoPhaseCommitSinkFunction: the sink node calls Take
// for each record it processes and Barrier when it records its part of a
// snapshot; the coordinator calls Complete when a snapshot is complete;
// a restore calls Start with the complete snapshots. Commits run on a
// goroutine of the Driver's (the coordinator's notification does not
// wait for the database). Its methods may be called from any goroutine.
type Driver struct {
	st    Store
	g     Guarantee
	batch int
	ctx   context.Context

	mu   sync.Mutex // the sink side: the open transaction
	open int        // its snapshot (0: not started)
	pre  int        // the latest snapshot pre-committed
	buf  []Record   // its records not yet written
	at   []time.Time
	emit []time.Time // its records' emit times (latency)

	cmu      sync.Mutex // the commit side
	prepared []prepared // pre-committed, not committed, in snapshot order
	target   int        // the latest snapshot complete
	wake     chan struct{}
	done     chan struct{} // the committer stopped
	err      error         // the first failure: the sink is dead
	killAt   int
	latency  []time.Duration
	lost     []int // the complete snapshots whose transaction the store aborted
	stopping bool
	trace    *Trace // nil: not traced
}

// SetTrace makes the two-phase-commit sink record its steps in t (call
// before Start; one Trace for every incarnation of a run).
func (d *Driver) SetTrace(t *Trace) { d.trace = t }

// prepared is a pre-committed transaction and its records' emit times.
type prepared struct {
	snap int
	emit []time.Time
}

// ErrKilled is the failure injected by KillAfterPreCommit.
var ErrKilled = errors.New("sink: killed between pre-commit and commit")

// NewDriver returns the sink function over st; batch is how many
// records it writes at a time (0: 512).
func NewDriver(ctx context.Context, st Store, g Guarantee, batch int) *Driver {
	if batch <= 0 {
		batch = 512
	}
	return &Driver{st: st, g: g, batch: batch, ctx: ctx}
}

// KillAfterPreCommit makes the sink die right after it pre-commits
// snapshot snap (0: never): its store closed, nothing more written or
// committed; Err then says ErrKilled.
func (d *Driver) KillAfterPreCommit(snap int) { d.killAt = snap }

// Start starts the sink after a restore from the latest of complete (or
// at the run's start, complete empty): Recover (commit the pre-committed
// transactions of complete snapshots, abort the others), then open the
// next snapshot's transaction. At the start it refuses a job that has
// committed output already (it would be there twice).
func (d *Driver) Start(complete []int) (Recovery, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf, d.at = d.buf[:0], d.at[:0]
	if d.g == AtLeastOnce {
		d.open = slices.Max(append([]int{0}, complete...)) + 1
		d.pre = d.open - 1
		return Recovery{}, d.startCommitter()
	}
	if err := d.fresh(complete); err != nil {
		return Recovery{}, err
	}
	r, err := Recover(d.ctx, d.st, complete)
	if err != nil {
		return r, err
	}
	d.report(r.Lost...)
	d.open = slices.Max(append([]int{0}, complete...)) + 1
	d.pre = d.open - 1
	d.trace.start(complete, r, d.open)
	if err := d.st.Begin(d.ctx, d.open); err != nil {
		return r, err
	}
	return r, d.startCommitter()
}

// fresh checks, at a run's start (no complete snapshot), that the job
// has committed nothing yet.
func (d *Driver) fresh(complete []int) error {
	if len(complete) > 0 {
		return nil
	}
	t, err := d.st.Pending(d.ctx)
	if err != nil {
		return err
	}
	if len(t.Committed) > 0 {
		return fmt.Errorf("%w: %s already holds committed output of this job (snapshots %v): clear it or name another job", ErrState, d.st.Name(), t.Committed)
	}
	return nil
}

// startCommitter starts the goroutine that commits (once per Start).
func (d *Driver) startCommitter() error {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	if d.err != nil {
		return d.err
	}
	d.prepared, d.target, d.stopping = nil, 0, false
	d.wake, d.done = make(chan struct{}, 1), make(chan struct{})
	go d.committer(d.wake, d.done)
	return nil
}

// Take adds record r, emitted at emitted (zero: unknown), to the open
// transaction, writing a batch when it is full.
func (d *Driver) Take(r Record, emitted time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.Err(); err != nil {
		return err
	}
	d.buf = append(d.buf, r)
	d.at = append(d.at, emitted)
	if d.g != AtLeastOnce {
		d.trace.take(r)
	}
	if len(d.buf) < d.batch {
		return nil
	}
	return d.flush()
}

// flush writes the buffered records: into the open transaction, or (at
// least once) straight into the output. The caller holds d.mu.
func (d *Driver) flush() error {
	if len(d.buf) == 0 {
		return nil
	}
	var err error
	if d.g == AtLeastOnce {
		err = d.st.Append(d.ctx, d.buf)
		d.record(d.at)
	} else {
		err = d.st.Write(d.ctx, d.open, d.buf)
		d.emit = append(d.emit, d.at...)
	}
	d.buf, d.at = d.buf[:0], d.at[:0]
	return d.fail(err)
}

// Barrier mirrors the spec's PreCommit: the sink recorded its part of
// snapshot snap, so the open transaction (snap's) is pre-committed and
// the next one opened. It is not committed here: only once snap is
// complete (Complete).
func (d *Driver) Barrier(snap int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.Err(); err != nil {
		return err
	}
	if snap != d.open {
		return d.fail(fmt.Errorf("%w: the sink recorded snapshot %d with snapshot %d's transaction open", ErrState, snap, d.open))
	}
	if err := d.flush(); err != nil {
		return err
	}
	if d.g == AtLeastOnce {
		d.open, d.pre = snap+1, snap
		return nil
	}
	if err := d.drainTo(MaxCommittable - 1); err != nil {
		return err
	}
	if err := d.st.PreCommit(d.ctx, snap); err != nil {
		return d.fail(err)
	}
	d.trace.preCommit(snap)
	d.pre = snap
	d.prepare(snap)
	if snap == d.killAt {
		return d.kill()
	}
	d.open++
	return d.fail(d.st.Begin(d.ctx, d.open))
}

// prepare queues snap's pre-committed transaction for the committer.
func (d *Driver) prepare(snap int) {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	d.prepared = append(d.prepared, prepared{snap: snap, emit: d.emit})
	d.emit = nil
}

// kill is the injected failure: the store closed under the sink.
func (d *Driver) kill() error {
	err := d.fail(fmt.Errorf("%w (snapshot %d)", ErrKilled, d.killAt))
	d.Halt()
	_ = d.st.Close()
	return err
}

// Complete mirrors the coordinator's notification that snapshot snap is
// complete: the committer commits every pre-committed transaction up to
// snap (the spec's Commit). It does not wait.
func (d *Driver) Complete(snap int) {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	if d.g != AtLeastOnce {
		d.trace.complete(snap)
	}
	d.target = max(d.target, snap)
	if d.wake == nil || d.stopping {
		return // not started, or dead: the restore's recovery commits
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// committer commits what Complete allows until Halt.
func (d *Driver) committer(wake <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for range wake {
		for {
			p, ok := d.next()
			if !ok {
				break
			}
			err := d.st.Commit(d.ctx, p.snap)
			d.committed(p, err)
		}
	}
}

// next is the oldest pre-committed transaction of a complete snapshot.
func (d *Driver) next() (prepared, bool) {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	if d.err != nil || len(d.prepared) == 0 || d.prepared[0].snap > d.target {
		return prepared{}, false
	}
	return d.prepared[0], true
}

// committed notes the outcome of committing p: committed, lost (the
// store aborted it: reported, the sink goes on, as the spec's
// ReportLoss), or the sink's failure.
func (d *Driver) committed(p prepared, err error) {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	switch {
	case errors.Is(err, ErrLost):
		d.lost = append(d.lost, p.snap)
	case err != nil:
		d.setErr(err)
		return
	default:
		d.recordLocked(p.emit)
	}
	d.trace.committed(p.snap, err != nil)
	d.prepared = d.prepared[1:]
}

// report adds snapshots to the reported losses.
func (d *Driver) report(snaps ...int) {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	for _, s := range snaps {
		if !slices.Contains(d.lost, s) {
			d.lost = append(d.lost, s)
		}
	}
}

// Lost is the complete snapshots whose transaction the store aborted on
// its own before the sink committed it: their records are not in the
// output, and this says so (the spec's reportedLoss), never silently.
func (d *Driver) Lost() []int {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	return slices.Clone(d.lost)
}

// MaxCommittable bounds the pre-committed transactions of complete
// snapshots that wait for the committer: Barrier pre-commits the next
// one only when fewer wait. Commits run behind the coordinator's
// notifications; when the database commits slower than snapshots come
// (a loaded machine, snapshots every few milliseconds), the backlog
// would otherwise grow with the run, and PostgreSQL refuses a PREPARE
// beyond max_prepared_transactions (the server's, shared by every
// session). The wait is backpressure on the sink, as a slow stage's.
const MaxCommittable = 4

// Settle waits until the committer has committed (or found lost) every
// pre-committed transaction of a complete snapshot, or the sink failed.
func (d *Driver) Settle() error { return d.drainTo(0) }

// drainTo waits until at most n pre-committed transactions of complete
// snapshots wait for the committer (those of snapshots not complete
// yet are not its to commit), or the sink failed or is halted.
func (d *Driver) drainTo(n int) error {
	for {
		d.cmu.Lock()
		busy := d.err == nil && !d.stopping && d.committable() > n
		err := d.err
		d.cmu.Unlock()
		if !busy {
			return err
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// committable is how many pre-committed transactions the committer may
// commit now (their snapshots complete). The caller holds d.cmu.
func (d *Driver) committable() int {
	k := 0
	for k < len(d.prepared) && d.prepared[k].snap <= d.target {
		k++
	}
	return k
}

// record notes the latencies of records committed now.
func (d *Driver) record(emit []time.Time) {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	d.recordLocked(emit)
}

func (d *Driver) recordLocked(emit []time.Time) {
	now := time.Now()
	for _, t := range emit {
		if !t.IsZero() {
			d.latency = append(d.latency, now.Sub(t))
		}
	}
}

// fail makes err (if not nil) the sink's failure.
func (d *Driver) fail(err error) error {
	if err == nil {
		return nil
	}
	d.cmu.Lock()
	defer d.cmu.Unlock()
	d.setErr(err)
	return d.err
}

func (d *Driver) setErr(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Err is the sink's failure, nil while it is alive.
func (d *Driver) Err() error {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	return d.err
}

// Halt stops the committer without committing what is left: the sink's
// process ending (a failure). Start starts it again.
func (d *Driver) Halt() {
	d.cmu.Lock()
	if d.wake == nil || d.stopping {
		d.cmu.Unlock()
		return
	}
	d.stopping = true
	close(d.wake)
	done := d.done
	d.cmu.Unlock()
	<-done
}

// Finish is the end of the input (Flink's final checkpoint at the end of
// a bounded stream): the open transaction is pre-committed and committed
// as snapshot snap's (the one after the last), and Finish waits for every
// commit. The sink is then through.
func (d *Driver) Finish() error {
	d.mu.Lock()
	snap := d.open
	d.mu.Unlock()
	if err := d.Barrier(snap); err != nil {
		return err
	}
	d.Complete(snap)
	d.Halt()
	d.cmu.Lock()
	defer d.cmu.Unlock()
	if d.err == nil && len(d.prepared) > 0 {
		d.err = fmt.Errorf("%w: snapshot %d's transaction not committed at the end", ErrState, d.prepared[0].snap)
	}
	return d.err
}

// Latency is, for each record committed (at least once: written) whose
// emit time the sink was given, the time from its emission to its commit.
func (d *Driver) Latency() []time.Duration {
	d.cmu.Lock()
	defer d.cmu.Unlock()
	return slices.Clone(d.latency)
}

// Store is the driver's store.
func (d *Driver) Store() Store { return d.st }

// Open is the snapshot whose transaction is open (0 before Start).
func (d *Driver) Open() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.open
}

// PreCommitted is the latest snapshot whose transaction the sink
// pre-committed: the sink's part of a snapshot is complete only once it
// is (a failed pre-commit fails the snapshot, as in Flink).
func (d *Driver) PreCommitted() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pre
}
