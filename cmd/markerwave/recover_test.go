package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow/sink/pgtest"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// TestMain lets recover --start run this test binary as markerwave: a
// child started with recoverChildEnv set runs the command in its
// arguments.
func TestMain(m *testing.M) {
	if os.Getenv(recoverChildEnv) == "1" {
		os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
	}
	waitersSideBySide()
	code := m.Run()
	pgtest.StopShared() // the PostgreSQL server of flowsink_test.go, if it started
	os.Exit(code)
}

// waitersParallel is how many of the tests marked t.Parallel run at
// once unless -parallel is given: they are the tests that wait on node
// processes, failure detectors and databases (TestRecoverAfterKill9,
// TestNodeFrozenPeer, ...), not ones that compute, so eight at a time on
// any machine rather than go test's one per core. They run after every
// sequential test (go test's order), so none of them meets a test that
// swaps a package hook (notifyStop, notifyInterrupt, progressEvery).
const waitersParallel = 8

// waitersSideBySide sets -test.parallel to waitersParallel unless the
// command line gave it.
func waitersSideBySide() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", fmt.Sprint(max(waitersParallel, goruntime.GOMAXPROCS(0))))
	}
}

func runCmd(run func([]string, io.Writer, io.Writer) int, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// clusterSnapshot is a snapshot of the sample cluster (three banks of
// 1000, complete graph) with 30 in flight on P1->P2.
func clusterSnapshot(t *testing.T, cfg *runtime.FileConfig, id spec.SnapID) snapshot.Global {
	t.Helper()
	top := cfg.Topology
	g := snapshot.Global{ID: id, Initiator: "P1", Topology: top}
	for _, p := range top.Procs {
		bal, sent := int64(1000), 0
		if p == "P1" {
			bal, sent = 970, 1
		}
		n := snapshot.NodeState{Proc: p, App: []byte(fmt.Sprintf(`{"bal":%d}`, bal)), State: spec.LocalState{Bal: bal, Sent: sent}}
		for _, c := range top.Out(p) {
			next := uint64(1)
			if c == (spec.Channel{From: "P1", To: "P2"}) {
				next = 2
			}
			n.NextSend = append(n.NextSend, snapshot.ChanSeq{Chan: c, Next: next})
		}
		g.Nodes = append(g.Nodes, n)
	}
	for _, c := range top.Chans {
		cs := snapshot.ChanState{Chan: c, NextRecv: 1}
		if c == (spec.Channel{From: "P1", To: "P2"}) {
			cs.Msgs = []snapshot.Msg{{Seq: 1, Amt: 30, Payload: []byte("30")}}
		}
		g.Chans = append(g.Chans, cs)
	}
	require.NoError(t, g.Validate())
	return g
}

// saveSnapshot stores g's parts (the first parts of them) and, if global,
// g itself, all saved (by the store's clock) at base + k minutes.
func saveSnapshot(t *testing.T, st *store.Store, g snapshot.Global, k, parts int, global bool) {
	t.Helper()
	when := time.Date(2026, 11, 30, 12, k, 0, 0, time.UTC)
	st.UseClock(func() time.Time { return when })
	defer st.UseClock(time.Now)
	for i, n := range g.Nodes[:parts] {
		p := snapshot.Part{Snap: g.ID, Initiated: n.Proc == g.Initiator, Node: g.Nodes[i]}
		for _, c := range g.Chans {
			if c.Chan.To == n.Proc {
				p.In = append(p.In, c)
			}
		}
		_, err := st.SavePart(p)
		require.NoError(t, err)
	}
	if global {
		_, err := st.Save(g)
		require.NoError(t, err)
	}
}

// recoverFixture is the sample config with a store holding snapshot 7
// (complete, saved first), 9 (complete: the recovery point) and 11 (only
// P1's part: never completed).
func recoverFixture(t *testing.T, edits ...string) (path string, cfg *runtime.FileConfig) {
	t.Helper()
	path = nodeConfig(t, edits...)
	cfg, err := runtime.LoadConfig(path, "")
	require.NoError(t, err)
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	saveSnapshot(t, st, clusterSnapshot(t, cfg, 7), 1, 3, true)
	saveSnapshot(t, st, clusterSnapshot(t, cfg, 9), 2, 3, true)
	saveSnapshot(t, st, clusterSnapshot(t, cfg, 11), 3, 1, false)
	return path, cfg
}

func TestSnapshotsLists(t *testing.T) {
	path, cfg := recoverFixture(t)
	code, out, errs := runCmd(runSnapshots, "--config", path)
	require.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
	assert.Equal(t, cfg.SnapshotDir+`: 3 snapshots
  ID                   SAVED (UTC)             STATE
  7                    2026-11-30 12:01:00.000 complete, total 3000 (30 in flight)
  9                    2026-11-30 12:02:00.000 complete, total 3000 (30 in flight)  <- recovery point
  11                   2026-11-30 12:03:00.000 incomplete: no part of P2, P3
`, out)

	code, out, errs = runCmd(runSnapshots, "--dir", cfg.SnapshotDir, "--json")
	require.Equal(t, exitOK, code, errs)
	var v struct {
		Dir       string
		Snapshots []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.NotContains(t, out, "recovery_point", "no topology, no recovery point")
	require.Len(t, v.Snapshots, 3)
	files := v.Snapshots[0]["part_files"].([]any)
	require.Len(t, files, 3)
	for i, f := range files {
		f := f.(map[string]any)
		assert.Equal(t, fmt.Sprintf("P%d", i+1), f["proc"])
		assert.Positive(t, f["size"])
		assert.Len(t, f["sha256"], 64)
	}
	delete(v.Snapshots[0], "part_files")
	assert.Equal(t, map[string]any{"id": 7.0, "time": "2026-11-30T12:01:00Z", "complete": true, "total": 3000.0, "in_flight": 30.0,
		"parts": []any{"P1", "P2", "P3"}}, v.Snapshots[0])
	assert.Len(t, v.Snapshots[2]["part_files"], 1)
	delete(v.Snapshots[2], "part_files")
	assert.Equal(t, map[string]any{"id": 11.0, "time": "2026-11-30T12:03:00Z", "complete": false, "parts": []any{"P1"}}, v.Snapshots[2])

	code, out, _ = runCmd(runSnapshots, "--config", path, "--json")
	require.Equal(t, exitOK, code)
	assert.Contains(t, out, `"recovery_point":9`)
}

func TestSnapshotsErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give either --dir or --config"},
		{[]string{"--dir", "a", "--config", "b"}, "give either --dir or --config"},
		{[]string{"--dir", "a", "b"}, `unexpected argument "b"`},
	} {
		code, out, errs := runCmd(runSnapshots, tc.args...)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Empty(t, out)
		assert.Equal(t, "markerwave snapshots: "+tc.want+"\nrun 'markerwave snapshots --help' for usage\n", errs)
	}
	absent := filepath.Join(t.TempDir(), "none")
	code, out, errs := runCmd(runSnapshots, "--dir", absent)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "markerwave snapshots: no snapshot store at "+absent+": the directory does not exist\n", errs)

	// a directory of other files is no empty store (snapshots --dir /etc)
	foreign := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(foreign, "hosts"), nil, 0o644))
	code, out, errs = runCmd(runSnapshots, "--dir", foreign)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Equal(t, "markerwave snapshots: "+foreign+" is not a snapshot store: it holds 1 entry (hosts) and none of a store's (snap-<id>.json, parts/, catalog.json)\n", errs)

	code, out, errs = runCmd(runSnapshots, "-h")
	assert.Equal(t, exitOK, code)
	assert.Empty(t, errs)
	assert.True(t, strings.HasPrefix(out, "usage: markerwave snapshots (--dir DIR | --config FILE [--keep N]) [--json]\n"), out)
	for _, f := range []string{"-dir DIR", "-config FILE", "-json", "-keep N"} {
		assert.Contains(t, out, f)
	}
}

func TestRecoverPicksLatestComplete(t *testing.T) {
	path, _ := recoverFixture(t)
	code, out, errs := runCmd(runRecover, "--config", path)
	require.Equal(t, exitOK, code, errs)
	assert.Empty(t, errs)
	assert.Equal(t, `recovery point: snapshot 9 (saved 2026-11-30 12:02:00.000 UTC), held complete by every node: total 3000 (30 in flight)
  passed over snapshot 11 (saved 2026-11-30 12:03:00.000 UTC): P2 holds no part of it; P3 holds no part of it; no node assembled it (no global snapshot file): it never completed, or was aborted
restart every node from it (each a new incarnation), once the surviving nodes are stopped:
  markerwave node --config `+path+` --id P1 --restore 9
  markerwave node --config `+path+` --id P2 --restore 9
  markerwave node --config `+path+` --id P3 --restore 9
`, out)

	code, out, errs = runCmd(runRecover, "--config", path, "--json")
	require.Equal(t, exitOK, code, errs)
	var v struct {
		From     struct{ ID spec.SnapID }
		Passed   []struct{ Why []string } `json:"passed_over"`
		Commands []restartCommand
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.Equal(t, spec.SnapID(9), v.From.ID)
	require.Len(t, v.Passed, 1)
	assert.Len(t, v.Passed[0].Why, 3)
	require.Len(t, v.Commands, 3)
	assert.Equal(t, []string{"node", "--config", path, "--id", "P2", "--restore", "9"}, v.Commands[1].Args)
}

// With no snapshot complete at every node, recovery restarts from the
// initial state, and says so.
func TestRecoverFromInitialState(t *testing.T) {
	path := nodeConfig(t)
	cfg, err := runtime.LoadConfig(path, "")
	require.NoError(t, err)
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	saveSnapshot(t, st, clusterSnapshot(t, cfg, 5), 1, 2, true) // assembled, P3's part lost
	code, out, errs := runCmd(runRecover, "--config", path)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "recovery point: the initial state (no snapshot is held complete by every node)\n")
	assert.Contains(t, out, "passed over snapshot 5 (saved 2026-11-30 12:01:00.000 UTC): P3 holds no part of it\n")
	assert.Contains(t, out, "  markerwave node --config "+path+" --id P3\n")
}

func TestRecoverErrors(t *testing.T) {
	a := freeAddrs(t, 3)
	path, cfg := recoverFixture(t, `"127.0.0.1:7101"`, `"`+a[0]+`"`, `"127.0.0.1:7102"`, `"`+a[1]+`"`, `"127.0.0.1:7103"`, `"`+a[2]+`"`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--config is required"},
		{[]string{"--config", path, "x"}, `unexpected argument "x"`},
		{[]string{"--config", path, "--duration", "1s"}, "--duration needs --start"},
		{[]string{"--config", path, "--start", "--duration", "-1s"}, "--duration must not be negative"},
	} {
		code, out, errs := runCmd(runRecover, tc.args...)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Empty(t, out)
		assert.Equal(t, "markerwave recover: "+tc.want+"\nrun 'markerwave recover --help' for usage\n", errs)
	}
	code, _, errs := runCmd(runRecover, "--config", nodeConfig(t))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "markerwave recover: no snapshot store at ")

	// A node still listening: --start refuses, naming it.
	addr := cfg.Nodes["P2"].Listen
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	defer ln.Close()
	code, _, errs = runCmd(runRecover, "--config", path, "--start")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errs, "markerwave recover: P2's address "+addr+" is in use (is P2 still running?)")
	assert.Contains(t, errs, "markerwave recover: stop the surviving nodes first")
	// Issue #20: its advice, SIGTERM, does nothing to a stopped process.
	assert.Contains(t, errs, "a stopped process (kill -STOP, Ctrl-Z) acts on SIGTERM only once continued (kill -CONT), or end it with SIGKILL")
}

// TestAuditRestoredRun: audit --json of a run with a restore says how
// many incarnations it audited, and a recovery from an incomplete
// snapshot names RecoveredFromComplete at the restore line.
func TestAuditRestoredRun(t *testing.T) {
	code, vs, errs := auditJSONLines(t, "../../traces/conforms/crash-recovery.jsonl", "../../traces/rejects/RecoveredFromComplete-incomplete-snapshot.jsonl")
	assert.Equal(t, exitFail, code, errs)
	require.Len(t, vs, 2)
	assert.True(t, vs[0].OK)
	assert.Equal(t, 2, vs[0].Incarnations)
	assert.Equal(t, 14, vs[0].Steps)
	assert.False(t, vs[1].OK)
	assert.Equal(t, spec.PropRecoveredFromComplete, vs[1].Property)
	require.NotNil(t, vs[1].Divergence)
	assert.Equal(t, "Restore(1) to incarnation 2", vs[1].Divergence.Action)
	assert.Equal(t, 9, vs[1].Divergence.Line, "the restore line")
}

// TestSnapshotsKeep: snapshots --config --keep N removes the snapshots
// older than the last N recoverable ones, naming each, and lists the
// rest; bad uses are usage errors.
func TestSnapshotsKeep(t *testing.T) {
	path, cfg := recoverFixture(t)
	code, out, errs := runCmd(runSnapshots, "--config", path, "--keep", "1")
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, "markerwave snapshots: removed snapshot 7 (older than the last 1 recoverable snapshot)\n", errs)
	assert.Contains(t, out, cfg.SnapshotDir+": 2 snapshots\n")
	assert.NotContains(t, out, "\n  7 ")
	_, err := os.Stat(filepath.Join(cfg.SnapshotDir, "parts", "7"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	code, _, errs = runCmd(runSnapshots, "--dir", cfg.SnapshotDir, "--keep", "1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--keep needs --config")
	code, _, errs = runCmd(runSnapshots, "--config", path, "--keep", "-1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--keep must not be negative")
}

// TestRecoverCatalogDisagrees: a catalog file that disagrees with the
// parts on disk (here a part removed after the catalog was written) is
// bad input named as such: recover warns, naming each disagreement, and
// still picks its point from the parts on disk, each checked against its
// own checksum; nothing is removed or rewritten (issue #20, "Done when").
func TestRecoverCatalogDisagrees(t *testing.T) {
	path, cfg := recoverFixture(t)
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	require.NoError(t, st.WriteCatalog(cfg.Topology))
	catalog, err := os.ReadFile(filepath.Join(cfg.SnapshotDir, "catalog.json"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(st.PartPath(9, "P2")))

	code, out, errs := runCmd(runRecover, "--config", path)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, errs, "markerwave recover: warning: ")
	assert.Contains(t, errs, "catalog.json disagrees with the parts on disk")
	assert.Contains(t, errs, "snapshot 9", "the disagreement names the snapshot:\n%s", errs)
	assert.Contains(t, errs, "the recovery point below is chosen from the parts on disk")
	assert.Contains(t, out, "recovery point: snapshot 7 ", "9 lacks P2's part now: the point is 7")
	after, err := os.ReadFile(filepath.Join(cfg.SnapshotDir, "catalog.json"))
	require.NoError(t, err)
	assert.Equal(t, catalog, after, "the catalog is left as it was")
	_, err = os.Stat(st.PartPath(9, "P1"))
	assert.NoError(t, err, "no part removed")
}
