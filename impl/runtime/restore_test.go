package runtime_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

func balances(t *testing.T, cl *mwrt.Cluster) map[spec.ProcID]spec.LocalState {
	out := map[spec.ProcID]spec.LocalState{}
	for _, p := range cl.Topology().Procs {
		st, err := cl.Node(p).State()
		require.NoError(t, err)
		out[p] = st
	}
	return out
}

func sumBal(m map[spec.ProcID]spec.LocalState) int64 {
	var s int64
	for _, l := range m {
		s += l.Bal
	}
	return s
}

// A snapshot with money in flight is persisted, loaded, and a new cluster
// restored from it: recorded messages are re-delivered first, the total
// is kept, and the restored cluster takes new consistent snapshots.
func TestRestoreFromPersistedSnapshot(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	cl, ct := memCluster(t, topo, 100, 0, 0)
	require.NoError(t, cl.Send("P3", "P1", app.Transfer(5)))
	require.NoError(t, cl.Quiesce(ctxFor(t, 5*time.Second)))
	// Money in flight on P1->P2 across the cut.
	ct.Gate(spec.Channel{From: "P1", To: "P2"})
	require.NoError(t, cl.Send("P1", "P2", app.Transfer(30)))
	require.NoError(t, cl.Send("P1", "P2", app.Transfer(20)))
	s, err := cl.Snapshot("P1")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(ct.Markers()) == 6 }, 10*time.Second, time.Millisecond) // waits as long as it takes; the bound only stops a hang
	require.NoError(t, ct.Release())
	g, err := cl.Collect(ctxFor(t, 5*time.Second), s)
	require.NoError(t, err)
	require.Equal(t, int64(50), g.InFlight())
	// Keep working after the snapshot; the restore must forget this.
	require.NoError(t, cl.Send("P2", "P3", app.Transfer(70)))
	require.NoError(t, cl.Stop(ctxFor(t, 5*time.Second)))

	st, err := store.Open(filepath.Join(t.TempDir(), "snaps"))
	require.NoError(t, err)
	_, err = st.Save(g)
	require.NoError(t, err)
	loaded, err := st.Load(s)
	require.NoError(t, err)

	cl2, err := mwrt.NewCluster(mwrt.ClusterConfig{
		Topology: topo, NewApp: bankApps(0), From: &loaded,
		Transport: transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 200 * time.Microsecond, Seed: 3}),
	})
	require.NoError(t, err)
	require.NoError(t, cl2.Quiesce(ctxFor(t, 5*time.Second)))
	bal := balances(t, cl2)
	assert.Equal(t, int64(300), sumBal(bal))
	// P2 recorded 100 and gets the two re-delivered transfers; the 70 it
	// sent after the snapshot is forgotten.
	assert.Equal(t, int64(150), bal["P2"].Bal)
	assert.Equal(t, 2, bal["P2"].Rcvd)
	assert.Equal(t, int64(55), bal["P1"].Bal)
	assert.Equal(t, int64(95), bal["P3"].Bal)

	// Work and snapshots go on, consistent and conserving.
	snaps := snapshotsDuring(t, cl2, 9, 300, 4)
	require.NoError(t, cl2.Stop(ctxFor(t, 5*time.Second)))
	require.Len(t, snaps, 6)
	for _, g2 := range snaps {
		require.NoError(t, g2.Validate())
		assert.Greater(t, g2.ID, s, "new ids come after the restored one")
		assert.Equal(t, int64(300), g2.Total(), "%s", g2)
	}
}

func TestRestoreRejectsBadSnapshot(t *testing.T) {
	topo := spec.Ring(3)
	g := snapshot.Global{ID: 1, Topology: topo}
	_, err := mwrt.NewCluster(mwrt.ClusterConfig{Topology: topo, NewApp: bankApps(0), From: &g,
		Transport: transport.NewMemory(topo, transport.MemoryConfig{})})
	assert.ErrorContains(t, err, "restore: snapshot 1: 0 node states for 3 processes")
}

// Every node writes its own log; the merge is causally consistent,
// readable by spec.ReadTrace, and carries the collected snapshots.
func TestTracesMerge(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(4)
	dir := t.TempDir()
	h := spec.Header{Topology: topo, InitBal: map[spec.ProcID]int64{"P1": 100, "P2": 100, "P3": 100, "P4": 100}}
	sinks, err := mwrt.OpenTraces(filepath.Join(dir, "nodes"), h)
	require.NoError(t, err)
	cl, err := mwrt.NewCluster(mwrt.ClusterConfig{Topology: topo, NewApp: bankApps(100), Traces: sinks,
		Transport: transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 200 * time.Microsecond, Seed: 5})})
	require.NoError(t, err)
	snaps := snapshotsDuring(t, cl, 4, 200, 4)
	require.NoError(t, cl.Stop(ctxFor(t, 5*time.Second)))
	require.NoError(t, mwrt.CloseTraces(sinks))
	h.Snaps = cl.Initiators()
	out := filepath.Join(dir, "trace.jsonl")
	n, err := mwrt.MergeTraces(filepath.Join(dir, "nodes"), h, snaps, out)
	require.NoError(t, err)
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadTrace(f)
	require.NoError(t, err)
	require.Len(t, tr.Events, n)
	assert.Len(t, tr.Header.Snaps, len(snaps))
	require.Len(t, tr.Recorded, len(snaps))
	byID := map[spec.SnapID]snapshot.Global{}
	for _, g := range snaps {
		byID[g.ID] = g
	}
	for i, r := range tr.Recorded {
		if i > 0 {
			assert.Less(t, tr.Recorded[i-1].Snap, r.Snap, "by id")
		}
		g, ok := byID[r.Snap]
		require.True(t, ok, "snapshot %d", r.Snap)
		assert.Equal(t, g.Initiator, r.Initiator)
		assert.Equal(t, h.Snaps[r.Snap], r.Initiator)
		assert.Empty(t, g.Abstract().Diff(r.State()))
	}
	// Every receive comes after its send; markers: one RecvMarker per
	// channel per snapshot.
	sent := map[spec.Channel]uint64{}
	markers := map[snapChan]int{}
	for _, e := range tr.Events {
		switch e.Action {
		case spec.SendApp:
			sent[e.Chan()] = e.Msg
		case spec.RecvApp:
			require.LessOrEqual(t, e.Msg, sent[e.Chan()], "receive before send: %s", e)
		case spec.RecvMarker:
			markers[snapChan{e.Snap, e.Chan()}]++
		}
	}
	assert.Len(t, markers, len(snaps)*len(topo.Chans))

	// A header without every initial balance cannot be audited.
	delete(h.InitBal, "P3")
	_, err = mwrt.MergeTraces(filepath.Join(dir, "nodes"), h, snaps, out)
	assert.ErrorContains(t, err, "no initial balance for P3")
}
