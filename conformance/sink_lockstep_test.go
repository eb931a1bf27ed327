package conformance

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"github.com/markerwave/markerwave/impl/dataflow/sink/sinkdb"
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// The two-phase-commit sink (impl/dataflow/sink's Driver over a real
// SQLite store) and the dataflow core step side by side with
// model/barrier's mirror of tla/BarrierSink.tla: the model draws each
// step among those it enables; the core, the driver and the store take
// it; after each step the store's committed rows (queried back) are the
// model's store, the transactions' statuses in the store are the
// model's, and the losses the driver reported are the model's
// reportedLoss. The implementation commits on the coordinator's
// notification at once (CompleteCkpt, then Commit or ReportLoss of every
// pending transaction, in order), or crashes before committing and is
// restored: the behaviours the lockstep takes are the spec's with that
// scheduling.

// sinkLockstep is one run of the lockstep.
type sinkLockstep struct {
	t     *rapid.T
	seen  map[string]int
	bg    *barrierGraph
	cfg   *barrier.SinkConfig
	st    *barrier.SinkState
	c     *dataflow.Cluster
	path  string // the SQLite file
	store *sinkdb.SQLite
	d     *sink.Driver
	dead  bool                 // the sink crashed before committing: a restore is next
	core  map[int]int          // model checkpoint -> core snapshot id
	done  []int                // the core ids of the complete snapshots
	last  *dataflow.Snapshot   // the latest complete snapshot
	keys  map[dataflow.Key]int // core record -> model key index
	steps []string
	trace *sink.Trace // the sink trace the drivers write
}

// aligned is bg with the aligned protocol (tla/BarrierSink.tla assumes
// it): the same graph, the core's and the model's Mode set.
func aligned(bg *barrierGraph) *barrierGraph {
	g, cfg := *bg.g, *bg.cfg
	g.Mode, cfg.Mode = dataflow.Aligned, barrier.Aligned
	b := *bg
	b.g, b.cfg = &g, &cfg
	return &b
}

func newSinkLockstep(t *rapid.T, seen map[string]int) *sinkLockstep {
	bg := aligned(drawBarrierGraph(t, false, false))
	cfg := &barrier.SinkConfig{Base: bg.cfg, MaxCkpt: rapid.IntRange(1, 3).Draw(t, "ckpts"),
		MaxRestores: rapid.IntRange(1, 2).Draw(t, "restores"), MaxAborts: rapid.IntRange(0, 1).Draw(t, "aborts"),
		Variant: barrier.SinkSpec, Invariants: spec.SinkInvariants}
	dir, err := os.MkdirTemp("", "markerwave-sink-lockstep-")
	if err != nil {
		t.Fatal(err)
	}
	l := &sinkLockstep{t: t, seen: seen, bg: bg, cfg: cfg, st: barrier.SinkInit(cfg),
		c: dataflow.NewCluster(bg.g.Successively(), nil), path: filepath.Join(dir, "out.db"), core: map[int]int{}, keys: map[dataflow.Key]int{}}
	k := 0
	for m, kind := range bg.cfg.Kind {
		if kind == barrier.Source {
			for i := 1; i <= bg.cfg.Budget[m]; i++ {
				l.keys[dataflow.Key{Src: bg.coreNode[m], I: i}] = k
				k++
			}
		}
	}
	names := make([]string, len(bg.g.Nodes))
	for i, n := range bg.g.Nodes {
		names[i] = n.Name
	}
	l.trace = sink.NewTrace(names)
	l.startSink()
	return l
}

// startSink opens the store (again: a sink process starting) and starts
// a driver with the complete snapshots; it returns the recovery.
func (l *sinkLockstep) startSink() sink.Recovery {
	var err error
	if l.store, err = sinkdb.OpenSQLite(context.Background(), l.path, sinkdb.Config{Job: "lockstep", NoSync: true}); err != nil {
		l.t.Fatal(err)
	}
	l.d = sink.NewDriver(context.Background(), l.store, sink.ExactlyOnce, 1)
	l.d.SetTrace(l.trace)
	rec, err := l.d.Start(slices.Clone(l.done))
	if err != nil {
		l.t.Fatalf("starting the sink: %v\nsteps: %v", err, l.steps)
	}
	l.dead = false
	return rec
}

func (l *sinkLockstep) close() {
	l.d.Halt()
	_ = l.store.Close()
	_ = os.RemoveAll(filepath.Dir(l.path))
}

// apply takes model action a on the model, checking the invariants.
func (l *sinkLockstep) apply(a barrier.SinkAction) {
	l.t.Helper()
	ns, err := a.Apply(l.cfg, l.st)
	if err != nil {
		l.t.Fatalf("the model refuses %s, which the implementation took: %v\nsteps: %v", a.Label(l.cfg), err, l.steps)
	}
	l.st = ns
	l.steps = append(l.steps, a.Label(l.cfg))
	l.seen[a.Label(l.cfg)[:min(len(a.Label(l.cfg)), 6)]]++
	for _, p := range l.cfg.Invariants {
		inv, _ := barrier.SinkInvariantByName(p)
		if !inv(l.cfg, l.st) {
			l.t.Fatalf("after %s: %s is violated\nsteps: %v", a.Label(l.cfg), p, l.steps)
		}
	}
}

// step takes model action a on both sides, then compares.
func (l *sinkLockstep) step(a barrier.SinkAction) {
	l.t.Helper()
	switch a.Kind {
	case barrier.SinkCompleteCkpt:
		l.complete(a)
	case barrier.SinkStoreAbortTxn:
		l.storeAbort(a)
	case barrier.SinkRestore:
		l.restore(a)
	default:
		l.coreStep(a)
	}
	l.compare()
}

// coreStep is EmitS, InjectS, ProcessS or RecvBarrierSV on the core, the
// sink's steps handed to the driver as the runtimes do.
func (l *sinkLockstep) coreStep(a barrier.SinkAction) {
	l.t.Helper()
	var st dataflow.Step
	var err error
	var it dataflow.Item
	switch a.Kind {
	case barrier.SinkEmit:
		st, err = l.c.Nodes[l.bg.coreNode[a.Node]].Emit()
	case barrier.SinkInject:
		n := l.c.Nodes[l.bg.coreNode[a.Node]]
		if st, err = n.Inject(); err == nil {
			l.core[l.st.Ckpt] = n.Snap()
		}
	default:
		e := l.bg.coreEdge[a.Edge]
		it, _ = l.c.Nodes[l.c.G.Edges[e].From].Head(e)
		want := map[barrier.SinkActionKind]dataflow.Action{barrier.SinkProcess: dataflow.ActProcess, barrier.SinkRecvBarrier: dataflow.ActRecvBarrier}[a.Kind]
		st, err = l.c.Take(e, want)
	}
	if err != nil {
		l.t.Fatalf("the core refuses %s, which the model takes: %v\nsteps: %v", a.Label(l.cfg), err, l.steps)
	}
	l.apply(a)
	if a.Kind == barrier.SinkProcess || a.Kind == barrier.SinkRecvBarrier {
		l.sinkStep(a, it, st)
	}
}

// sinkStep hands the sink node's step to the driver.
func (l *sinkLockstep) sinkStep(a barrier.SinkAction, it dataflow.Item, st dataflow.Step) {
	e := l.bg.coreEdge[a.Edge]
	snk := l.c.Nodes[l.c.G.Edges[e].To]
	if l.c.G.Nodes[snk.ID()].Kind != dataflow.Sink {
		return
	}
	var err error
	if !it.Barrier {
		err = l.d.Take(sink.Record{Src: it.Src, I: it.I, Val: it.Val}, time.Time{})
	} else if st.Recorded {
		err = l.d.Barrier(snk.Snap())
		l.seen["PreCommit"]++
	}
	if err != nil {
		l.t.Fatalf("the sink: %v\nsteps: %v", err, l.steps)
	}
}

// complete is CompleteCkpt: the core's snapshot collected, the driver
// notified; it commits every pending transaction (Commit(i), or
// ReportLoss(i) if the store aborted it), or, drawn, the sink crashes
// before committing and a restore follows.
func (l *sinkLockstep) complete(a barrier.SinkAction) {
	l.t.Helper()
	s, err := l.c.Snapshot()
	if err != nil {
		l.t.Fatalf("the model completes checkpoint %d, the core has no snapshot: %v\nsteps: %v", l.st.Ckpt, err, l.steps)
	}
	l.last, l.done = s, append(l.done, s.ID())
	crash := l.st.Restores < l.cfg.MaxRestores && rapid.IntRange(0, 2).Draw(l.t, "crash before commit") == 0
	l.apply(a)
	if crash {
		l.d.Halt()
		l.dead = true
		l.seen["crash before commit"]++
		return
	}
	l.d.Complete(s.ID())
	if err := l.d.Settle(); err != nil {
		l.t.Fatalf("the sink's commit: %v\nsteps: %v", err, l.steps)
	}
	for i := 1; i <= len(l.st.Txns); i++ {
		kind := barrier.SinkCommitTxn
		if l.st.Txns[i-1].St == spec.TxnTimedOut {
			kind = barrier.SinkReportLossTxn
		}
		if _, err := (barrier.SinkAction{Kind: kind, Txn: i}).Apply(l.cfg, l.st); err == nil {
			l.apply(barrier.SinkAction{Kind: kind, Txn: i})
		}
	}
}

// storeAbort is StoreAbort(i): the store drops transaction i's
// pre-commit on its own (a timeout).
func (l *sinkLockstep) storeAbort(a barrier.SinkAction) {
	l.t.Helper()
	snap := l.core[l.st.Txns[a.Txn-1].Ck]
	if _, err := l.store.DB().Exec("DELETE FROM mw_output_prepared WHERE job = 'lockstep' AND snap = ?", snap); err != nil {
		l.t.Fatal(err)
	}
	l.apply(a)
}

// restore is RestoreSV: the sink's process ends (its store closed), every
// node restarts from the latest complete snapshot (the initial state if
// none), and a new sink recovers.
func (l *sinkLockstep) restore(a barrier.SinkAction) {
	l.t.Helper()
	l.d.Halt()
	_ = l.store.Close()
	g := l.c.G
	if l.last == nil {
		l.c = dataflow.NewCluster(g, nil)
	} else {
		var err error
		if l.c, err = dataflow.RestoreCluster(g, l.last, nil); err != nil {
			l.t.Fatal(err)
		}
	}
	rec := l.startSink()
	l.apply(a)
	if len(rec.Committed) > 0 {
		l.seen["restore committed"]++
	}
	if len(rec.Aborted) > 0 {
		l.seen["restore aborted"]++
	}
}

// compare checks the store against the model: its committed rows are
// the model's store, each transaction's status there is the model's (the
// latest transaction of each core snapshot id: ids are reused after a
// restore, the model's checkpoints are not), the driver's losses are the
// model's reportedLoss.
func (l *sinkLockstep) compare() {
	l.t.Helper()
	ctx := context.Background()
	rows, err := l.store.Rows(ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	got := make([]int, len(l.st.Store))
	for _, r := range rows {
		got[l.keys[dataflow.Key{Src: r.Src, I: r.I}]]++
	}
	if !slices.Equal(got, l.st.Store) {
		l.t.Fatalf("after %s the store holds %v, the model's %v\nsteps: %v", l.steps[len(l.steps)-1], got, l.st.Store, l.steps)
	}
	txns, err := l.store.Pending(ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	for id, st := range l.statuses() {
		have := map[bool]spec.TxnStatus{true: spec.TxnCommitted}[slices.Contains(txns.Committed, id)]
		if slices.Contains(txns.Prepared, id) {
			have = spec.TxnPreCommitted
		}
		want := map[spec.TxnStatus]spec.TxnStatus{spec.TxnCommitted: spec.TxnCommitted, spec.TxnPreCommitted: spec.TxnPreCommitted}[st]
		if have != want {
			l.t.Fatalf("after %s snapshot %d's transaction is %q in the store, %q in the model\nsteps: %v", l.steps[len(l.steps)-1], id, have, st, l.steps)
		}
	}
	var lost []int
	for c := 1; c <= l.cfg.MaxCkpt; c++ {
		if l.st.ReportedLoss&(1<<c) != 0 {
			lost = append(lost, l.core[c])
		}
	}
	if have := l.d.Lost(); !sameSet(have, lost) {
		l.t.Fatalf("after %s the sink reported losses %v, the model %v\nsteps: %v", l.steps[len(l.steps)-1], have, lost, l.steps)
	}
}

// statuses is, per core snapshot id, the status of the model's latest
// pre-committed transaction of it.
func (l *sinkLockstep) statuses() map[int]spec.TxnStatus {
	m := map[int]spec.TxnStatus{}
	for _, t := range l.st.Txns {
		if t.Ck != 0 {
			m[l.core[t.Ck]] = t.St
		}
	}
	return m
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// next draws the next model action: a restore if the sink crashed, else
// one the model enables, CompleteCkpt's commits aside (the
// implementation takes those with it).
func (l *sinkLockstep) next() (barrier.SinkAction, bool) {
	if l.dead {
		return barrier.SinkAction{Kind: barrier.SinkRestore}, true
	}
	var as []barrier.SinkAction
	for _, s := range barrier.SinkNext(l.cfg, l.st) {
		if s.Action.Kind != barrier.SinkCommitTxn && s.Action.Kind != barrier.SinkReportLossTxn {
			as = append(as, s.Action)
		}
	}
	if len(as) == 0 {
		return barrier.SinkAction{}, false
	}
	return as[rapid.IntRange(0, len(as)-1).Draw(l.t, "step")], true
}

// runSinkLockstep draws a graph and bounds and steps until the model has
// nothing left to do (or 200 steps).
func runSinkLockstep(t *rapid.T, seen map[string]int) {
	l := newSinkLockstep(t, seen)
	defer l.close()
	for range 200 {
		a, ok := l.next()
		if !ok {
			break
		}
		l.step(a)
	}
	l.auditTrace()
}

// auditTrace audits the sink trace the drivers wrote: it conforms, and
// keeps within the model's bounds.
func (l *sinkLockstep) auditTrace() {
	tr := l.trace.Trace(false)
	if r := AuditSink(tr, Options{}); !r.OK() {
		var b bytes.Buffer
		_ = spec.WriteSinkTrace(&b, tr)
		l.t.Fatalf("the drivers' sink trace does not conform: %s\n%s\nsteps: %v", r, b.String(), l.steps)
	}
	if h := tr.Header; h.MaxCkpt > l.cfg.MaxCkpt || h.MaxRestores > l.cfg.MaxRestores || h.MaxAborts > l.cfg.MaxAborts {
		l.t.Fatalf("the sink trace's bounds %d, %d, %d exceed the model's %d, %d, %d", h.MaxCkpt, h.MaxRestores, h.MaxAborts, l.cfg.MaxCkpt, l.cfg.MaxRestores, l.cfg.MaxAborts)
	}
	l.seen["sink trace audited"]++
}

// TestSinkLockstep: the implementation's two-phase-commit sink and
// tla/BarrierSink.tla's Go mirror agree step by step on random aligned
// DAGs: the store's rows, the transactions' statuses, the losses. The
// fixed inputs reach commits, store aborts reported as losses, crashes
// between completion and commit, and restores that commit and abort.
func TestSinkLockstep(t *testing.T) {
	checkCovering(t, sinkSeeds, func(t *rapid.T, seen map[string]int, _ string) { runSinkLockstep(t, seen) },
		"PreCommit", "Commit", "Report", "StoreA", "crash before commit", "restore committed", "restore aborted")
}

// sinkSeeds is how many fixed inputs TestSinkLockstep runs.
const sinkSeeds = 40
