package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// The supervised mode's documented bounds (docs/supervised.md, "The
// bounds, measured"): a lease of leaseTTL is found gone within
// leaseTTL + 0.5 s (etcd's expiry check); the survivors' stop takes at
// most drain_ms + 3 s (then they are killed), before the processes'
// start.
const (
	leaseTTL     = 2 * time.Second // coord.SupervisorConfig.LeaseTTL's default
	leaseBound   = leaseTTL + 500*time.Millisecond
	stopBound    = drainMS*time.Millisecond + 3*time.Second
	etcdCluster  = "nemesis"
	recoveryWait = 90 * time.Second // a recovery not done by then fails the run
	// supervisedEveryMS: a snapshot every second from each node, a
	// seventh of TestNemesis's rate. At 150 ms and at 300 ms, on the
	// 2-core machine at load 25-27, the node that completes a snapshot
	// (its writer saves the part, reads every part, assembles and saves
	// the global, one snapshot at a time, about 100 ms each there) fell
	// seconds behind: the final stop waited for that backlog past the
	// supervisor's drain_ms + 3 s and the node was killed, in three
	// 20-cycle runs of four (docs/supervised.md#the-nemesis-with-no-operator).
	supervisedEveryMS = 1000
)

// supervisedFigures are the figures a run of the supervised nemesis
// adds: the faults that end a cycle, how many incarnations the
// supervisors started for them, and the times by kind of detection.
type supervisedFigures struct {
	// Faults counts the cycles' faults by kind: "kill" (kill -9 of a
	// node), "kill-in-recovery" (a second node killed while the cluster
	// restarts from the first), "etcd-cut" (a supervisor cut from etcd
	// past its lease), "etcd-kill" (the etcd member killed -9 and started
	// again on its data, then a node killed).
	Faults map[string]int `json:"faults"`
	// Automatic counts the faults after which the cluster ran again in a
	// new incarnation and completed a snapshot with no step of the test
	// (an operator's); of Faults' total.
	Automatic int `json:"recoveries_automatic"`
	// Incarnations is the last incarnation (1 is the first start).
	Incarnations uint64 `json:"incarnations"`
	// DetectKill is from a kill -9 to its supervisor naming the node dead
	// (the child's exit); DetectLease from the cut of a supervisor's link
	// to etcd to another supervisor finding its node's lease gone.
	DetectKill  []time.Duration `json:"detection_kill_ns"`
	DetectLease []time.Duration `json:"detection_lease_ns"`
	// Retried counts the kills that hit a process already stopping on its
	// own, made again in the next incarnation (killAndDetect).
	Retried int `json:"kills_retried"`
	// BranchesAudited counts the incarnations no later one continues
	// (superseded during a recovery), each audited as a history of its
	// own up to its restore point; BranchesIncomplete those whose logs
	// are not all there (a node killed before it opened its log).
	BranchesAudited    int `json:"branches_audited"`
	BranchesIncomplete int `json:"branches_incomplete"`
	// EtcdRestart is how long the killed etcd member took to serve again.
	EtcdRestart []time.Duration `json:"etcd_restart_ns"`
}

// supervisedCluster is the nemesis's cluster under markerwave supervise:
// one supervisor process per node (a machine each), each with its node's
// config (peers through the node-to-node proxies) and its own proxy to
// the etcd member, a process of its own.
type supervisedCluster struct {
	*cluster
	etcd   *etcdMember
	etcdPx map[spec.ProcID]*toxiproxy.Proxy
	sups   map[spec.ProcID]*node
}

func newSupervisedCluster(t *testing.T, exe string, seed uint64) *supervisedCluster {
	s := &supervisedCluster{cluster: newCluster(t, exe, seed, supervisedEveryMS), etcdPx: map[spec.ProcID]*toxiproxy.Proxy{}, sups: map[spec.ProcID]*node{}}
	s.etcd = startEtcd(t, filepath.Join(t.TempDir(), "etcd"))
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for _, p := range procs {
		px := toxiproxy.NewProxy(srv, string(p)+"->etcd", "127.0.0.1:0", s.etcd.addr)
		require.NoError(t, px.Start())
		t.Cleanup(px.Stop)
		s.etcdPx[p] = px
	}
	return s
}

// startSupervisor starts p's supervisor: markerwave supervise for node p
// alone, through p's proxy to etcd.
func (s *supervisedCluster) startSupervisor(p spec.ProcID) {
	s.t.Helper()
	s.sups[p] = s.startProcess(p, "supervise", "--config", s.configs[p], "--procs", string(p),
		"--etcd", s.etcdPx[p].Listen, "--etcd-cluster", etcdCluster)
}

// unreachableEtcd: a supervisor whose link to etcd is cut at its start
// exits 2 within --etcd-timeout, naming the address it could not reach
// (bad input: no node started, nothing written).
func (s *supervisedCluster) unreachableEtcd() {
	s.t.Helper()
	px := s.etcdPx[procs[0]]
	px.Stop()
	defer func() { require.NoError(s.t, px.Start(), "proxy %s", px.Name) }()
	code, out, errs := s.run(context.Background(), "supervise", "--config", s.configs[procs[0]], "--procs", string(procs[0]),
		"--etcd", px.Listen, "--etcd-cluster", etcdCluster, "--etcd-timeout", "500ms")
	assert.Equal(s.t, 2, code, "supervise with etcd cut:\n%s%s", out, errs)
	assert.Contains(s.t, errs, "--etcd "+px.Listen+": coord: etcd unreachable: no answer from "+px.Listen+" within 500ms")
	assert.NotContains(s.t, errs, "started "+string(procs[0]))
}

// coord is a client of the etcd member as it serves now (the test's own
// view, not through the proxies).
func (s *supervisedCluster) coord() *coord.Coord {
	s.t.Helper()
	co, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{s.etcd.addr}, Cluster: etcdCluster, DialTimeout: 10 * time.Second})
	require.NoError(s.t, err, "the test's etcd client")
	return co
}

// running waits, at most d, until every node is a live member of the
// current incarnation, and has restored in it, newer than after; it
// returns the incarnation and when the test saw it.
func (s *supervisedCluster) running(after uint64, d time.Duration) (coord.Incarnation, time.Time) {
	s.t.Helper()
	co := s.coord()
	defer co.Close()
	deadline := time.Now().Add(d)
	for {
		if inc, ok := s.allIn(co); ok && inc.N > after {
			return inc, time.Now()
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the cluster did not run again in an incarnation after %d within %v\n%s", after, d, s.supervisorOutputs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allIn says whether every node is a member of the current incarnation
// and has restored in it.
func (s *supervisedCluster) allIn(co *coord.Coord) (coord.Incarnation, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	inc, _, err := co.Incarnation(ctx)
	if err != nil {
		return inc, false
	}
	ms, err := co.Members(ctx)
	if err != nil {
		return inc, false
	}
	restored, err := co.Restored(ctx, inc.N)
	if err != nil || len(restored) < len(procs) {
		return inc, false
	}
	for _, p := range procs {
		if m, ok := ms[p]; !ok || m.Incarnation != inc.N {
			return inc, false
		}
	}
	return inc, true
}

// newSnapshot waits, at most d, for a snapshot of the catalog in etcd
// taken after since and not in seen, and adds it to seen.
func (s *supervisedCluster) newSnapshot(since time.Time, seen map[spec.SnapID]bool, d time.Duration) spec.SnapID {
	s.t.Helper()
	co := s.coord()
	defer co.Close()
	deadline := time.Now().Add(d)
	for {
		es, err := co.Catalog(context.Background())
		require.NoError(s.t, err)
		for _, e := range es {
			if e.Taken.After(since) && !seen[e.ID] {
				seen[e.ID] = true
				return e.ID
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no new snapshot in the catalog within %v\n%s", d, s.supervisorOutputs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pid is the process id of node p's process in incarnation n or later,
// and its incarnation, from its supervisor's log (waiting for it at most
// d).
func (s *supervisedCluster) pid(p spec.ProcID, n uint64, d time.Duration) (int, uint64) {
	s.t.Helper()
	re := regexp.MustCompile(`^supervisor: incarnation (\d+): started ` + string(p) + ` \(pid (\d+)\)`)
	deadline := time.Now().Add(d)
	for {
		if pid, inc, ok := s.lastPid(p, re, n); ok {
			return pid, inc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s was not started in incarnation %d or later within %v\n%s", p, n, d, s.supervisorOutputs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *supervisedCluster) lastPid(p spec.ProcID, re *regexp.Regexp, n uint64) (int, uint64, bool) {
	l := s.sups[p].out
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.lines) - 1; i >= 0; i-- {
		if m := re.FindStringSubmatch(l.lines[i].text); m != nil {
			inc, _ := strconv.ParseUint(m[1], 10, 64)
			pid, _ := strconv.Atoi(m[2])
			return pid, inc, inc >= n
		}
	}
	return 0, 0, false
}

// kill9 kills node p's process of incarnation n or later with SIGKILL;
// it returns when, and the incarnation of the process killed.
func (s *supervisedCluster) kill9(p spec.ProcID, n uint64) (time.Time, uint64) {
	s.t.Helper()
	pid, inc := s.pid(p, n, 30*time.Second)
	killed := time.Now()
	require.NoError(s.t, syscall.Kill(pid, syscall.SIGKILL), "kill -9 %s (pid %d)", p, pid)
	return killed, inc
}

// foundDead is when the first supervisor of those named said p was
// found dead for the reason matching why, at or after since.
func (s *supervisedCluster) foundDead(p spec.ProcID, why string, since time.Time, among []spec.ProcID) time.Time {
	s.t.Helper()
	re := regexp.MustCompile(`^supervisor: ` + string(p) + ` found dead \(` + why)
	var first time.Time
	for _, q := range among {
		if x, ok, _ := s.sups[q].out.first(re, since); ok && (first.IsZero() || x.at.Before(first)) {
			first = x.at
		}
	}
	if first.IsZero() {
		s.t.Fatalf("no supervisor of %v found %s dead (%s) after %s\n%s", among, p, why, since.Format("15:04:05.000"), s.supervisorOutputs())
	}
	return first
}

// restartEtcd kills the etcd member with SIGKILL, starts it again on
// its data after pause and points every proxy at its new port; it
// returns how long it took to serve again.
func (s *supervisedCluster) restartEtcd(pause time.Duration) time.Duration {
	s.t.Helper()
	s.etcd.kill()
	time.Sleep(pause)
	began := time.Now()
	s.etcd.start()
	took := time.Since(began)
	for _, px := range s.etcdPx {
		px.Stop()
		require.NoError(s.t, px.Update(&toxiproxy.Proxy{Listen: px.Listen, Upstream: s.etcd.addr, Enabled: false}))
		require.NoError(s.t, px.Start(), "proxy %s", px.Name)
	}
	return took
}

// cutEtcd cuts p's supervisor from etcd for d (its proxy stops: the
// connections closed, dials refused), then lets it through again.
func (s *supervisedCluster) cutEtcd(p spec.ProcID, d time.Duration) {
	s.t.Helper()
	px := s.etcdPx[p]
	px.Stop()
	time.Sleep(d)
	require.NoError(s.t, px.Start(), "restarting proxy %s", px.Name)
}

func (s *supervisedCluster) supervisorOutputs() string {
	var out string
	for _, p := range procs {
		if n, ok := s.sups[p]; ok {
			out += fmt.Sprintf("--- supervisor of %s\n%s", p, n.out)
		}
	}
	return out
}

// recoveries are the supervisors' lines on deaths and incarnations
// (not their snapshots and process starts), with their times.
func (s *supervisedCluster) recoveries() string {
	var b strings.Builder
	skip := regexp.MustCompile(`in the catalog$|: started P\d+ \(pid`)
	for _, p := range procs {
		l := s.sups[p].out
		l.mu.Lock()
		for _, x := range l.lines {
			if strings.HasPrefix(x.text, "supervisor: ") && !skip.MatchString(x.text) || strings.Contains(x.text, "stopping on its own") {
				fmt.Fprintf(&b, "%s [%s] %s\n", x.at.Format("15:04:05.000"), p, x.text)
			}
		}
		l.mu.Unlock()
	}
	return b.String()
}

// others are the processes but p.
func others(p spec.ProcID) []spec.ProcID {
	var out []spec.ProcID
	for _, q := range procs {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

// supervisedFaults are the kinds of the cycles' faults, in turn.
var supervisedFaults = []string{"kill", "kill-in-recovery", "etcd-cut", "etcd-kill"}

// TestNemesisSupervised is the nemesis of the supervised mode, with no
// operator: NEMESIS_CYCLES cycles (2 unless set; make nemesis-supervised
// runs 20), from seed NEMESIS_SEED. Three markerwave supervise processes
// (one per node, as on three machines) coordinate through a real etcd
// member, a process the test starts and kills; every node-to-node channel
// and every supervisor's link to etcd goes through a toxiproxy proxy.
// First, a supervisor started with its link to etcd cut must exit 2
// naming the address.
// Each cycle: a snapshot completes; network faults between the nodes;
// another completes; then the cycle's fault, the kinds in turn
// (supervisedFaults), after which the cluster must run again in a newer
// incarnation and complete a snapshot with nothing done by the test. At
// the end the supervisors are stopped and the whole history is examined
// as in TestNemesis (the ledger, the snapshots' money, the audit).
func TestNemesisSupervised(t *testing.T) {
	if testing.Short() {
		t.Skip("builds markerwave and runs supervisors, nodes and etcd as OS processes")
	}
	began := time.Now()
	f := &figures{Cycles: envInt(t, "NEMESIS_CYCLES", 2), Faults: map[string]int{}, Exits: map[string][]int{},
		Supervised: &supervisedFigures{Faults: map[string]int{}}}
	f.Seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("NEMESIS_SEED"); v != "" {
		var err error
		f.Seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "NEMESIS_SEED=%q", v)
	}
	faultsPerCycle := envInt(t, "NEMESIS_FAULTS", 2)
	t.Logf("NEMESIS_SEED=%d NEMESIS_CYCLES=%d NEMESIS_FAULTS=%d", f.Seed, f.Cycles, faultsPerCycle)
	rng := rand.New(rand.NewPCG(f.Seed, 0x6e656d65736973))

	s := newSupervisedCluster(t, buildMarkerwave(t), f.Seed)
	cfg, err := runtime.LoadConfig(s.canonical, "")
	require.NoError(t, err)
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	s.unreachableEtcd()
	for _, p := range procs {
		s.startSupervisor(p)
	}
	inc, since := s.running(0, 60*time.Second)
	seen := map[spec.SnapID]bool{}
	for cycle := 1; cycle <= f.Cycles; cycle++ {
		s.newSnapshot(since, seen, 30*time.Second)
		for range faultsPerCycle {
			s.fault(rng, f.Faults)
		}
		s.newSnapshot(since, seen, 30*time.Second)
		// The incarnation running now: a false suspicion after the
		// network faults may have made a node stop and its supervisors
		// restart the cluster since.
		inc, _ = s.running(0, recoveryWait)
		kind := supervisedFaults[(cycle-1)%len(supervisedFaults)]
		victim := procs[rng.IntN(len(procs))]
		hit, past := s.supervisedFault(f.Supervised, kind, victim, inc.N, rng)
		f.Crashes++
		next, at := s.running(past, recoveryWait)
		s.newSnapshot(at, seen, recoveryWait)
		f.Recovery = append(f.Recovery, time.Since(hit))
		f.Restart = append(f.Restart, at.Sub(hit))
		f.Supervised.Automatic++
		t.Logf("cycle %d: %s of %s in incarnation %d; running in incarnation %d from snapshot %d %v after, a snapshot complete %v after",
			cycle, kind, victim, inc.N, next.N, next.From, at.Sub(hit).Round(time.Millisecond), f.Recovery[len(f.Recovery)-1].Round(time.Millisecond))
		inc, since = next, at
	}
	f.Supervised.Incarnations = inc.N
	f.Points = restorePoints(t, cfg.TraceDir, inc.From)
	t.Logf("the supervisors' recoveries:\n%s", s.recoveries())

	// The end: each supervisor stops its node gracefully (exit 0).
	stopped := time.Now()
	for _, p := range procs {
		require.NoError(t, s.sups[p].cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range procs {
		code := s.waitExit(s.sups[p], 60*time.Second)
		f.Exits["supervisor"] = append(f.Exits["supervisor"], code)
		assert.Equal(t, 0, code, "the supervisor of %s; its output:\n%s", p, s.sups[p].out)
		bal, ok := lastBalance(s.sups[p].out, p, stopped)
		require.True(t, ok, "%s's final balance in:\n%s", p, s.sups[p].out)
		f.FinalMoney += bal
	}
	assert.Equal(t, int64(initialMoney*len(procs)), f.FinalMoney, "the final balances")
	f.examine(t, s.cluster, cfg, st, copyLogs(t, cfg.TraceDir, f.Points))
	s.auditBranches(t, f.Supervised, cfg.TraceDir, f.Points)

	f.Wall = time.Since(began)
	t.Logf("supervised nemesis figures:\n%s", f)
	writeReport(t, f)
}

// supervisedFault injects a cycle's fault of kind on victim, in
// incarnation n, and returns when it hit (the kill, the cut) and the
// incarnation the cluster must run past to have recovered from it; it
// records the detection time it can see.
func (s *supervisedCluster) supervisedFault(sf *supervisedFigures, kind string, victim spec.ProcID, n uint64, rng *rand.Rand) (time.Time, uint64) {
	s.t.Helper()
	sf.Faults[kind]++
	switch kind {
	case "kill":
		return s.killAndDetect(sf, victim, n)
	case "kill-in-recovery":
		hit, in := s.killAndDetect(sf, victim, n)
		// A second node, killed as soon as its supervisor has started it
		// in the next incarnation: the recovery is under way.
		second := others(victim)[rng.IntN(len(procs)-1)]
		_, in = s.kill9(second, in+1)
		return hit, in
	case "etcd-cut":
		hit := time.Now()
		s.cutEtcd(victim, leaseBound+500*time.Millisecond)
		sf.DetectLease = append(sf.DetectLease, s.foundDead(victim, "its lease in etcd expired", hit, others(victim)).Sub(hit))
		return hit, n
	case "etcd-kill":
		sf.EtcdRestart = append(sf.EtcdRestart, s.restartEtcd(time.Duration(200+rng.IntN(800))*time.Millisecond))
		return s.killAndDetect(sf, victim, n)
	}
	s.t.Fatalf("unknown fault %q", kind)
	return time.Time{}, 0
}

// killAndDetect kills victim's process of incarnation n and records how
// long its supervisor took to name it dead. A process that was already
// stopping (a false suspicion after the network faults made it stop on
// its own, its supervisor restarting: the kill hit an exiting process)
// is no kill of a running node: the test waits for the next incarnation
// and kills the victim there, at most three times.
func (s *supervisedCluster) killAndDetect(sf *supervisedFigures, victim spec.ProcID, n uint64) (time.Time, uint64) {
	s.t.Helper()
	re := regexp.MustCompile(`^supervisor: ` + string(victim) + ` found dead \(its process exited`)
	for range 3 {
		killed, in := s.kill9(victim, n)
		if x, ok := waitLineOf(s.sups[victim], re, killed, 10*time.Second); ok {
			sf.DetectKill = append(sf.DetectKill, x.at.Sub(killed))
			return killed, in
		}
		inc, _ := s.running(n, recoveryWait)
		s.t.Logf("the kill -9 of %s in incarnation %d hit a process already stopping; again in incarnation %d", victim, n, inc.N)
		sf.Retried++
		n = inc.N
	}
	s.t.Fatalf("the supervisor of %s did not find it dead:\n%s", victim, s.supervisorOutputs())
	return time.Time{}, 0
}

// restorePoints are the restore points of the history the last
// incarnation (restored from last) continues, oldest first, from the
// node logs in dir: the log of the node restored from X is
// P.restored-X.jsonl, and X was recorded in the log of the incarnation
// before it. An incarnation no later one continues (superseded before
// it took a snapshot that was restored from, its logs perhaps
// incomplete: a node killed as it started) is rolled back entirely, and
// left out.
func restorePoints(t *testing.T, dir string, last spec.SnapID) []spec.SnapID {
	t.Helper()
	froms := []spec.SnapID{0}
	files, err := filepath.Glob(filepath.Join(dir, string(procs[0])+".restored-*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		var id uint64
		_, err := fmt.Sscanf(filepath.Base(f), string(procs[0])+".restored-%d.jsonl", &id)
		require.NoError(t, err, f)
		froms = append(froms, spec.SnapID(id))
	}
	var points []spec.SnapID
	for at := last; at != 0; {
		points = append([]spec.SnapID{at}, points...)
		before, ok := recordedIn(t, dir, froms, at)
		require.True(t, ok, "snapshot %d, restored from, is recorded in no incarnation's log of %s in %s", at, procs[0], dir)
		at = before
	}
	return points
}

// recordedIn is the restore point, of froms, of the incarnation whose
// log of procs[0] records snapshot id.
func recordedIn(t *testing.T, dir string, froms []spec.SnapID, id spec.SnapID) (spec.SnapID, bool) {
	for _, from := range froms {
		path := runtime.NodeTracePath(dir, procs[0])
		if from != 0 {
			path = runtime.RestoredTracePath(dir, procs[0], from)
		}
		tr, _, _, err := conformance.ReadCrashedNodeLog(path)
		require.NoError(t, err, path)
		if recordIndex(tr.Events, id) >= 0 {
			return from, true
		}
	}
	return 0, false
}

// logPaths are the paths in dir of every node's log of the incarnation
// restored from from (0: the first).
func logPaths(dir string, from spec.SnapID) []string {
	var out []string
	for _, p := range procs {
		if from == 0 {
			out = append(out, runtime.NodeTracePath(dir, p))
		} else {
			out = append(out, runtime.RestoredTracePath(dir, p, from))
		}
	}
	return out
}

// copyLogs copies the logs of the history through points (the first
// incarnation's, then each restored from one of points) into a new
// directory, for the audit: an incarnation no later one continues (a
// branch) is a history of its own (auditBranches).
func copyLogs(t *testing.T, dir string, points []spec.SnapID) string {
	t.Helper()
	out := t.TempDir()
	for _, from := range append([]spec.SnapID{0}, points...) {
		for _, path := range logPaths(dir, from) {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(out, filepath.Base(path)), b, 0o644))
		}
	}
	return out
}

// auditBranches audits, as a history of its own, every incarnation of
// dir that no later one continues (superseded before a snapshot of it
// was restored from: a second node killed during the recovery, a
// restart for a lease cut from etcd): the logs up to its restore point
// and its own. One whose logs are not all there (a node killed before
// it opened its log) is counted, not audited.
func (s *supervisedCluster) auditBranches(t *testing.T, sf *supervisedFigures, dir string, main []spec.SnapID) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, string(procs[0])+".restored-*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		var id uint64
		_, err := fmt.Sscanf(filepath.Base(f), string(procs[0])+".restored-%d.jsonl", &id)
		require.NoError(t, err, f)
		from := spec.SnapID(id)
		if slices.Contains(main, from) {
			continue
		}
		if !allExist(logPaths(dir, from)) {
			sf.BranchesIncomplete++
			continue
		}
		code, out, errs := s.runWithin(context.Background(), 15*time.Minute, "audit", copyLogs(t, dir, restorePoints(t, dir, from)))
		if assert.Equal(t, 0, code, "the audit of the branch restored from %d:\n%s%s", from, out, errs) {
			assert.Contains(t, out, "conforms: ")
			sf.BranchesAudited++
		}
	}
}

func allExist(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// lastBalance is the balance node p last said it stopped with in l,
// after since.
func lastBalance(l *lineLog, p spec.ProcID, since time.Time) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.lines) - 1; i >= 0 && !l.lines[i].at.Before(since); i-- {
		if m := balanceRe.FindStringSubmatch(l.lines[i].text); m != nil && m[1] == string(p) {
			b, err := strconv.ParseInt(m[2], 10, 64)
			return b, err == nil
		}
	}
	return 0, false
}

// describe writes the supervised run's faults, recoveries and times
// beside their documented bounds.
func (sf *supervisedFigures) describe(b *strings.Builder, f *figures) {
	total := 0
	for _, n := range sf.Faults {
		total += n
	}
	fmt.Fprintf(b, "  faults: %d kill -9 of a node, %d of a second node during the recovery, %d supervisors cut from etcd past their lease, %d etcd member kill -9 and restart (then a node killed); %d incarnations\n",
		sf.Faults["kill"], sf.Faults["kill-in-recovery"], sf.Faults["etcd-cut"], sf.Faults["etcd-kill"], sf.Incarnations)
	fmt.Fprintf(b, "  recoveries with no operator step: %d of %d (%d kills made again: the process was already stopping on its own)\n", sf.Automatic, total, sf.Retried)
	fmt.Fprintf(b, "  detection of a kill -9 (its supervisor names it dead): median %s, max %s (%d; bound: at once, the child's exit)\n",
		ms(median(sf.DetectKill)), ms(maxOf(sf.DetectKill)), len(sf.DetectKill))
	fmt.Fprintf(b, "  detection of a supervisor cut from etcd (another finds its lease gone): median %s, max %s (%d; bound %s: lease TTL + 0.5 s)\n",
		ms(median(sf.DetectLease)), ms(maxOf(sf.DetectLease)), len(sf.DetectLease), ms(leaseBound))
	fmt.Fprintf(b, "  restart (fault to every node running in the new incarnation): median %s, max %s (bound: the survivors' stop, %s at most, + the processes' start)\n",
		ms(median(f.Restart)), ms(maxOf(f.Restart)), ms(stopBound))
	fmt.Fprintf(b, "  recovery (fault to a new complete snapshot of the new incarnation): median %s, max %s\n", ms(median(f.Recovery)), ms(maxOf(f.Recovery)))
	if len(sf.EtcdRestart) > 0 {
		fmt.Fprintf(b, "  etcd member serving again after its restart: median %s, max %s\n", ms(median(sf.EtcdRestart)), ms(maxOf(sf.EtcdRestart)))
	}
	fmt.Fprintf(b, "  Suspect steps: %d, %d withdrawn\n", f.Suspicions, f.Withdrawn)
	fmt.Fprintf(b, "  histories: the one the last incarnation continues (%d incarnations, audited below); %d superseded incarnations audited as histories of their own, all conform; %d not (a node's log missing: killed as it started)\n",
		len(f.Points)+1, sf.BranchesAudited, sf.BranchesIncomplete)
}
