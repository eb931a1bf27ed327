package main

import (
	"context"
	"errors"
	"flag"
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
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

func init() {
	register("demo", "bank cluster over loopback TCP: transfers, concurrent snapshots, conservation check", runDemo)
}

type demoOpts struct {
	nodes     int
	transfers int
	seed      uint64
	out       string
	balance   int64
	timeout   time.Duration
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o demoOpts
	fs.IntVar(&o.nodes, "nodes", 5, "number of bank nodes (complete graph), 2..32")
	fs.IntVar(&o.transfers, "transfers", 3000, "random transfers in total")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the transfer choices")
	fs.StringVar(&o.out, "out", "", "output folder (default out/demo-<timestamp>)")
	fs.Int64Var(&o.balance, "balance", 1000, "initial balance of each account")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "stop the workload after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	case o.nodes < 2 || o.nodes > 32:
		fmt.Fprintf(stderr, "demo: --nodes %d: want 2..32\n", o.nodes)
		return 2
	case o.transfers < 0 || o.transfers > 10_000_000:
		fmt.Fprintf(stderr, "demo: --transfers %d: want 0..10000000\n", o.transfers)
		return 2
	case o.balance <= 0 || o.balance > 1<<40:
		fmt.Fprintf(stderr, "demo: --balance %d: want 1..%d\n", o.balance, int64(1<<40))
		return 2
	case o.timeout <= 0:
		fmt.Fprintf(stderr, "demo: --timeout must be positive\n")
		return 2
	}
	if o.out == "" {
		o.out = filepath.Join("out", "demo-"+time.Now().Format("20060102-150405"))
	}
	if entries, err := os.ReadDir(o.out); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "demo: --out %s already holds a run (%d entries); a run never overwrites another's snapshots: remove it or choose another folder\n", o.out, len(entries))
		return 2
	}
	ok, err := demo(o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// demo runs the demo; it returns false if any check failed.
func demo(o demoOpts, w io.Writer) (bool, error) {
	topo := spec.Complete(o.nodes)
	initBal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		initBal[p] = o.balance
	}
	total := o.balance * int64(o.nodes)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return false, err
	}
	st, err := store.Open(filepath.Join(o.out, "snapshots"))
	if err != nil {
		return false, err
	}

	// One TCP transport per node, as separate processes would have: each
	// listens for its incoming channels and dials its outgoing ones.
	lns := map[spec.ProcID]net.Listener{}
	addrs := map[spec.ProcID]string{}
	for _, p := range topo.Procs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return false, err
		}
		lns[p], addrs[p] = ln, ln.Addr().String()
	}
	trs := map[spec.ProcID]transport.Transport{}
	for _, p := range topo.Procs {
		tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs, Local: []spec.ProcID{p}, Listeners: map[spec.ProcID]net.Listener{p: lns[p]}})
		if err != nil {
			return false, err
		}
		trs[p] = tr
	}
	hdr := spec.Header{Topology: topo, InitBal: initBal, Source: "markerwave demo", Note: fmt.Sprintf("seed %d, %d transfers", o.seed, o.transfers)}
	nodeDir := filepath.Join(o.out, "nodes")
	sinks, err := runtime.OpenTraces(nodeDir, hdr)
	if err != nil {
		return false, err
	}
	cl, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, NodeTransports: trs, Traces: sinks,
		NewApp: func(p spec.ProcID) (core.App, error) { return app.NewBank(initBal[p]) },
	})
	if err != nil {
		runtime.CloseTraces(sinks)
		return false, err
	}
	fmt.Fprintf(w, "markerwave demo: %d bank nodes, %d channels (complete graph) over loopback TCP, %d each, total %d\n", o.nodes, len(topo.Chans), o.balance, total)
	for _, p := range topo.Procs {
		fmt.Fprintf(w, "  %s listens on %s\n", string(p), addrs[p])
	}
	fmt.Fprintf(w, "running %d random transfers (seed %d) with snapshots along the way...\n\n", o.transfers, o.seed)

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var (
		done    atomic.Int64
		refused atomic.Int64
		wg      sync.WaitGroup
	)
	perNode := o.transfers / o.nodes
	for i, p := range topo.Procs {
		n := perNode
		if i < o.transfers%o.nodes {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(o.seed, uint64(i)))
			out := topo.Out(p)
			for k := 0; k < n && ctx.Err() == nil; k++ {
				to := out[rng.IntN(len(out))].To
				err := cl.Node(p).SendApp(to, app.Transfer(1+rng.Int64N(o.balance/10+1)))
				if errors.Is(err, core.ErrApp) {
					refused.Add(1)
				} else if err != nil {
					return
				}
				done.Add(1)
				if rng.IntN(4) == 0 { // bursts, then a pause
					time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
				}
			}
		}()
	}

	// Snapshots at fixed points of progress; some concurrent, started by
	// different nodes at the same moment.
	procs := topo.Procs
	pick := func(k int) spec.ProcID { return procs[k%len(procs)] }
	plan := []struct {
		at    float64
		inits []spec.ProcID
	}{
		{0.2, []spec.ProcID{pick(0)}},
		{0.4, []spec.ProcID{pick(1), pick(3)}},
		{0.6, []spec.ProcID{pick(2)}},
		{0.8, []spec.ProcID{pick(4), pick(0)}},
	}
	var (
		results []snapshot.Global
		failed  []string
		mu      sync.Mutex
		swg     sync.WaitGroup
		pairs   = map[spec.SnapID][]spec.SnapID{} // started together
	)
	take := func(ids []spec.SnapID) {
		for _, s := range ids {
			swg.Add(1)
			go func() {
				defer swg.Done()
				cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer ccancel()
				g, err := cl.Collect(cctx, s)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err.Error())
					return
				}
				results = append(results, g)
			}()
		}
	}
	start := func(inits []spec.ProcID) {
		ids := make([]spec.SnapID, len(inits))
		var iwg sync.WaitGroup
		for k, p := range inits {
			iwg.Add(1)
			go func() {
				defer iwg.Done()
				s, err := cl.Snapshot(p)
				if err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("initiate at %s: %v", string(p), err))
					mu.Unlock()
					return
				}
				ids[k] = s
			}()
		}
		iwg.Wait()
		if len(ids) > 1 {
			mu.Lock()
			for _, s := range ids {
				pairs[s] = ids
			}
			mu.Unlock()
		}
		var ok []spec.SnapID
		for _, s := range ids {
			if s != 0 {
				ok = append(ok, s)
			}
		}
		take(ok)
	}
	workDone := make(chan struct{})
	go func() { wg.Wait(); close(workDone) }()
	next := 0
	tick := time.NewTicker(500 * time.Microsecond)
loop:
	for next < len(plan) {
		select {
		case <-workDone:
			break loop
		case <-tick.C:
			if float64(done.Load()) >= plan[next].at*float64(o.transfers) {
				start(plan[next].inits)
				next++
			}
		}
	}
	tick.Stop()
	<-workDone
	for ; next < len(plan); next++ { // workload ended early (timeout or tiny)
		start(plan[next].inits)
	}
	// One more once the transfers are over.
	start([]spec.ProcID{pick(1)})
	swg.Wait()

	qctx, qcancel := context.WithTimeout(context.Background(), 3*time.Second)
	quiesceErr := cl.Quiesce(qctx)
	qcancel()
	var final int64
	for _, p := range topo.Procs {
		if s, err := cl.Node(p).State(); err == nil {
			final += s.Bal
		}
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 3*time.Second)
	stopErr := cl.Stop(stopCtx)
	stopCancel()
	traceErr := runtime.CloseTraces(sinks)

	allOK := true
	sort.Slice(results, func(i, j int) bool { return results[i].ID < results[j].ID })
	for _, g := range results {
		fmt.Fprint(w, g.String())
		for _, o := range pairs[g.ID] {
			if o != g.ID {
				fmt.Fprintf(w, "  (started at the same moment as snapshot %d, by another node)\n", o)
			}
		}
		if err := g.Validate(); err != nil {
			allOK = false
			fmt.Fprintf(w, "  ✗ inconsistent: %v\n\n", err)
			continue
		}
		if t := g.Total(); t != total {
			allOK = false
			fmt.Fprintf(w, "  ✗ NOT conserved: total %d, initial total %d\n", t, total)
		} else {
			fmt.Fprintf(w, "  ✓ conserved: total %d = initial total %d\n", t, total)
		}
		path, err := st.Save(g)
		if err == nil {
			_, err = st.Load(g.ID)
		}
		if err != nil {
			allOK = false
			fmt.Fprintf(w, "  ✗ persist: %v\n\n", err)
			continue
		}
		fmt.Fprintf(w, "  saved %s (checksummed, reloaded)\n\n", path)
	}
	for _, f := range failed {
		allOK = false
		fmt.Fprintf(w, "✗ %s\n", f)
	}
	fmt.Fprintf(w, "%d transfers made (%d refused for insufficient funds), %d snapshots collected (2 pairs started concurrently by different nodes)\n",
		done.Load()-refused.Load(), refused.Load(), len(results))
	if final == total {
		fmt.Fprintf(w, "✓ final balances after the run: total %d = initial total %d\n", final, total)
	} else {
		allOK = false
		fmt.Fprintf(w, "✗ final balances after the run: total %d, initial total %d\n", final, total)
	}
	if stopErr != nil {
		allOK = false
		fmt.Fprintf(w, "✗ stop: %v\n", stopErr)
	}

	// Restore the snapshot with the most money in flight into a fresh
	// in-memory cluster.
	if len(results) > 0 {
		g := results[0]
		for _, r := range results {
			if r.Recorded() > g.Recorded() {
				g = r
			}
		}
		if err := demoRestore(w, st, g.ID, initBal, total); err != nil {
			allOK = false
			fmt.Fprintf(w, "✗ restore from snapshot %d: %v\n", g.ID, err)
		}
	}

	// The trace of this cluster (the restored one above writes none): the
	// merged per-node logs and the snapshots collected; drained if every
	// frame was delivered before the nodes stopped.
	hdr.Snaps, hdr.Drained = cl.Initiators(), quiesceErr == nil
	tracePath := filepath.Join(o.out, "trace.jsonl")
	if traceErr != nil {
		allOK = false
		fmt.Fprintf(w, "✗ node traces: %v\n", traceErr)
	} else if n, err := runtime.MergeTraces(nodeDir, hdr, results, tracePath); err != nil {
		allOK = false
		fmt.Fprintf(w, "✗ merge traces: %v\n", err)
	} else {
		fmt.Fprintf(w, "\nwrote %s: merged trace, %d events in causal order, %d recorded snapshots (markerwave audit %s)\n", tracePath, n, len(results), tracePath)
		fmt.Fprintf(w, "      %s/: per-node logs; %s/: persisted snapshots\n", nodeDir, st.Dir())
	}
	if allOK {
		fmt.Fprintln(w, "✓ all snapshots consistent and conserving")
	} else {
		fmt.Fprintln(w, "✗ FAILED: see above")
	}
	return allOK, nil
}

// demoRestore loads snapshot id from disk, restores it into an in-memory
// cluster, checks the total, and takes one more snapshot there.
func demoRestore(w io.Writer, st *store.Store, id spec.SnapID, initBal map[spec.ProcID]int64, total int64) error {
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
	if err := cl.Quiesce(ctx); err != nil {
		return err
	}
	var sum int64
	for _, p := range g.Topology.Procs {
		s, err := cl.Node(p).State()
		if err != nil {
			return err
		}
		sum += s.Bal
	}
	if sum != total {
		return fmt.Errorf("restored balances total %d, want %d", sum, total)
	}
	procs := g.Topology.Procs
	for i := 0; i < 50; i++ {
		_ = cl.Send(procs[i%len(procs)], procs[(i+1)%len(procs)], app.Transfer(1))
	}
	s, err := cl.Snapshot(procs[0])
	if err != nil {
		return err
	}
	g2, err := cl.Collect(ctx, s)
	if err != nil {
		return err
	}
	if g2.Total() != total {
		return fmt.Errorf("snapshot %d after restore totals %d, want %d", s, g2.Total(), total)
	}
	fmt.Fprintf(w, "✓ restored snapshot %d from disk into a fresh cluster (%d recorded messages re-delivered first): balances total %d; a new snapshot there (id %d) totals %d\n",
		id, g.Recorded(), sum, s, g2.Total())
	return nil
}
