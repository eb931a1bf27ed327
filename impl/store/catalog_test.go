package store_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/snapshot/snapshottest"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// TestCatalog: the catalog lists every snapshot the store holds anything
// of, oldest first, saying which are complete (with their totals), which
// have only some parts (naming the missing processes given a topology)
// and which are damaged, naming the file.
func TestCatalog(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "snaps"))
	require.NoError(t, err)
	entries, err := st.Catalog(spec.Ring(3))
	require.NoError(t, err)
	assert.Empty(t, entries)

	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// 7: complete, saved last; 12: complete, saved first; 5: two parts
	// of three; 9: a damaged global file (its header gone: no time).
	for _, c := range []struct {
		id spec.SnapID
		k  int
	}{{7, 3}, {12, 1}} {
		saveAt(t, st, base, c.k, sample(c.id), 3, true)
	}
	saveAt(t, st, base, 2, sample(5), 2, false)
	path, err := st.Save(sample(9))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o644))

	entries, err = st.Catalog(spec.Ring(3))
	require.NoError(t, err)
	require.Len(t, entries, 4)
	all := []spec.ProcID{"P1", "P2", "P3"}
	assert.Equal(t, spec.SnapID(9), entries[0].ID, "a file without a recorded time sorts first")
	entries = append(entries[1:], entries[0])
	assert.Len(t, entries[0].Files, 3)
	for i, f := range entries[0].Files {
		assert.Equal(t, all[i], f.Proc)
		assert.Positive(t, f.Size)
		assert.Len(t, f.SHA256, 64)
		assert.Equal(t, base.Add(time.Minute), f.Taken)
		assert.Empty(t, f.Problem)
	}
	assert.Equal(t, store.Entry{ID: 12, Time: base.Add(time.Minute), Complete: true, Total: 300, InFlight: 30, Parts: all}, noFiles(entries[0]))
	assert.Equal(t, store.Entry{ID: 5, Time: base.Add(2 * time.Minute), Parts: all[:2], Missing: all[2:]}, noFiles(entries[1]))
	assert.Equal(t, "incomplete: no part of P3", entries[1].String())
	assert.Equal(t, store.Entry{ID: 7, Time: base.Add(3 * time.Minute), Complete: true, Total: 300, InFlight: 30, Parts: all}, noFiles(entries[2]))
	assert.Equal(t, "complete, total 300 (30 in flight)", entries[2].String())
	assert.True(t, entries[2].Holds("P2"))
	assert.Equal(t, spec.SnapID(9), entries[3].ID)
	assert.False(t, entries[3].Complete)
	assert.Contains(t, entries[3].Problem, "snap-9.json")
	assert.ErrorIs(t, func() error { _, err := st.Load(9); return err }(), store.ErrCorrupt)
	assert.Contains(t, entries[3].String(), "damaged: ")

	// Without a topology, the parts are listed by their file names.
	bare, err := st.Catalog(nil)
	require.NoError(t, err)
	require.Len(t, bare, 4)
	assert.Equal(t, all[:2], bare[2].Parts)
	assert.Empty(t, bare[2].Missing)
	assert.Equal(t, "incomplete: parts of P1, P2 stored, not assembled", bare[2].String())

	// Another topology: the global snapshots are not its.
	other, err := st.Catalog(spec.Complete(3))
	require.NoError(t, err)
	assert.Contains(t, other[1].Problem, "another topology")
}

// saveAt saves g's first parts parts and, if global, g, by a store
// clock reading base + k minutes.
func saveAt(t *testing.T, st *store.Store, base time.Time, k int, g snapshot.Global, parts int, global bool) {
	t.Helper()
	st.UseClock(func() time.Time { return base.Add(time.Duration(k) * time.Minute) })
	defer st.UseClock(time.Now)
	for _, p := range snapshottest.Parts(g)[:parts] {
		_, err := st.SavePart(p)
		require.NoError(t, err)
	}
	if global {
		_, err := st.Save(g)
		require.NoError(t, err)
	}
}

// noFiles is e without its part files (compared on their own).
func noFiles(e store.Entry) store.Entry {
	e.Files = nil
	return e
}

// TestLatestComplete: recovery picks the snapshot saved last among those
// complete at every node, passing over newer ones that are incomplete
// (naming the nodes without a part), damaged, or missing a node's part;
// with none complete, it restarts from the initial state.
func TestLatestComplete(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "snaps"))
	require.NoError(t, err)
	r, err := st.LatestComplete(spec.Ring(3))
	require.NoError(t, err)
	assert.Equal(t, store.Recovery{}, r)

	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	save := func(g snapshot.Global, k int, parts int, global bool) { saveAt(t, st, base, k, g, parts, global) }
	save(sample(30), 1, 3, true)  // complete, the oldest
	save(sample(20), 2, 3, true)  // complete: the one to pick (a lower id, saved later)
	save(sample(40), 3, 1, false) // P1's part only: never completed
	save(sample(50), 4, 2, true)  // assembled, but P3's part is gone
	r, err = st.LatestComplete(spec.Ring(3))
	require.NoError(t, err)
	require.NotNil(t, r.From)
	assert.Equal(t, spec.SnapID(20), r.From.ID, "recovery picks the last saved snapshot that every node holds complete")
	require.Len(t, r.Passed, 2)
	assert.Equal(t, spec.SnapID(50), r.Passed[0].Entry.ID)
	assert.Equal(t, []string{"P3 holds no part of it"}, r.Passed[0].Why)
	assert.Equal(t, spec.SnapID(40), r.Passed[1].Entry.ID)
	assert.Equal(t, []string{"P2 holds no part of it", "P3 holds no part of it",
		"no node assembled it (no global snapshot file): it never completed, or was aborted"}, r.Passed[1].Why)

	// Damage snapshot 20 (its header gone, its time is its parts'):
	// recovery falls back to 30.
	require.NoError(t, os.WriteFile(st.Path(20), []byte("x"), 0o644))
	r, err = st.LatestComplete(spec.Ring(3))
	require.NoError(t, err)
	require.NotNil(t, r.From)
	assert.Equal(t, spec.SnapID(30), r.From.ID)
	require.Len(t, r.Passed, 3)
	assert.Equal(t, spec.SnapID(20), r.Passed[2].Entry.ID)
	require.Len(t, r.Passed[2].Why, 1)
	assert.Contains(t, r.Passed[2].Why[0], "snap-20.json")
	assert.Contains(t, r.Passed[2].Why[0], "corrupt")

	// Nothing complete: restart from the initial state.
	only, err := store.Open(filepath.Join(t.TempDir(), "other"))
	require.NoError(t, err)
	for _, p := range snapshottest.Parts(sample(9))[:2] {
		_, err := only.SavePart(p)
		require.NoError(t, err)
	}
	r, err = only.LatestComplete(spec.Ring(3))
	require.NoError(t, err)
	assert.Nil(t, r.From)
	require.Len(t, r.Passed, 1)
}
