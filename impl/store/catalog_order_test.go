package store_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// sixSnapshots is a store of six complete snapshots saved a minute apart
// (ids drawn out of order, as fresh runs draw them), the last, 17, the
// recovery point.
func sixSnapshots(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "snaps"))
	require.NoError(t, err)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for k, id := range []spec.SnapID{40, 3, 25, 9, 31, 17} {
		saveAt(t, st, base, k, sample(id), 3, true)
	}
	return st
}

func recoveryPoint(t *testing.T, st *store.Store) spec.SnapID {
	t.Helper()
	r, err := st.LatestComplete(spec.Ring(3))
	require.NoError(t, err)
	require.NotNil(t, r.From)
	return r.From.ID
}

// TestCatalogSurvivesCopy: after `cp -r` of the store (every file's
// modification time now that of the copy), the recovery point is still
// the snapshot taken last, by the snapshots' own records. Issue #20: five
// of six snapshots shared one time and the choice was arbitrary.
func TestCatalogSurvivesCopy(t *testing.T) {
	st := sixSnapshots(t)
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-r", st.Dir(), dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r: %v: %s", err, out)
	}
	// And the same modification time for every file, as a copy within
	// one clock tick gives.
	same := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(path, same, same)
	}))
	cp, err := store.Open(dst)
	require.NoError(t, err)
	assert.Equal(t, spec.SnapID(17), recoveryPoint(t, cp))
	entries, err := cp.Catalog(spec.Ring(3))
	require.NoError(t, err)
	var ids []spec.SnapID
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []spec.SnapID{40, 3, 25, 9, 31, 17}, ids, "the order the snapshots were taken in")
}

// TestCatalogIgnoresTouch: a `touch` of the oldest snapshot's files does
// not make it the recovery point (issue #20: it did).
func TestCatalogIgnoresTouch(t *testing.T) {
	st := sixSnapshots(t)
	later := time.Now().Add(time.Hour)
	for _, path := range []string{st.Path(40), st.PartPath(40, "P1"), st.PartPath(40, "P2"), st.PartPath(40, "P3")} {
		require.NoError(t, os.Chtimes(path, later, later))
	}
	assert.Equal(t, spec.SnapID(17), recoveryPoint(t, st))
}

// TestCatalogNamesDamagedPart: with P2's part of the latest snapshot
// emptied, that part is named as damaged and P1's and P3's as intact, and
// recovery falls back to the snapshot before (issue #20 said "P1 holds no
// part of it; P2 holds no part of it; P3 holds no part of it").
func TestCatalogNamesDamagedPart(t *testing.T) {
	st := sixSnapshots(t)
	require.NoError(t, os.WriteFile(st.PartPath(17, "P2"), nil, 0o644))
	r, err := st.LatestComplete(spec.Ring(3))
	require.NoError(t, err)
	require.NotNil(t, r.From)
	assert.Equal(t, spec.SnapID(31), r.From.ID)
	require.Len(t, r.Passed, 1)
	why := r.Passed[0].Why
	require.Len(t, why, 2, "%q", why)
	assert.Contains(t, why[0], "P2's part is damaged")
	assert.Contains(t, why[0], st.PartPath(17, "P2"))
	assert.Contains(t, why[0], "empty file")
	assert.Equal(t, "intact: the parts of P1, P3", why[1])
	e := r.Passed[0].Entry
	assert.Equal(t, []spec.ProcID{"P1", "P3"}, e.Parts)
	assert.Equal(t, []spec.ProcID{"P2"}, e.Damaged)
	assert.Empty(t, e.Missing)
	assert.Contains(t, e.String(), "damaged: P2's part is damaged")
}

// TestPrune: retention keeps the last N recoverable snapshots and removes
// the older ones, global files and parts, and leaves newer incomplete
// ones alone.
func TestPrune(t *testing.T) {
	st := sixSnapshots(t)
	base := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	saveAt(t, st, base, 0, sample(50), 2, false) // under way
	_, err := st.Prune(spec.Ring(3), 0)
	assert.ErrorContains(t, err, "at least 1")

	removed, err := st.Prune(spec.Ring(3), 2)
	require.NoError(t, err)
	assert.Equal(t, []spec.SnapID{40, 3, 25, 9}, removed)
	used, err := st.Used()
	require.NoError(t, err)
	assert.Equal(t, []spec.SnapID{17, 31, 50}, used)
	_, err = os.Stat(filepath.Dir(st.PartPath(40, "P1")))
	assert.ErrorIs(t, err, fs.ErrNotExist, "the parts are removed too")

	removed, err = st.Prune(spec.Ring(3), 5)
	require.NoError(t, err)
	assert.Empty(t, removed, "fewer than 5 recoverable: nothing removed")
}

// TestCatalogFile: the operator mode's catalog file records every
// recoverable snapshot with each part's size and checksum; a part that
// changed on disk since is named as a disagreement; pruning rewrites it.
func TestCatalogFile(t *testing.T) {
	st := sixSnapshots(t)
	_, err := st.ReadCatalog()
	assert.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, st.WriteCatalog(spec.Ring(3)))
	rs, err := st.ReadCatalog()
	require.NoError(t, err)
	require.Len(t, rs, 6)
	assert.Equal(t, spec.SnapID(17), rs[5].ID)
	require.Len(t, rs[5].Parts, 3)
	assert.Len(t, rs[5].Parts[1].SHA256, 64)
	require.NoError(t, st.CheckCatalog(spec.Ring(3)))

	require.NoError(t, os.WriteFile(st.PartPath(31, "P3"), nil, 0o644))
	err = st.CheckCatalog(spec.Ring(3))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "catalog.json disagrees with the parts on disk")
	assert.Contains(t, err.Error(), "snapshot 31 is recorded as complete but is not complete on disk")

	_, err = st.Prune(spec.Ring(3), 1)
	require.NoError(t, err)
	rs, err = st.ReadCatalog()
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, spec.SnapID(17), rs[0].ID)
	require.NoError(t, st.CheckCatalog(spec.Ring(3)))

	require.NoError(t, os.WriteFile(filepath.Join(st.Dir(), store.CatalogFileName), []byte("{"), 0o644))
	_, err = st.ReadCatalog()
	assert.ErrorIs(t, err, store.ErrCorrupt)
	assert.ErrorContains(t, err, store.CatalogFileName)
}
