package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

const demoAbout = `
Runs a bank of --nodes accounts, one node per account joined by a
complete graph of TCP channels over loopback, as separate processes
would. The nodes make --transfers random transfers while snapshots are
taken at 20%, 40%, 60% and 80% of the way (two of them started by two
nodes at the same moment) and once more at the end. Every snapshot is
checked (a consistent cut, money conserved), saved under
--out/snapshots and reloaded; the busiest one is restored into a fresh
cluster; the per-node logs are merged into --out/trace.jsonl for
markerwave audit. Last, the bank runs supervised, coordinated through a
real etcd embedded in this process: a node is killed after a snapshot,
and the cluster recovers on its own (--out/supervised: its store).

Exit 0: every check passed; 1: one failed; 2: bad usage, or --out
already holds a run or cannot be created or written; 130: interrupted
(SIGINT), the partial --out removed.`

// demoOptions are demo's flags.
type demoOptions struct {
	nodes     int
	transfers int
	seed      uint64
	out       string
	balance   int64
	timeout   time.Duration
}

func (o *demoOptions) define(f *cmdFlags) {
	f.IntVar(&o.nodes, "nodes", 5, "number of bank nodes (complete graph), 2..32")
	f.IntVar(&o.transfers, "transfers", 3000, "random transfers in total, 0..10000000")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the transfer choices")
	f.StringVar(&o.out, "out", "", "output `folder`, empty or new (default out/demo-<timestamp>)")
	f.Int64Var(&o.balance, "balance", 1000, "initial balance of each account, 1..2^40")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "stop the workload after this long")
}

// usage returns the usage error in o, if any.
func (o *demoOptions) usage(f *cmdFlags) (string, bool) {
	return broken(
		f.unexpected(),
		rule{outside(o.nodes, 2, 32), fmt.Sprintf("--nodes %d: want 2..32", o.nodes)},
		rule{outside(o.transfers, 0, 10_000_000), fmt.Sprintf("--transfers %d: want 0..10000000", o.transfers)},
		rule{outside(o.balance, 1, 1<<40), fmt.Sprintf("--balance %d: want 1..%d", o.balance, int64(1<<40))},
		rule{o.timeout <= 0, "--timeout must be positive"},
	)
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	f := newFlags("demo", "[flags]", demoAbout, stdout, stderr)
	var o demoOptions
	o.define(f)
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := o.usage(f); bad {
		return f.usageError("%s", msg)
	}
	if o.out == "" {
		o.out = filepath.Join("out", "demo-"+time.Now().Format("20060102-150405"))
	}
	if err := checkOut(o.out); err != nil {
		return f.fail(exitUsage, err)
	}
	stop, release := interruptible()
	defer release()
	ok, err := demo(o, stdout, stop)
	return demoCode(f, o.out, ok, err)
}

// checkOut says why --out cannot hold this run: it already holds one, or
// it cannot be created or written.
func checkOut(out string) error {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("--out %s already holds a run (%s); a run never overwrites another's snapshots: remove it or choose another folder", out, entriesN(len(entries)))
	}
	if err := runtime.UsableDir(out); err != nil {
		return fmt.Errorf("--out %s: cannot hold the run: %w", out, err)
	}
	return nil
}

func entriesN(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// errInterrupted is the demo's error after SIGINT.
var errInterrupted = errors.New("interrupted")

// demoCode is the demo's exit status; an interrupted run's partial --out
// is removed, so that the next run into it is not refused.
func demoCode(f *cmdFlags, out string, ok bool, err error) int {
	switch {
	case errors.Is(err, errInterrupted):
		if rerr := os.RemoveAll(out); rerr != nil {
			f.errorf("interrupted; the partial --out %s could not be removed: %v", out, rerr)
		} else {
			f.errorf("interrupted; removed the partial --out %s", out)
		}
		return exitInterrupted
	case err != nil:
		return f.fail(exitFail, err)
	case !ok:
		return exitFail
	}
	return exitOK
}

// demo runs the demo, step by step, and returns false if any check
// failed; a close of stop (SIGINT) ends it early with errInterrupted.
func demo(o demoOptions, w io.Writer, stop <-chan struct{}) (bool, error) {
	r, err := startDemo(o, w)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
			r.interrupted.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	workDone := r.startWorkload(ctx)
	r.snapshotAlongTheWay(workDone)
	r.stopCluster()
	if r.interrupted.Load() {
		return false, errInterrupted
	}
	r.checkSnapshots()
	r.checkTotals()
	r.restoreBusiest()
	r.writeTrace()
	r.recoverAutomatically()
	if r.ok {
		fmt.Fprintln(w, "✓ all snapshots consistent and conserving")
	} else {
		fmt.Fprintln(w, "✗ FAILED: see above")
	}
	return r.ok, nil
}

// demoRun is one run of the demo: its cluster, the snapshots it took and
// whether every check so far passed.
type demoRun struct {
	o       demoOptions
	w       io.Writer
	topo    *spec.Topology
	initBal map[spec.ProcID]int64
	total   int64
	st      *store.Store
	hdr     spec.Header
	nodeDir string
	sinks   map[spec.ProcID]*trace.Sink
	cl      *runtime.Cluster

	done, refused atomic.Int64 // transfers attempted, refused
	interrupted   atomic.Bool  // SIGINT: no more snapshots, no checks

	mu         sync.Mutex
	results    []snapshot.Global
	failed     []string
	pairs      map[spec.SnapID][]spec.SnapID // snapshots started together
	collecting sync.WaitGroup

	quiesceErr, stopErr, traceErr error
	final                         int64 // the balances' total after the run
	ok                            bool
}

// failf reports a failed check.
func (r *demoRun) failf(format string, a ...any) {
	r.ok = false
	fmt.Fprintf(r.w, format, a...)
}

// startDemo creates the output folder and store, and starts the bank
// cluster: one TCP transport per node, as separate processes would have
// (each listens for its incoming channels and dials its outgoing ones),
// each writing its own trace.
func startDemo(o demoOptions, w io.Writer) (*demoRun, error) {
	r := &demoRun{o: o, w: w, topo: spec.Complete(o.nodes), initBal: map[spec.ProcID]int64{}, pairs: map[spec.SnapID][]spec.SnapID{}, ok: true}
	for _, p := range r.topo.Procs {
		r.initBal[p] = o.balance
	}
	r.total = o.balance * int64(o.nodes)
	r.hdr = spec.Header{Topology: r.topo, InitBal: r.initBal, Source: "markerwave demo", Note: fmt.Sprintf("seed %d, %d transfers", o.seed, o.transfers)}
	r.nodeDir = filepath.Join(o.out, "nodes")
	if err := r.openStore(); err != nil {
		return nil, err
	}
	addrs, err := r.startCluster()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "markerwave demo: %d bank nodes, %d channels (complete graph) over loopback TCP, %d each, total %d\n", o.nodes, len(r.topo.Chans), o.balance, r.total)
	for _, p := range r.topo.Procs {
		fmt.Fprintf(w, "  %s listens on %s\n", string(p), addrs[p])
	}
	fmt.Fprintf(w, "running %d random transfers (seed %d) with snapshots along the way...\n\n", o.transfers, o.seed)
	return r, nil
}

// openStore creates --out and the snapshot store in it.
func (r *demoRun) openStore() error {
	err := os.MkdirAll(r.o.out, 0o755)
	if err == nil {
		r.st, err = store.Open(filepath.Join(r.o.out, "snapshots"))
	}
	return err
}

// startCluster starts the nodes on their transports, each with its
// trace, and returns their addresses.
func (r *demoRun) startCluster() (map[spec.ProcID]string, error) {
	trs, addrs, err := demoTransports(r.topo)
	if err != nil {
		return nil, err
	}
	if r.sinks, err = runtime.OpenTraces(r.nodeDir, r.hdr); err != nil {
		return nil, err
	}
	r.cl, err = runtime.NewCluster(runtime.ClusterConfig{
		Topology: r.topo, NodeTransports: trs, Traces: r.sinks,
		NewApp: func(p spec.ProcID) (core.App, error) { return app.NewBank(r.initBal[p]) },
	})
	if err != nil {
		runtime.CloseTraces(r.sinks)
	}
	return addrs, err
}

// demoTransports starts one TCP transport per node of topo on a free
// loopback port, and returns them with their addresses.
func demoTransports(topo *spec.Topology) (map[spec.ProcID]transport.Transport, map[spec.ProcID]string, error) {
	lns, addrs, err := listenAll(topo.Procs)
	if err != nil {
		return nil, nil, err
	}
	trs := map[spec.ProcID]transport.Transport{}
	for _, p := range topo.Procs {
		tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs, Local: []spec.ProcID{p}, Listeners: map[spec.ProcID]net.Listener{p: lns[p]}})
		if err != nil {
			return nil, nil, err
		}
		trs[p] = tr
	}
	return trs, addrs, nil
}

// listenAll opens a listener on a free loopback port for each of procs
// (none if one cannot be opened) and returns them with their addresses.
func listenAll(procs []spec.ProcID) (map[spec.ProcID]net.Listener, map[spec.ProcID]string, error) {
	lns := map[spec.ProcID]net.Listener{}
	addrs := map[spec.ProcID]string{}
	for _, p := range procs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll(lns)
			return nil, nil, err
		}
		lns[p], addrs[p] = ln, ln.Addr().String()
	}
	return lns, addrs, nil
}

func closeAll(lns map[spec.ProcID]net.Listener) {
	for _, l := range lns {
		l.Close()
	}
}

// startWorkload has every node make its share of the random transfers,
// in bursts, until done or ctx ends; the channel closes when all are done.
func (r *demoRun) startWorkload(ctx context.Context) <-chan struct{} {
	var wg sync.WaitGroup
	o := r.o
	for i, p := range r.topo.Procs {
		n := o.transfers / o.nodes
		if i < o.transfers%o.nodes {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.transfers(ctx, i, p, n)
		}()
	}
	workDone := make(chan struct{})
	go func() { wg.Wait(); close(workDone) }()
	return workDone
}

// transfers has node p, the i-th, make n random transfers, in bursts,
// until ctx ends or the node stops.
func (r *demoRun) transfers(ctx context.Context, i int, p spec.ProcID, n int) {
	rng := rand.New(rand.NewPCG(r.o.seed, uint64(i)))
	out := r.topo.Out(p)
	for k := 0; k < n && ctx.Err() == nil; k++ {
		to := out[rng.IntN(len(out))].To
		err := r.cl.Node(p).SendApp(to, app.Transfer(1+rng.Int64N(r.o.balance/10+1)))
		if errors.Is(err, core.ErrApp) {
			r.refused.Add(1)
		} else if err != nil {
			return
		}
		r.done.Add(1)
		if rng.IntN(4) == 0 { // bursts, then a pause
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		}
	}
}

// snapshotAlongTheWay starts snapshots at fixed points of the workload's
// progress, some concurrent (started by different nodes at the same
// moment), then one more once the transfers are over, and waits until
// every one is collected.
func (r *demoRun) snapshotAlongTheWay(workDone <-chan struct{}) {
	plan := r.snapshotPlan()
	next := 0
	tick := time.NewTicker(500 * time.Microsecond)
loop:
	for next < len(plan) {
		select {
		case <-workDone:
			break loop
		case <-tick.C:
			if float64(r.done.Load()) >= plan[next].at*float64(r.o.transfers) {
				r.startSnapshots(plan[next].inits)
				next++
			}
		}
	}
	tick.Stop()
	<-workDone
	if r.interrupted.Load() {
		r.collecting.Wait()
		return
	}
	for ; next < len(plan); next++ { // workload ended early (timeout or tiny)
		r.startSnapshots(plan[next].inits)
	}
	r.startSnapshots([]spec.ProcID{r.pick(1)})
	r.collecting.Wait()
}

// snapshotStart is a point of the demo's snapshot plan: the fraction of
// the transfers made, and the nodes that initiate a snapshot then, at the
// same moment.
type snapshotStart struct {
	at    float64
	inits []spec.ProcID
}

// snapshotPlan is when the demo starts snapshots, and by whom: two of
// them pairs started together by different nodes.
func (r *demoRun) snapshotPlan() []snapshotStart {
	return []snapshotStart{
		{0.2, []spec.ProcID{r.pick(0)}},
		{0.4, []spec.ProcID{r.pick(1), r.pick(3)}},
		{0.6, []spec.ProcID{r.pick(2)}},
		{0.8, []spec.ProcID{r.pick(4), r.pick(0)}},
	}
}

// pick is the k-th node, round the topology.
func (r *demoRun) pick(k int) spec.ProcID { return r.topo.Procs[k%len(r.topo.Procs)] }

// startSnapshots has each of inits initiate a snapshot at the same moment
// and collects them in the background.
func (r *demoRun) startSnapshots(inits []spec.ProcID) {
	ids := make([]spec.SnapID, len(inits))
	var iwg sync.WaitGroup
	for k, p := range inits {
		iwg.Add(1)
		go func() {
			defer iwg.Done()
			ids[k] = r.initiate(p)
		}()
	}
	iwg.Wait()
	if len(ids) > 1 {
		r.mu.Lock()
		for _, s := range ids {
			r.pairs[s] = ids
		}
		r.mu.Unlock()
	}
	for _, s := range ids {
		if s != 0 {
			r.collect(s)
		}
	}
}

// initiate has p initiate a snapshot and returns its id, 0 (the failure
// noted) if it could not.
func (r *demoRun) initiate(p spec.ProcID) spec.SnapID {
	s, err := r.cl.Snapshot(p)
	if err != nil {
		r.mu.Lock()
		r.failed = append(r.failed, fmt.Sprintf("initiate at %s: %v", string(p), err))
		r.mu.Unlock()
		return 0
	}
	return s
}

// collect waits for snapshot s in the background.
func (r *demoRun) collect(s spec.SnapID) {
	r.collecting.Add(1)
	go func() {
		defer r.collecting.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := r.cl.Collect(ctx, s)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.failed = append(r.failed, err.Error())
			return
		}
		r.results = append(r.results, g)
	}()
}

// stopCluster waits for the channels to drain, notes the final balances
// and stops the nodes and their traces.
func (r *demoRun) stopCluster() {
	qctx, qcancel := context.WithTimeout(context.Background(), 3*time.Second)
	r.quiesceErr = r.cl.Quiesce(qctx)
	qcancel()
	for _, p := range r.topo.Procs {
		if s, err := r.cl.Node(p).State(); err == nil {
			r.final += s.Bal
		}
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 3*time.Second)
	r.stopErr = r.cl.Stop(stopCtx)
	stopCancel()
	r.traceErr = runtime.CloseTraces(r.sinks)
}

// checkSnapshots prints each collected snapshot, in id order, checks that
// it is consistent and conserves money, and saves and reloads it.
func (r *demoRun) checkSnapshots() {
	sort.Slice(r.results, func(i, j int) bool { return r.results[i].ID < r.results[j].ID })
	for _, g := range r.results {
		r.checkSnapshot(g)
	}
	for _, f := range r.failed {
		r.failf("✗ %s\n", f)
	}
}

// checkSnapshot prints snapshot g, checks it and saves it.
func (r *demoRun) checkSnapshot(g snapshot.Global) {
	w := r.w
	fmt.Fprint(w, g.String())
	for _, o := range r.pairs[g.ID] {
		if o != g.ID {
			fmt.Fprintf(w, "  (started at the same moment as snapshot %d, by another node)\n", o)
		}
	}
	if err := g.Validate(); err != nil {
		r.failf("  ✗ inconsistent: %v\n\n", err)
		return
	}
	if t := g.Total(); t != r.total {
		r.failf("  ✗ NOT conserved: total %d, initial total %d\n", t, r.total)
	} else {
		fmt.Fprintf(w, "  ✓ conserved: total %d = initial total %d\n", t, r.total)
	}
	r.persist(g)
}

// persist saves snapshot g and reloads it.
func (r *demoRun) persist(g snapshot.Global) {
	path, err := r.st.Save(g)
	if err == nil {
		_, err = r.st.Load(g.ID)
	}
	if err != nil {
		r.failf("  ✗ persist: %v\n\n", err)
		return
	}
	fmt.Fprintf(r.w, "  saved %s (checksummed, reloaded)\n\n", path)
}

// checkTotals prints the workload's counts and checks that the final
// balances conserve money and the nodes stopped cleanly.
func (r *demoRun) checkTotals() {
	fmt.Fprintf(r.w, "%d transfers made (%d refused for insufficient funds), %d snapshots collected (2 pairs started concurrently by different nodes)\n",
		r.done.Load()-r.refused.Load(), r.refused.Load(), len(r.results))
	if r.final == r.total {
		fmt.Fprintf(r.w, "✓ final balances after the run: total %d = initial total %d\n", r.final, r.total)
	} else {
		r.failf("✗ final balances after the run: total %d, initial total %d\n", r.final, r.total)
	}
	if r.stopErr != nil {
		r.failf("✗ stop: %v\n", r.stopErr)
	}
}

// restoreBusiest restores the snapshot with the most money in flight
// into a fresh in-memory cluster (demoRestore).
func (r *demoRun) restoreBusiest() {
	if len(r.results) == 0 {
		return
	}
	g := r.results[0]
	for _, s := range r.results {
		if s.Recorded() > g.Recorded() {
			g = s
		}
	}
	if err := demoRestore(r.w, r.st, g.ID, r.total); err != nil {
		r.failf("✗ restore from snapshot %d: %v\n", g.ID, err)
	}
}

// writeTrace merges the per-node logs of this cluster (the restored one
// writes none) and the snapshots collected into trace.jsonl, drained if
// every frame was delivered before the nodes stopped.
func (r *demoRun) writeTrace() {
	r.hdr.Snaps, r.hdr.Drained = r.cl.Initiators(), r.quiesceErr == nil
	tracePath := filepath.Join(r.o.out, "trace.jsonl")
	if r.traceErr != nil {
		r.failf("✗ node traces: %v\n", r.traceErr)
		return
	}
	n, err := runtime.MergeTraces(r.nodeDir, r.hdr, r.results, tracePath)
	if err != nil {
		r.failf("✗ merge traces: %v\n", err)
		return
	}
	fmt.Fprintf(r.w, "\nwrote %s: merged trace, %d events in causal order, %d recorded snapshots (markerwave audit %s)\n", tracePath, n, len(r.results), tracePath)
	fmt.Fprintf(r.w, "      %s/: per-node logs; %s/: persisted snapshots\n", r.nodeDir, r.st.Dir())
}

// demoRestore loads snapshot id from disk, restores it into an in-memory
// cluster, checks the total, and takes one more snapshot there.
func demoRestore(w io.Writer, st *store.Store, id spec.SnapID, total int64) error {
	g, err := st.Load(id)
	if err != nil {
		return err
	}
	cl, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: g.Topology, From: &g,
		Transport: transport.NewMemory(g.Topology, transport.MemoryConfig{MaxDelay: 200 * time.Microsecond, Seed: 1}),
		NewApp:    func(p spec.ProcID) (core.App, error) { return app.NewBank(0) },
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer cl.Stop(ctx)
	sum, err := restoredTotal(ctx, cl, g.Topology, total)
	if err != nil {
		return err
	}
	s, g2, err := snapshotAfterRestore(ctx, cl, g.Topology.Procs, total)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "✓ restored snapshot %d from disk into a fresh cluster (%d recorded messages re-delivered first): balances total %d; a new snapshot there (id %d) totals %d\n",
		id, g.Recorded(), sum, s, g2.Total())
	return nil
}

// restoredTotal waits until the restored cluster cl has re-delivered the
// recorded messages and checks that its balances total total.
func restoredTotal(ctx context.Context, cl *runtime.Cluster, t *spec.Topology, total int64) (int64, error) {
	if err := cl.Quiesce(ctx); err != nil {
		return 0, err
	}
	var sum int64
	for _, p := range t.Procs {
		s, err := cl.Node(p).State()
		if err != nil {
			return 0, err
		}
		sum += s.Bal
	}
	if sum != total {
		return sum, fmt.Errorf("restored balances total %d, want %d", sum, total)
	}
	return sum, nil
}

// snapshotAfterRestore makes transfers on the restored cluster cl, takes
// a snapshot and checks its total.
func snapshotAfterRestore(ctx context.Context, cl *runtime.Cluster, procs []spec.ProcID, total int64) (spec.SnapID, snapshot.Global, error) {
	for i := range 50 {
		_ = cl.Send(procs[i%len(procs)], procs[(i+1)%len(procs)], app.Transfer(1))
	}
	s, err := cl.Snapshot(procs[0])
	if err != nil {
		return 0, snapshot.Global{}, err
	}
	g, err := cl.Collect(ctx, s)
	if err == nil && g.Total() != total {
		err = fmt.Errorf("snapshot %d after restore totals %d, want %d", s, g.Total(), total)
	}
	return s, g, err
}
