package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// countApp is a minimal App: its balance counts received units.
type countApp struct{ bal int64 }

func (a *countApp) Capture() ([]byte, error)        { return []byte{byte(a.bal)}, nil }
func (a *countApp) Restore(b []byte) error          { a.bal = int64(b[0]); return nil }
func (a *countApp) Send(spec.ProcID, []byte) error  { a.bal--; return nil }
func (a *countApp) Apply(spec.ProcID, []byte) error { a.bal++; return nil }
func (a *countApp) Balance() int64                  { return a.bal }
func (a *countApp) Amount(p []byte) (int64, error)  { return 1, nil }

// Recording memory follows what is in flight, not the run's length: after
// many snapshots are completed and taken, only counters and one id range
// remain.
func TestReleasedSnapshotsLeaveOnlyCounters(t *testing.T) {
	topo := spec.Complete(3)
	nd, err := New(Config{Topology: topo, Self: "P2", App: &countApp{}})
	require.NoError(t, err)
	var seq uint64
	for s := spec.SnapID(1); s <= 1000; s++ {
		_, err := nd.Deliver(wire.Envelope{Chan: spec.Channel{From: "P1", To: "P2"}, Frame: wire.Frame{Kind: wire.KindMarker, Snap: s}})
		require.NoError(t, err)
		seq++
		_, err = nd.Deliver(wire.Envelope{Chan: spec.Channel{From: "P3", To: "P2"}, Frame: wire.Frame{Kind: wire.KindApp, Seq: seq, Payload: []byte("1")}})
		require.NoError(t, err)
		st, err := nd.Deliver(wire.Envelope{Chan: spec.Channel{From: "P3", To: "P2"}, Frame: wire.Frame{Kind: wire.KindMarker, Snap: s}})
		require.NoError(t, err)
		require.Equal(t, s, st.Completed)
		require.Len(t, nd.completed, 1)
		require.Equal(t, s, nd.completed[0].Snap)
		got := nd.TakeCompleted()
		require.Len(t, got, 1)
		require.Len(t, got[0].Chans[1].Msgs, 1)
	}
	assert.Empty(t, nd.snaps)
	assert.Empty(t, nd.active)
	assert.Empty(t, nd.completed)
	assert.Equal(t, []idRange{{1, 1000}}, nd.released.iv)
	assert.Equal(t, uint64(1000), nd.nDone)
	assert.Equal(t, spec.LocalState{Bal: 1000, Rcvd: 1000}, nd.State())
}
