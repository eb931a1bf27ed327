package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// brokenBank is a bank whose config declares, besides Conservation, an
// invariant that every snapshot breaks and one that panics (a bug in the
// invariant itself): the node processes of TestNodeNeverSavesBrokenSnapshot
// (this test binary, run as markerwave node) know it by its kind.
type brokenBank struct{ app.BankParams }

func (b *brokenBank) Invariants(t *spec.Topology) []spec.Invariant {
	return append(b.BankParams.Invariants(t),
		spec.Invariant{Name: "NoMoneyAtP1", Check: func(s spec.AppSnapshot) error {
			return errors.New("P1 holds money") // every snapshot of the bank breaks it
		}},
		spec.Invariant{Name: "PanicsOnRead", Check: func(s spec.AppSnapshot) error {
			owners := map[spec.SnapID][]spec.ProcID{}
			return fmt.Errorf("owner %s", owners[s.Snap][len(owners)]) // index out of range: a bug in the invariant
		}})
}

func init() { app.Register("test-broken-bank", func() app.Params { return new(brokenBank) }) }

// TestNodeNeverSavesBrokenSnapshot: a node process that assembles a
// snapshot breaking one of its application's invariants reports it (each
// invariant broken or panicking by name, and the state that shows it) and
// never saves it: no global file, no catalog record, and recover has no
// recovery point (issue #20: the node logged the broken invariant but
// saved the snapshot, so recover could pick it). A panicking invariant is
// an error naming it, not a crash of the node. The nodes run 1.5 s.
func TestNodeNeverSavesBrokenSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs cluster nodes as OS processes")
	}
	t.Parallel() // it waits on processes and timers (waitersParallel)
	path := threeNodeConfig(t, `"kind": "bank"`, `"kind": "test-broken-bank"`, `"every_ms": 250`, `"every_ms": 100`,
		`"count": 3}`, `"count": 3}, "failures": {"timeout_ms": 20000, "drain_ms": 20000, "startup_ms": 20000}`) // no false suspicion on a loaded machine
	cfg, err := runtime.LoadConfig(path, "")
	require.NoError(t, err)
	nodes, logs := startNodeProcs(t, path, "1500ms")
	for _, id := range []string{"P1", "P2", "P3"} {
		err := nodes[id].Wait()
		if err == nil && regexp.MustCompile(id+`: error: snapshot`).MatchString(logs[id].String()) {
			t.Errorf("%s exited 0 although a snapshot it assembled was not saved", id)
		}
	}
	all := logs["P1"].String() + logs["P2"].String() + logs["P3"].String()
	t.Logf("node logs:\n%s", all)

	// Every assembly was reported, with both invariants and the state.
	saves := regexp.MustCompile(`(P\d): error: snapshot (\d+): not saved, so recover never picks it: snapshot \d+ breaks invariant "NoMoneyAtP1": P1 holds money\n`).FindAllStringSubmatch(all, -1)
	require.NotEmpty(t, saves, "no snapshot was assembled")
	for _, m := range saves {
		assert.Contains(t, all, m[1]+": snapshot "+m[2]+`: invariant "PanicsOnRead" panicked: runtime error: index out of range`)
		assert.Contains(t, all, m[1]+": in snapshot "+m[2]+" (initiated by ", "the state that shows it")
		assert.Regexp(t, m[1]+`:   P1 state \{"bal":\d+\}`, all)
		assert.Regexp(t, `markerwave node: node `+m[1]+` stopped with failures(\n  .*)*\n  snapshot `+m[2]+` not saved: it breaks NoMoneyAtP1, PanicsOnRead`, all, "the summary names it")
	}
	assert.NotContains(t, all, "complete: total", "no snapshot saved as complete")
	assert.NotContains(t, all, "goroutine ", "no node crashed")

	// Nothing of them entered the store's recoverable snapshots.
	st, err := store.Open(cfg.SnapshotDir)
	require.NoError(t, err)
	ids, err := st.List()
	require.NoError(t, err)
	assert.Empty(t, ids, "global snapshots saved")
	recs, err := st.Records(cfg.Topology)
	require.NoError(t, err)
	assert.Empty(t, recs)
	_, err = os.Stat(filepath.Join(cfg.SnapshotDir, "catalog.json"))
	assert.True(t, os.IsNotExist(err), "catalog written: %v", err)
	code, out, errs := runCmd(runRecover, "--config", path)
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "initial state", "recover has no snapshot to pick:\n%s", out)
}
