package store_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// An abort record round-trips, is never replaced by a different one,
// makes the catalog say the snapshot aborted in the verdict's words
// (with its time when no part is stored), makes recovery pass it over
// saying so, and a damaged record is named, not read.
func TestAborts(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "snaps"))
	require.NoError(t, err)
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	st.UseClock(func() time.Time { return at })
	topo := spec.Ring(3)
	none, err := st.Aborts(3)
	require.NoError(t, err)
	assert.Empty(t, none)

	v := spec.AbortVerdict{Snap: 3, Cause: "P1", Initiator: "P1", By: "P2"}
	path, err := st.SaveAbort(v)
	require.NoError(t, err)
	assert.Equal(t, st.AbortPath(3, "P2"), path)
	_, err = st.SaveAbort(v)
	require.NoError(t, err, "the same record again is a no-op")
	_, err = st.SaveAbort(spec.AbortVerdict{Snap: 3, Cause: "P3", By: "P2"})
	assert.ErrorIs(t, err, store.ErrExists)
	_, err = st.SaveAbort(spec.AbortVerdict{Snap: 3, Cause: "P3", By: "../x"})
	assert.Error(t, err, "a malformed node id is refused")
	got, err := st.Aborts(3)
	require.NoError(t, err)
	assert.Equal(t, []spec.AbortVerdict{v}, got)

	_, err = st.SavePart(snapshot.Part{Snap: 5, Node: snapshot.NodeState{Proc: "P3"}})
	require.NoError(t, err)
	ents, err := st.Catalog(topo)
	require.NoError(t, err)
	require.Len(t, ents, 2)
	assert.Equal(t, spec.SnapID(3), ents[0].ID)
	assert.Equal(t, at, ents[0].Time, "no part stored: the abort's time")
	assert.Equal(t, "aborted: its initiator P1 is suspected (crashed or unreachable)", ents[0].String())
	r, err := st.LatestComplete(topo)
	require.NoError(t, err)
	require.Len(t, r.Passed, 2)
	assert.Contains(t, r.Passed[1].Why, "snapshot 3 aborted: its initiator P1 is suspected (crashed or unreachable)")

	require.NoError(t, os.WriteFile(path, []byte("{}\n"), 0o644))
	_, err = st.Aborts(3)
	assert.ErrorIs(t, err, store.ErrCorrupt)
	assert.ErrorContains(t, err, path)
	ents, err = st.Catalog(topo)
	require.NoError(t, err, "a damaged record is the entry's problem, not the listing's")
	assert.Contains(t, ents[0].String(), "damaged: ")
}
