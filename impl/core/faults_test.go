package core_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

func marker(from, to spec.ProcID, s spec.SnapID) wire.Envelope {
	return wire.Envelope{Chan: ch(from, to), Frame: wire.Frame{Kind: wire.KindMarker, Snap: s}}
}

// A transfer to a suspected peer is refused before the application sees
// it: the balance, the counters and the channel's seq are unchanged
// (SendAppF's q \notin suspected). Withdrawing the suspicion lets the next
// one through, numbered as if the refused one never was.
func TestSendToSuspectedRefusedNothingDebited(t *testing.T) {
	p1 := bankNode(t, "P1", 100, true)
	_, err := p1.SendApp("P2", app.Transfer(10))
	require.NoError(t, err)
	st, err := p1.Suspect("P2")
	require.NoError(t, err)
	assert.Equal(t, spec.Suspect, st.Event.Action)
	assert.Equal(t, spec.ProcID("P2"), st.Event.Peer)
	assert.Empty(t, st.Out)
	assert.True(t, p1.Suspected("P2"))
	before := core.Fingerprint(p1)

	_, err = p1.SendApp("P2", app.Transfer(30))
	require.ErrorIs(t, err, core.ErrSuspected)
	assert.EqualError(t, err, "core P1: send on P1->P2: receiver suspected: P2 is suspected, the transfer was not made")
	assert.Equal(t, before, core.Fingerprint(p1))
	assert.Equal(t, spec.LocalState{Bal: 90, Sent: 1}, p1.State())

	// The other peer is not affected.
	_, err = p1.SendApp("P3", app.Transfer(5))
	require.NoError(t, err)

	_, err = p1.Unsuspect("P2")
	require.NoError(t, err)
	st, err = p1.SendApp("P2", app.Transfer(30))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.Out[0].Frame.Seq)
	assert.Equal(t, spec.LocalState{Bal: 55, Sent: 3}, p1.State())
}

func TestSuspectRefusals(t *testing.T) {
	p1 := bankNode(t, "P1", 100, false)
	for _, c := range []struct {
		q    spec.ProcID
		want string
	}{
		{"P1", "core P1: suspect: P1 cannot suspect itself"},
		{"P9", `core P1: suspect: unknown channel: "P9" is not a process of the topology`},
	} {
		_, err := p1.Suspect(c.q)
		assert.EqualError(t, err, c.want)
	}
	_, err := p1.Unsuspect("P2")
	require.ErrorIs(t, err, core.ErrNotSuspected)
	_, err = p1.Suspect("P2")
	require.NoError(t, err)
	before := core.Fingerprint(p1)
	_, err = p1.Suspect("P2")
	require.ErrorIs(t, err, core.ErrAlreadySuspected)
	assert.Equal(t, before, core.Fingerprint(p1))
}

// Aborting an active snapshot releases its recording: the node no longer
// holds a part, app messages on its channels are no longer recorded, its
// later markers are dropped (DropMarker), and its id cannot be used again.
func TestAbortReleasesRecordingAndDropsMarkers(t *testing.T) {
	p2 := bankNode(t, "P2", 100, false)
	_, err := p2.Deliver(marker("P1", "P2", 4)) // case 1: record, P3->P2 recording
	require.NoError(t, err)
	assert.Equal(t, []spec.SnapID{4}, p2.WaitingOn("P3"))
	assert.Empty(t, p2.WaitingOn("P1"))

	_, err = p2.Abort(4, "P3")
	require.ErrorIs(t, err, core.ErrNotSuspected, "the cause must be suspected")
	_, err = p2.Suspect("P3")
	require.NoError(t, err)
	st, err := p2.Abort(4, "P3")
	require.NoError(t, err)
	assert.Equal(t, spec.Abort, st.Event.Action)
	assert.Equal(t, spec.SnapID(4), st.Event.Snap)
	assert.Equal(t, spec.ProcID("P3"), st.Event.Peer)
	assert.Equal(t, core.Aborted, p2.Phase(4))
	_, ok := p2.Snapshot(4)
	assert.False(t, ok, "the recording is released")
	assert.Empty(t, core.ActiveSnaps(p2))
	assert.Empty(t, p2.WaitingOn("P3"))

	// An app message on the formerly recording channel is just applied.
	st, err = p2.Deliver(wire.Envelope{Chan: ch("P3", "P2"), Frame: wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: app.Transfer(7)}})
	require.NoError(t, err)
	assert.Equal(t, int64(107), st.Event.After.Bal)

	// The late marker is dropped: an event, nothing else.
	before := core.Fingerprint(p2)
	st, err = p2.Deliver(marker("P3", "P2", 4))
	require.NoError(t, err)
	assert.Equal(t, spec.DropMarker, st.Event.Action)
	assert.Equal(t, ch("P3", "P2"), st.Event.Chan())
	assert.Empty(t, st.Out)
	assert.Zero(t, st.Completed)
	require.NoError(t, st.Event.Validate(spec.Complete(3)))
	assert.Equal(t, spec.LocalState{Bal: 107, Rcvd: 1}, p2.State())
	assert.NotEqual(t, before, core.Fingerprint(p2), "the step is counted")

	_, err = p2.Initiate(4)
	require.ErrorIs(t, err, core.ErrDuplicateSnap)
	_, err = p2.Abort(4, "P3")
	require.ErrorIs(t, err, core.ErrAborted)
	_, err = p2.Abort(0, "P3")
	require.ErrorIs(t, err, core.ErrBadSnap)
}

// A snapshot not yet seen can be aborted: its first marker is dropped and
// never starts a recording. A released one cannot: its part is out.
func TestAbortUnknownAndReleased(t *testing.T) {
	p2 := bankNode(t, "P2", 100, false)
	_, err := p2.Suspect("P3")
	require.NoError(t, err)
	_, err = p2.Abort(9, "P3")
	require.NoError(t, err)
	st, err := p2.Deliver(marker("P1", "P2", 9))
	require.NoError(t, err)
	assert.Equal(t, spec.DropMarker, st.Event.Action)
	assert.Empty(t, st.Out, "no markers forwarded for an aborted snapshot")
	assert.Empty(t, core.ActiveSnaps(p2))

	p1 := bankNode(t, "P1", 100, false)
	_, err = p1.Deliver(marker("P2", "P1", 1))
	require.NoError(t, err)
	st, err = p1.Deliver(marker("P3", "P1", 1))
	require.NoError(t, err)
	require.Equal(t, spec.SnapID(1), st.Completed)
	_, err = p1.Suspect("P3")
	require.NoError(t, err)
	require.Len(t, p1.TakeCompleted(), 1)
	_, err = p1.Abort(1, "P3")
	require.ErrorIs(t, err, core.ErrReleased)
}

// A completed part not yet taken is discarded by the abort.
func TestAbortDiscardsCompletedPart(t *testing.T) {
	p1 := bankNode(t, "P1", 100, false)
	_, err := p1.Deliver(marker("P2", "P1", 1))
	require.NoError(t, err)
	_, err = p1.Deliver(marker("P3", "P1", 1))
	require.NoError(t, err)
	_, err = p1.Suspect("P2")
	require.NoError(t, err)
	_, err = p1.Abort(1, "P2")
	require.NoError(t, err)
	assert.Empty(t, p1.TakeCompleted())
	assert.Equal(t, core.Aborted, p1.Phase(1))
	assert.Equal(t, uint64(0), core.CompletedCount(p1))
}

// A refused abort changes nothing.
func TestAbortRefusalChangesNothing(t *testing.T) {
	p1 := bankNode(t, "P1", 100, false)
	_, err := p1.Initiate(2)
	require.NoError(t, err)
	before := core.Fingerprint(p1, 2)
	for _, c := range []struct {
		s     spec.SnapID
		cause spec.ProcID
		want  error
	}{{0, "P2", core.ErrBadSnap}, {2, "P2", core.ErrNotSuspected}, {2, "P1", nil}, {2, "P7", core.ErrUnknownChannel}} {
		_, err := p1.Abort(c.s, c.cause)
		require.Error(t, err)
		if c.want != nil {
			assert.True(t, errors.Is(err, c.want), "%v", err)
		}
		assert.Equal(t, before, core.Fingerprint(p1, 2))
	}
}
