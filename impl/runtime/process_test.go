package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

func sampleConfig(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/cluster.json")
	require.NoError(t, err)
	return b
}

func TestParseSampleConfig(t *testing.T) {
	cfg, err := mwrt.ParseConfig(sampleConfig(t))
	require.NoError(t, err)
	assert.Len(t, cfg.Topology.Chans, 6)
	assert.Equal(t, "127.0.0.1:7102", cfg.Nodes["P2"].Listen)
	assert.Equal(t, int64(3000), cfg.Header().InitBal["P1"]+cfg.Header().InitBal["P2"]+cfg.Header().InitBal["P3"])
}

// testConfig is the sample config writing under dir, with a short
// workload and free loopback ports (fresh listeners for each run).
func testConfig(t *testing.T, dir string) *mwrt.FileConfig {
	cfg, err := mwrt.ParseConfig(sampleConfig(t))
	require.NoError(t, err)
	cfg.TraceDir = filepath.Join(dir, "nodes")
	cfg.SnapshotDir = filepath.Join(dir, "snaps")
	cfg.Workload.Transfers = 150
	cfg.Workload.PauseMS = 1
	cfg.Snapshots.EveryMS = 60
	return cfg
}

// runNodes runs every node of cfg as RunProcess (each with its own TCP
// transport serving only itself) for at least d, and until every
// initiator of cfg's schedule has started its snapshots (a node that
// starts late on a loaded machine would otherwise be stopped before its
// last one: the tests count them), at most a minute; it returns their log
// and errors.
func runNodes(t *testing.T, cfg *mwrt.FileConfig, st *store.Store, d time.Duration, from *snapshot.Global) (string, []error) {
	t.Helper()
	log, errs := runNodesAsIs(t, cfg, st, d, from)
	for _, err := range errs {
		// Processes stop at slightly different moments; frames to a
		// stopped peer are reported, not lost. No other error is expected.
		if err != nil {
			assert.Contains(t, err.Error(), "unacknowledged")
			assert.NotContains(t, err.Error(), "node errors")
		}
	}
	assert.NotContains(t, log, "error:")
	return log, errs
}

// runNodesAsIs is runNodes without its checks of the outcome.
func runNodesAsIs(t *testing.T, cfg *mwrt.FileConfig, st *store.Store, d time.Duration, from *snapshot.Global) (string, []error) {
	t.Helper()
	lns := map[spec.ProcID]net.Listener{}
	for _, p := range cfg.Topology.Procs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[p] = ln
		cfg.Nodes[p] = mwrt.NodeAddress{Listen: ln.Addr().String()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		log strings.Builder
	)
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(b) })
	go stopWhenScheduled(ctx, cancel, d, cfg.Snapshots, func() string { mu.Lock(); defer mu.Unlock(); return log.String() })
	errs := make([]error, len(cfg.Topology.Procs))
	for i, p := range cfg.Topology.Procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = mwrt.RunProcess(ctx, cfg, p, mwrt.ProcessOptions{Store: st, Out: w, Listener: lns[p], From: from})
		}()
	}
	wg.Wait()
	t.Log(log.String())
	return log.String(), errs
}

// stopWhenScheduled calls cancel once d has passed and the log holds
// the start (or the refusal) of every snapshot of sched: each initiator's
// Count.
func stopWhenScheduled(ctx context.Context, cancel func(), d time.Duration, sched *mwrt.Schedule, log func() string) {
	want := 0
	if sched != nil {
		want = sched.Count * len(sched.Initiators)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		l := log()
		if strings.Count(l, ": initiated snapshot ")+strings.Count(l, ": initiate ") >= want {
			cancel()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Three node processes (here goroutines) form a cluster from one config;
// their parts are persisted and the global snapshots assembled on disk
// conserve money.
func TestRunProcessCluster(t *testing.T) {
	checkNoLeak(t)
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	log, _ := runNodes(t, cfg, st, 1500*time.Millisecond, nil)
	storedTotals(t, st, 3000)
	assert.Regexp(t, `snapshot \d+ complete: total 3000 .*; Conservation holds`, log, "the bank's invariant is checked on every assembled snapshot")
	assert.NotContains(t, log, "breaks invariant")
	_, err = mwrt.MergeTraces(cfg.TraceDir, cfg.Header(), nil, filepath.Join(dir, "trace.jsonl"))
	assert.NoError(t, err)

	err = mwrt.RunProcess(context.Background(), cfg, "P7", mwrt.ProcessOptions{Store: st})
	assert.ErrorContains(t, err, "config: --id P7 is not a process of the topology (P1, P2, P3)")
}

// storedTotals checks that st holds the six snapshots of testConfig's
// schedule (three from each of P1 and P3), each totalling total.
func storedTotals(t *testing.T, st *store.Store, total int64) {
	t.Helper()
	ids, err := st.List()
	require.NoError(t, err)
	assert.Len(t, ids, 6, "3 snapshots from each of P1 and P3")
	for _, id := range ids {
		g, err := st.Load(id)
		require.NoError(t, err)
		assert.Equal(t, total, g.Total(), "%s", g)
	}
}

// The runtime runs any registered application kind: here the token
// ring, whose snapshots hold exactly one token.
func TestRunProcessToken(t *testing.T) {
	checkNoLeak(t)
	cfg := testConfig(t, t.TempDir())
	cfg.App = mwrt.AppConfig{Kind: "token", Params: &app.TokenParams{Holder: "P2"}}
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	log, _ := runNodes(t, cfg, st, 900*time.Millisecond, nil)
	assert.NotRegexp(t, `P2: stopped: balance \d+, sent 0,`, log, "the holder passed the token on")
	storedTotals(t, st, 1)
	assert.Contains(t, log, "; OneToken holds")
	assert.NotContains(t, log, "breaks invariant")
}

// Two fresh runs of the same cluster into one snapshot directory (the
// README's commands run twice), then a run restored from one of the first
// run's snapshots: every run takes ids of its own, so no snapshot is
// assembled from parts of different runs and no file is overwritten.
func TestRunProcessRunsNeverMix(t *testing.T) {
	checkNoLeak(t)
	cfg := testConfig(t, t.TempDir())
	cfg.TraceDir = ""
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	files := func() map[string][]byte {
		out := map[string][]byte{}
		err := filepath.WalkDir(st.Dir(), func(path string, d os.DirEntry, err error) error {
			// The catalog file is rewritten after each complete snapshot
			// by design; the snapshot files never are.
			if err == nil && d.Type().IsRegular() && d.Name() != store.CatalogFileName {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				out[path] = b
			}
			return err
		})
		require.NoError(t, err)
		return out
	}
	var runs [][]spec.SnapID
	seen := map[spec.SnapID]int{}
	run := func(from *snapshot.Global) {
		before := files()
		runNodes(t, cfg, st, 900*time.Millisecond, from)
		used, err := st.Used()
		require.NoError(t, err)
		var ids []spec.SnapID
		for _, id := range used {
			if _, old := seen[id]; !old {
				seen[id] = len(runs)
				ids = append(ids, id)
			}
		}
		runs = append(runs, ids)
		assert.Len(t, ids, 6, "run %d: 3 snapshots from each of P1 and P3, all new ids", len(runs))
		after := files()
		for path, b := range before {
			assert.Equal(t, b, after[path], "run %d changed %s", len(runs), path)
		}
		// The ids of one run share their initiator's run tag.
		tags := map[uint64]bool{}
		for _, id := range ids {
			tags[uint64(id)>>mwrt.SnapSeqBits] = true
		}
		assert.Len(t, tags, 2, "one tag per initiator (P1, P3) and run")
	}
	run(nil)
	run(nil)
	first, err := st.Load(runs[0][0])
	require.NoError(t, err)
	run(&first)
	for k, ids := range runs {
		for _, id := range ids {
			g, err := st.Load(id)
			require.NoError(t, err, "run %d snapshot %d", k, id)
			assert.Equal(t, int64(3000), g.Total(), "%s", g)
			parts, missing, err := st.LoadParts(cfg.Topology, id)
			require.NoError(t, err)
			assert.Empty(t, missing)
			a, err := snapshot.Assemble(cfg.Topology, id, parts)
			require.NoError(t, err)
			assert.Equal(t, g.Abstract(), a.Abstract())
		}
	}
	for _, id := range runs[2] {
		assert.Greater(t, id, first.ID, "a restored run's ids lie above the snapshot it restored")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// brokenBank is a bank that declares, besides Conservation, an invariant
// every snapshot breaks and one that panics.
type brokenBank struct{ *app.BankParams }

func (b brokenBank) Invariants(t *spec.Topology) []spec.Invariant {
	return append(b.BankParams.Invariants(t),
		spec.Invariant{Name: "NoMoneyAtP1", Check: func(spec.AppSnapshot) error { return errors.New("P1 holds money") }},
		spec.Invariant{Name: "PanicsOnRead", Check: func(s spec.AppSnapshot) error {
			owners := map[spec.SnapID][]spec.ProcID{}
			return fmt.Errorf("owner %s", owners[s.Snap][len(owners)]) // index out of range: a bug in the invariant
		}})
}

// A node process never saves a snapshot that breaks an invariant of its
// application (as the Collector hands it back unsaved): it names each
// invariant broken or panicking and the state that shows it, the global
// file is never written, and its summary names the snapshot (issue #20).
func TestRunProcessNeverSavesBrokenSnapshot(t *testing.T) {
	checkNoLeak(t)
	cfg := testConfig(t, t.TempDir())
	cfg.App.Params = brokenBank{cfg.App.Params.(*app.BankParams)}
	cfg.Snapshots.Count = 1
	// No false suspicion on a loaded machine: every snapshot completes.
	cfg.Failures = &mwrt.Failures{HeartbeatMS: 100, TimeoutMS: 20000, DrainMS: 20000, StartupMS: 20000}
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	log, errs := runNodesAsIs(t, cfg, st, 300*time.Millisecond, nil)
	assert.Regexp(t, `error: snapshot \d+: not saved, so recover never picks it: snapshot \d+ breaks invariant "NoMoneyAtP1": P1 holds money`, log)
	assert.Regexp(t, `invariant "PanicsOnRead" panicked: runtime error: index out of range`, log)
	assert.Regexp(t, `P\d:   P1 state \{"bal":\d+\}`, log, "the state that shows it")
	assert.NotContains(t, log, " complete: total ")
	ids, err := st.List()
	require.NoError(t, err)
	assert.Empty(t, ids, "a snapshot that breaks an invariant was saved")
	for _, m := range regexp.MustCompile(`(P\d): error: snapshot (\d+): not saved`).FindAllStringSubmatch(log, -1) {
		err := errs[cfg.Topology.ProcIndex(spec.ProcID(m[1]))]
		require.Error(t, err, "%s assembled snapshot %s and stopped cleanly", m[1], m[2])
		assert.Contains(t, err.Error(), "\n  snapshot "+m[2]+" not saved: it breaks NoMoneyAtP1, PanicsOnRead", "its summary names it")
	}
}
