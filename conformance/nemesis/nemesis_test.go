package nemesis

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// envInt is the integer in environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%s=%q", name, s)
	require.Positive(t, n, "%s", name)
	return n
}

// figures are what a nemesis run reports.
type figures struct {
	Seed      uint64 `json:"seed"`
	Cycles    int    `json:"cycles"`
	Crashes   int    `json:"crashes"`
	Initiated int    `json:"snapshots_initiated"`
	Completed int    `json:"snapshots_completed"`
	Aborted   int    `json:"snapshots_aborted"`
	// CompleteAndAborted counts the snapshots complete in the store that
	// some node also aborted (its part saved before a false suspicion);
	// Unfinished those initiated and neither complete nor aborted (under
	// way at a kill or a stop).
	CompleteAndAborted int `json:"snapshots_complete_and_aborted"`
	Unfinished         int `json:"snapshots_unfinished"`
	// Suspicions counts the Suspect steps in every log (a crash, a false
	// suspicion, or a peer gone after saying it was done); Withdrawn the
	// Unsuspect ones (a suspected peer heard again: a false suspicion).
	Suspicions int `json:"suspicions"`
	Withdrawn  int `json:"suspicions_withdrawn"`
	// CompleteConserved counts the complete snapshots whose total is the
	// initial money.
	CompleteConserved int `json:"complete_snapshots_conserved"`
	// Recoveries and RecoveriesConserved: the money the ledger finds in
	// the cluster as it resumed (balances plus recorded messages).
	Recoveries          int   `json:"recoveries"`
	RecoveriesConserved int   `json:"recoveries_conserved"`
	FinalMoney          int64 `json:"final_money"`
	// Detection is how long each survivor took to suspect the killed
	// node; Recovery how long from the kill until the restored cluster
	// had completed a snapshot again.
	Detection []time.Duration `json:"detection_ns"`
	Recovery  []time.Duration `json:"recovery_ns"`
	// Restart is the part of Recovery from running markerwave recover
	// (the survivors stopped) to the restored cluster's first complete
	// snapshot.
	Restart   []time.Duration  `json:"restart_ns"`
	Faults    map[string]int   `json:"network_faults"`
	Transfers map[string]int   `json:"transfers"`
	Audit     string           `json:"audit"`
	Points    []spec.SnapID    `json:"recovery_points"`
	Wall      time.Duration    `json:"wall_ns"`
	Exits     map[string][]int `json:"exit_codes"`
	// Supervised, for TestNemesisSupervised: its faults, recoveries and
	// detection times.
	Supervised *supervisedFigures `json:"supervised,omitempty"`
	// StoppedByFaults counts, in operator mode, the cycles whose network
	// faults made a node stop on its own (a suspicion held for the
	// detection bound), and the cluster was recovered before the crash.
	StoppedByFaults int `json:"stopped_by_network_faults"`
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}

func (f *figures) String() string {
	pct := func(n, of int) string {
		if of == 0 {
			return "none"
		}
		return fmt.Sprintf("%d of %d (%.0f%%)", n, of, 100*float64(n)/float64(of))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d cycles in %v\n", f.Seed, f.Cycles, f.Wall.Round(100*time.Millisecond))
	fmt.Fprintf(&b, "  snapshots: %d initiated, %d complete, %d aborted (%d of them also complete), %d neither\n", f.Initiated, f.Completed, f.Aborted, f.CompleteAndAborted, f.Unfinished)
	if f.Supervised != nil {
		f.Supervised.describe(&b, f)
	} else {
		f.describeOperator(&b)
	}
	fmt.Fprintf(&b, "  network faults between nodes: %d cuts, %d delays, %d resets, %d slicings\n", f.Faults["cut"], f.Faults["delay"], f.Faults["reset"], f.Faults["slice"])
	tr := f.Transfers
	fmt.Fprintf(&b, "  transfers: %d made, %d rolled back by recoveries, %d kept: %d delivered once, %d lost, %d duplicated, %d received unsent\n",
		tr["made"], tr["rolled_back"], tr["kept"], tr["delivered"], tr["lost"], tr["duplicated"], tr["unsent"])
	fmt.Fprintf(&b, "  money conserved: complete snapshots %s, after recoveries %s, at the end %d of %d\n",
		pct(f.CompleteConserved, f.Completed), pct(f.RecoveriesConserved, f.Recoveries), f.FinalMoney, initialMoney*len(procs))
	fmt.Fprintf(&b, "  audit: %s", f.Audit)
	return b.String()
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// describeOperator writes the operator mode's crash, detection and
// recovery figures.
func (f *figures) describeOperator(b *strings.Builder) {
	fmt.Fprintf(b, "  crashes (SIGKILL): %d; detection by the survivors: median %s, max %s (%d suspicions; bound %dms + %dms after the last frame heard)\n",
		f.Crashes, ms(median(f.Detection)), ms(maxOf(f.Detection)), len(f.Detection), timeoutMS, heartbeatMS)
	fmt.Fprintf(b, "  recovery (kill to a new complete snapshot of the restored cluster): median %s, max %s; of which recover and restart: median %s, max %s\n",
		ms(median(f.Recovery)), ms(maxOf(f.Recovery)), ms(median(f.Restart)), ms(maxOf(f.Restart)))
	if f.StoppedByFaults > 0 {
		fmt.Fprintf(b, "  recovered before the crash: %d times, a node stopped on its own after the network faults\n", f.StoppedByFaults)
	}
	fmt.Fprintf(b, "  Suspect steps: %d (a crash, a false suspicion, or a peer gone after saying it was done), %d withdrawn (the peer heard again)\n", f.Suspicions, f.Withdrawn)
}

var (
	suspectRe = regexp.MustCompile(`^(P\d+): suspect (P\d+)[ :]`)
	trustRe   = regexp.MustCompile(`^(P\d+): trust (P\d+)[ :]`)
)

// suspects reports the peers p suspects now, from its output.
func (c *cluster) suspects(p spec.ProcID) []string {
	n := c.nodes[p]
	n.out.mu.Lock()
	defer n.out.mu.Unlock()
	state := map[string]bool{}
	for _, x := range n.out.lines {
		if m := suspectRe.FindStringSubmatch(x.text); m != nil {
			state[m[2]] = true
		} else if m := trustRe.FindStringSubmatch(x.text); m != nil {
			state[m[2]] = false
		}
	}
	var out []string
	for q, s := range state {
		if s {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// settle waits until no running node suspects another (a cut longer than
// the timeout leaves a false suspicion until the peer is heard again).
func (c *cluster) settle(d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		var left []string
		for p := range c.nodes {
			for _, q := range c.suspects(p) {
				left = append(left, string(p)+" suspects "+q)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("suspicions outlived the network faults by %v: %v\n%s", d, left, c.outputs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *cluster) outputs() string {
	var b strings.Builder
	for _, p := range procs {
		if n, ok := c.nodes[p]; ok {
			fmt.Fprintf(&b, "--- %s\n%s", p, n.out)
		}
	}
	return b.String()
}

// newComplete waits, at most d, for a complete snapshot in st saved
// after since and not in seen, and adds it to seen. With since the start
// of the running incarnation, only its snapshots count: the processes of
// the incarnation before have all exited by then (snapshot ids cannot
// tell: each initiator draws its run tag at random, a restored one just
// above the restored snapshot's).
func (c *cluster) newComplete(st *store.Store, top *spec.Topology, since time.Time, seen map[spec.SnapID]bool, d time.Duration) spec.SnapID {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		entries, err := st.Catalog(top)
		require.NoError(c.t, err)
		for _, e := range entries {
			if e.Complete && e.Time.After(since) && !seen[e.ID] {
				seen[e.ID] = true
				return e.ID
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no new snapshot complete within %v\n%s", d, c.outputs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fault injects one network fault on a random channel's proxy for a
// random 100-700 ms: a cut (the proxy stops: connections closed, dials
// refused), a delay (latency toxic both ways), a reset (reset_peer toxic:
// TCP RST on the next data) or a slicing (slicer toxic: writes split into
// a few bytes each).
func (c *cluster) fault(rng *rand.Rand, counts map[string]int) {
	c.t.Helper()
	chans := make([]spec.Channel, 0, len(c.proxies))
	for ch := range c.proxies {
		chans = append(chans, ch)
	}
	sort.Slice(chans, func(i, j int) bool { return chans[i].String() < chans[j].String() })
	px := c.proxies[chans[rng.IntN(len(chans))]]
	d := time.Duration(100+rng.IntN(600)) * time.Millisecond
	kinds := []string{"cut", "delay", "reset", "slice"}
	kind := kinds[rng.IntN(len(kinds))]
	counts[kind]++
	var toxics []string
	switch kind {
	case "cut":
		px.Stop()
		time.Sleep(d)
		require.NoError(c.t, px.Start(), "restarting proxy %s", px.Name)
		return
	case "delay":
		toxics = []string{
			`{"name":"lat_up","type":"latency","stream":"upstream","attributes":{"latency":60,"jitter":40}}`,
			`{"name":"lat_down","type":"latency","stream":"downstream","attributes":{"latency":60,"jitter":40}}`,
		}
	case "reset":
		toxics = []string{`{"name":"reset","type":"reset_peer","stream":"upstream","attributes":{"timeout":0}}`}
	case "slice":
		toxics = []string{`{"name":"slice","type":"slicer","stream":"upstream","attributes":{"average_size":8,"size_variation":4,"delay":50}}`}
	}
	var names []string
	for _, js := range toxics {
		w, err := px.Toxics.AddToxicJson(strings.NewReader(js))
		require.NoError(c.t, err, "toxic %s on %s", js, px.Name)
		names = append(names, w.Name)
	}
	time.Sleep(d)
	for _, name := range names {
		require.NoError(c.t, px.Toxics.RemoveToxic(context.Background(), name))
	}
}

// recoverJSON is the part of markerwave recover --json the test reads.
type recoverJSON struct {
	From *struct {
		ID    spec.SnapID `json:"id"`
		Total *int64      `json:"total"`
	} `json:"from"`
	Commands []struct {
		Node spec.ProcID `json:"node"`
		Args []string    `json:"args"`
	} `json:"commands"`
}

// TestNemesis runs the nemesis (see the package doc) for NEMESIS_CYCLES
// cycles (2 unless set), from seed NEMESIS_SEED (random unless set).
// Each cycle: the cluster completes a snapshot; a few network faults;
// it completes another and every suspicion is withdrawn; a random node
// is killed with SIGKILL; each survivor must suspect it; the survivors
// stop on their own (no SIGTERM); markerwave recover picks the recovery point and
// prints the restart commands, which the test runs (with each node's own
// config, whose peer addresses are the proxies); the restored cluster
// must complete a snapshot. At the end every node stops gracefully, and
// the whole history is audited and accounted for.
func TestNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds markerwave and runs cluster nodes as OS processes")
	}
	began := time.Now()
	f := &figures{Cycles: envInt(t, "NEMESIS_CYCLES", 2), Faults: map[string]int{}, Exits: map[string][]int{}}
	f.Seed = uint64(time.Now().UnixNano())
	if s := os.Getenv("NEMESIS_SEED"); s != "" {
		var err error
		f.Seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "NEMESIS_SEED=%q", s)
	}
	faultsPerCycle := envInt(t, "NEMESIS_FAULTS", 3)
	t.Logf("NEMESIS_SEED=%d NEMESIS_CYCLES=%d NEMESIS_FAULTS=%d", f.Seed, f.Cycles, faultsPerCycle)
	rng := rand.New(rand.NewPCG(f.Seed, 0x6e656d65736973))

	exe := buildMarkerwave(t)
	c := newCluster(t, exe, f.Seed, 150)
	cfg, err := runtime.LoadConfig(c.canonical, "")
	require.NoError(t, err)
	top := cfg.Topology
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	for _, p := range procs {
		c.start(p)
	}
	seen := map[spec.SnapID]bool{}
	since := time.Now() // when the running incarnation began
	ctx := context.Background()
	for cycle := 1; cycle <= f.Cycles; cycle++ {
		c.newComplete(st, top, since, seen, 20*time.Second)
		for range faultsPerCycle {
			c.fault(rng, f.Faults)
		}
		c.settle(10 * time.Second)
		c.newComplete(st, top, since, seen, 20*time.Second)
		c.settle(10 * time.Second)
		if gone := c.stoppedOnTheirOwn(since); len(gone) > 0 {
			since = c.restartAfterFaults(ctx, f, cycle, gone)
			c.newComplete(st, top, since, seen, 20*time.Second)
			c.settle(10 * time.Second)
		}

		// The crash.
		victim := procs[rng.IntN(len(procs))]
		killed := time.Now()
		f.Crashes++
		c.stop(victim, syscall.SIGKILL, 10*time.Second)
		var survivors []spec.ProcID
		for _, p := range procs {
			if p != victim {
				survivors = append(survivors, p)
			}
		}
		re := regexp.MustCompile(`^P\d+: suspect ` + string(victim) + `[ :]`)
		for _, p := range survivors {
			x, ok := c.waitLine(p, re, killed, 15*time.Second)
			require.True(t, ok, "cycle %d: %s never suspected %s, killed at %s:\n%s", cycle, p, victim, killed.Format("15:04:05.000"), c.outputs())
			f.Detection = append(f.Detection, x.at.Sub(killed))
		}
		// The survivors stop on their own, one detection bound after
		// they suspect the dead node (they cannot take it back): no
		// operator step. Exit 1: stopped with failures (the dead peer).
		outs := map[spec.ProcID]*lineLog{}
		for _, p := range survivors {
			outs[p] = c.nodes[p].out
		}
		self := regexp.MustCompile(`^P\d+: stopping on its own: ` + string(victim) + ` suspected`)
		for _, p := range survivors {
			code := c.wait(p, 30*time.Second)
			f.Exits["survivor"] = append(f.Exits["survivor"], code)
			require.Contains(t, []int{0, 1}, code, "cycle %d: survivor %s exit code; its output:\n%s", cycle, p, outs[p])
			_, ok, _ := outs[p].first(self, killed) // it has exited: its output is all there
			require.True(t, ok, "cycle %d: survivor %s did not stop on its own; its output:\n%s", cycle, p, outs[p])
		}

		recovering := time.Now()
		since = recovering
		point := c.recoverCluster(ctx, f, cycle)
		c.newComplete(st, top, since, seen, 20*time.Second)
		f.Recovery = append(f.Recovery, time.Since(killed))
		f.Restart = append(f.Restart, time.Since(recovering))
		t.Logf("cycle %d: killed %s, survivors suspected it after %v, restored from snapshot %d, a snapshot complete %v after the kill",
			cycle, victim, f.Detection[len(f.Detection)-len(survivors):], point, f.Recovery[len(f.Recovery)-1].Round(time.Millisecond))
	}

	// The end: a graceful stop of the last incarnation, which saw no
	// fault: exit 0, balances that add up.
	outs := map[spec.ProcID]*lineLog{}
	for _, p := range procs {
		outs[p] = c.nodes[p].out
		require.NoError(t, c.nodes[p].cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range procs {
		code := c.wait(p, 30*time.Second)
		f.Exits["final"] = append(f.Exits["final"], code)
		assert.Equal(t, 0, code, "%s's final stop; its output:\n%s", p, outs[p])
		bal, ok := finalBalance(outs[p])
		require.True(t, ok, "%s's final balance in:\n%s", p, outs[p])
		f.FinalMoney += bal
	}
	assert.Equal(t, int64(initialMoney*len(procs)), f.FinalMoney, "the final balances")

	f.examine(t, c, cfg, st, cfg.TraceDir)

	f.Wall = time.Since(began)
	t.Logf("nemesis figures:\n%s", f)
	writeReport(t, f)
}

// recoverCluster is the operator's step once every node has stopped:
// markerwave recover picks the point and says how to restart; the test
// runs those commands with each node's config. It returns the point,
// appended to f.Points.
func (c *cluster) recoverCluster(ctx context.Context, f *figures, cycle int) spec.SnapID {
	t := c.t
	t.Helper()
	code, out, errs := c.run(ctx, "recover", "--config", c.canonical, "--json")
	require.Equal(t, 0, code, "markerwave recover:\n%s%s", out, errs)
	var rec recoverJSON
	require.NoError(t, json.Unmarshal([]byte(out), &rec), "recover --json:\n%s", out)
	require.NotNil(t, rec.From, "cycle %d: no recovery point:\n%s", cycle, out)
	require.Len(t, rec.Commands, len(procs))
	point := rec.From.ID
	require.NotNil(t, rec.From.Total, "recover --json:\n%s", out)
	require.Equal(t, int64(initialMoney*len(procs)), *rec.From.Total, "cycle %d: the recovery point's total", cycle)
	if len(f.Points) > 0 {
		require.NotEqual(t, f.Points[len(f.Points)-1], point, "cycle %d: the recovery point did not move on:\n%s", cycle, out)
	}
	f.Points = append(f.Points, point)
	for _, cmd := range rec.Commands {
		args := slices.Clone(cmd.Args)
		require.GreaterOrEqual(t, len(args), 1, "recover's command %v", cmd.Args)
		require.Equal(t, "node", args[0], "recover's command %v", cmd.Args)
		i := slices.Index(args, "--config")
		require.True(t, i >= 0 && i+1 < len(args), "recover's command %v has no --config", cmd.Args)
		j := slices.Index(args, "--restore")
		require.True(t, j >= 0 && j+1 < len(args) && args[j+1] == strconv.FormatUint(uint64(point), 10), "recover's command %v does not restore %d", cmd.Args, point)
		args = slices.Delete(args, i, i+2)
		k := slices.Index(args, "--id")
		require.True(t, k >= 0 && k+1 < len(args) && args[k+1] == string(cmd.Node), "recover's command %v", cmd.Args)
		args = slices.Delete(args, k, k+2)
		c.start(cmd.Node, args[1:]...)
	}
	return point
}

var stoppingOnItsOwn = regexp.MustCompile(`^P\d+: stopping on its own: `)

// stoppedOnTheirOwn names the nodes that have stopped on their own
// since the running incarnation began (at since): a network fault (a cut,
// its reconnection slowed by a loaded machine) outlived the detection
// bound, and the node that suspected its peer that long stopped, as a
// survivor of a crash must (the suspicion withdrawn too late, after the
// fault was over, settle cannot see it).
func (c *cluster) stoppedOnTheirOwn(since time.Time) []spec.ProcID {
	var out []spec.ProcID
	for _, p := range procs {
		if _, ok, _ := c.nodes[p].out.first(stoppingOnItsOwn, since); ok {
			out = append(out, p)
		}
	}
	return out
}

// restartAfterFaults, when the network faults made nodes stop on their
// own (stoppedOnTheirOwn), stops the others (SIGTERM) and recovers the
// cluster, as an operator would; the cycle's crash is then injected in
// the restored cluster. It returns when the restored incarnation began.
func (c *cluster) restartAfterFaults(ctx context.Context, f *figures, cycle int, gone []spec.ProcID) time.Time {
	c.t.Helper()
	c.t.Logf("cycle %d: %v stopped on their own after the network faults (a suspicion outlived the detection bound): recovering before the crash", cycle, gone)
	for _, p := range procs {
		_ = c.nodes[p].cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		code := c.wait(p, 30*time.Second)
		f.Exits["stopped by faults"] = append(f.Exits["stopped by faults"], code)
		require.Contains(c.t, []int{0, 1}, code, "cycle %d: %s's exit code after the faults", cycle, p)
	}
	f.StoppedByFaults++
	began := time.Now()
	c.recoverCluster(ctx, f, cycle)
	return began
}

// writeReport writes the figures as JSON to NEMESIS_REPORT, if set.
func writeReport(t *testing.T, f *figures) {
	t.Helper()
	if path := os.Getenv("NEMESIS_REPORT"); path != "" {
		b, err := json.MarshalIndent(f, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	}
}

// examine accounts for the whole history a run left on disk, once every
// node has stopped: money in every complete snapshot of st, the ledger
// of transfers over every incarnation's logs (f.Points are the
// incarnations' restore points, in order) and the verdict of markerwave
// audit on them all (the logs in auditDir).
func (f *figures) examine(t *testing.T, c *cluster, cfg *runtime.FileConfig, st *store.Store, auditDir string) {
	t.Helper()
	complete := f.examineSnapshots(t, st, cfg.Topology)
	f.examineLedger(t, cfg.TraceDir, complete)
	f.examineAudit(t, c, auditDir)
}

// examineSnapshots counts the complete snapshots of st and those that
// hold the initial money, and returns their ids.
func (f *figures) examineSnapshots(t *testing.T, st *store.Store, top *spec.Topology) map[spec.SnapID]bool {
	t.Helper()
	entries, err := st.Catalog(top)
	require.NoError(t, err)
	complete := map[spec.SnapID]bool{}
	for _, e := range entries {
		if e.Complete {
			complete[e.ID] = true
			f.Completed++
			if e.Total == int64(initialMoney*len(procs)) {
				f.CompleteConserved++
			} else {
				t.Errorf("snapshot %d totals %d", e.ID, e.Total)
			}
		}
	}

	return complete
}

// examineLedger accounts for every transfer and snapshot over every
// incarnation's logs as left in dir.
func (f *figures) examineLedger(t *testing.T, dir string, complete map[spec.SnapID]bool) {
	t.Helper()
	incs := readIncarnations(t, dir, f.Points)
	for _, inc := range incs {
		for _, evs := range inc.Logs {
			for _, e := range evs {
				switch e.Action {
				case spec.Initiate:
					f.Initiated++
				case spec.Suspect:
					f.Suspicions++
				case spec.Unsuspect:
					f.Withdrawn++
				}
			}
		}
	}
	initiated, aborted := snapshotIDs(incs)
	f.Aborted = len(aborted)
	for id := range initiated {
		switch {
		case complete[id] && aborted[id]:
			f.CompleteAndAborted++
		case !complete[id] && !aborted[id]:
			f.Unfinished++
		}
	}
	l := account(incs)
	f.Transfers = map[string]int{"made": l.Made, "rolled_back": l.RolledBack, "kept": l.Kept, "delivered": l.Delivered,
		"lost": len(l.Lost), "duplicated": len(l.Duplicated), "unsent": len(l.Unsent)}
	f.Recoveries = len(l.AfterRecovery)
	for k, m := range l.AfterRecovery {
		if m == int64(initialMoney*len(procs)) {
			f.RecoveriesConserved++
		} else {
			t.Errorf("after recovery %d (from snapshot %d) the cluster holds %d", k+1, f.Points[k], m)
		}
	}
	assert.Empty(t, l.Lost, "transfers lost")
	assert.Empty(t, l.Duplicated, "transfers duplicated")
	assert.Empty(t, l.Unsent, "transfers received, never sent")
	assert.Empty(t, l.Problems)
	assert.Equal(t, len(f.Points), f.Recoveries)

}

// examineAudit runs markerwave audit on the whole history in dir.
func (f *figures) examineAudit(t *testing.T, c *cluster, dir string) {
	t.Helper()
	// Every node stopped gracefully
	// (exit 0: its channels drained, every frame acknowledged), so the
	// last incarnation is claimed drained: each channel must end empty
	// and every snapshot initiated must be complete or aborted
	// (SnapshotsEnd).
	code, out, errs := c.runWithin(context.Background(), 15*time.Minute, "audit", "--drained", dir)
	f.Audit = strings.TrimSpace(out)
	switch {
	case code == 0:
		assert.Contains(t, out, "conforms: ")
		assert.Contains(t, out, fmt.Sprintf("in %d incarnations", len(f.Points)+1))
	default:
		t.Errorf("markerwave audit: exit %d:\n%s%s", code, out, errs)
	}

}

// readIncarnations reads the node logs in dir: the first incarnation's
// (P1.jsonl, ...) and then one per recovery point, in order.
func readIncarnations(t *testing.T, dir string, points []spec.SnapID) []incarnation {
	t.Helper()
	var incs []incarnation
	for k := 0; k <= len(points); k++ {
		inc := incarnation{Logs: map[spec.ProcID][]spec.Event{}}
		if k < len(points) {
			inc.EndedBy = points[k]
		}
		for _, p := range procs {
			path := runtime.NodeTracePath(dir, p)
			if k > 0 {
				path = runtime.RestoredTracePath(dir, p, points[k-1])
			}
			tr, _, _, err := conformance.ReadCrashedNodeLog(path)
			require.NoError(t, err, "incarnation %d: %s", k+1, path)
			want := spec.SnapID(0)
			if k > 0 {
				want = points[k-1]
			}
			require.Equal(t, want, tr.Header.RestoredFrom, "%s: restored_from", path)
			inc.Logs[p] = tr.Events
		}
		incs = append(incs, inc)
	}
	return incs
}

// snapshotIDs returns the ids of the snapshots initiated in incs and of
// those some node aborted.
func snapshotIDs(incs []incarnation) (initiated, aborted map[spec.SnapID]bool) {
	initiated, aborted = map[spec.SnapID]bool{}, map[spec.SnapID]bool{}
	for _, inc := range incs {
		for _, evs := range inc.Logs {
			for _, e := range evs {
				switch e.Action {
				case spec.Initiate:
					initiated[e.Snap] = true
				case spec.Abort:
					aborted[e.Snap] = true
				}
			}
		}
	}
	return initiated, aborted
}
