package coretest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

var (
	c12 = spec.Channel{From: "P1", To: "P2"}
	c21 = spec.Channel{From: "P2", To: "P1"}
)

func twoBanks(t *testing.T) *coretest.Net {
	t.Helper()
	n, err := coretest.NewBank(spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50})
	require.NoError(t, err)
	return n
}

func TestNewNeedsEveryApp(t *testing.T) {
	b, err := app.NewBank(1)
	require.NoError(t, err)
	_, err = coretest.New(spec.Complete(2), map[spec.ProcID]core.App{"P1": b}, nil)
	assert.EqualError(t, err, `coretest: no application for process "P2"`)
}

func TestRefusedStepsChangeNothing(t *testing.T) {
	n := twoBanks(t)
	_, err := n.SendAmount("P9", "P1", 1)
	assert.EqualError(t, err, `coretest: unknown process "P9"`)
	_, err = n.Initiate("P9", 1)
	assert.EqualError(t, err, `coretest: unknown process "P9"`)
	_, err = n.SendAmount("P1", "P2", 500)
	assert.ErrorIs(t, err, core.ErrApp)
	_, err = n.Deliver(c12)
	assert.EqualError(t, err, "coretest: channel P1->P2 holds 0 frames, no frame 0")
	assert.Empty(t, n.Events)

	_, err = n.SendAmount("P1", "P2", 30)
	require.NoError(t, err)
	n.Queues[c12][0].Seq = 7 // damage the frame: its receiver refuses it
	_, err = n.Deliver(c12)
	assert.ErrorIs(t, err, core.ErrSeq)
	assert.Len(t, n.Queues[c12], 1, "a refused frame stays queued")
	assert.Len(t, n.Events, 1)

	raw, err := coretest.New(spec.Complete(2), n.Apps, nil)
	require.NoError(t, err)
	_, err = raw.SendAmount("P1", "P2", 1)
	assert.EqualError(t, err, "coretest: the net has no amount encoding: use Send")
	tok, err := coretest.NewToken(spec.Ring(2), "P1")
	require.NoError(t, err)
	_, err = tok.SendAmount("P1", "P2", 2)
	assert.EqualError(t, err, "coretest: token ring: amount 2, the token is 1")
	assert.Equal(t, map[spec.ProcID]int64{"P1": 1, "P2": 0}, tok.InitBal)
}

// The run's log, markers, parts and trace: P1 initiates with $30 in
// flight to P2, and everything is drained.
func TestRunAndTrace(t *testing.T) {
	n := twoBanks(t)
	var seen []spec.Action
	n.OnStep = func(st core.Step) { seen = append(seen, st.Event.Action) }
	_, err := n.SendAmount("P1", "P2", 30)
	require.NoError(t, err)
	st, err := n.Initiate("P2", 1)
	require.NoError(t, err)
	require.Len(t, st.Out, 1)
	assert.Equal(t, 2, n.InFlight())
	assert.Equal(t, []spec.Channel{c12, c21}, n.Busy())
	require.NoError(t, n.Drain())
	assert.Zero(t, n.InFlight())
	assert.Empty(t, n.Busy())
	assert.Equal(t, []spec.Action{spec.SendApp, spec.Initiate, spec.RecvApp, spec.RecvMarker, spec.RecvMarker}, seen)
	assert.Len(t, n.Logs["P1"], 2)
	assert.Len(t, n.Logs["P2"], 3)
	assert.Equal(t, 1, n.MarkersSent(1, c12))
	assert.Equal(t, 1, n.MarkersSent(1, c21))

	tr := n.Trace("note")
	assert.Equal(t, "coretest.Net (impl/core, bank)", tr.Header.Source)
	assert.Equal(t, "note", tr.Header.Note)
	assert.Equal(t, map[spec.ProcID]int64{"P1": 100, "P2": 50}, tr.Header.InitBal)
	assert.Equal(t, map[spec.SnapID]spec.ProcID{1: "P2"}, tr.Header.Snaps)
	assert.Equal(t, n.Events, tr.Events)
	require.Len(t, tr.Recorded, 1)
	r := tr.Recorded[0]
	assert.Equal(t, spec.SnapID(1), r.Snap)
	assert.Equal(t, spec.ProcID("P2"), r.Initiator)
	g := r.State()
	assert.Equal(t, int64(150), g.Total())
	assert.Equal(t, []spec.AppMsg{{Amt: 30, Seq: 1}}, g.Chans[c12])
	assert.Equal(t, spec.ChanCut{Sent: 1, Got: 0}, r.Cut[c12])
	assert.Len(t, n.Parts[1], 2, "Trace took the parts from the nodes")
	assert.Equal(t, core.Released, n.Nodes["P1"].Phase(1))
}

// DeliverAt breaks FIFO: the $30 overtakes P1's marker (the article's
// orphan), and Drop loses a frame.
func TestDeliverAtAndDrop(t *testing.T) {
	n := twoBanks(t)
	_, err := n.Initiate("P1", 1)
	require.NoError(t, err)
	_, err = n.SendAmount("P1", "P2", 30)
	require.NoError(t, err)
	_, err = n.DeliverAt(c12, 2)
	assert.EqualError(t, err, "coretest: channel P1->P2 holds 2 frames, no frame 2")
	st, err := n.DeliverAt(c12, 1)
	require.NoError(t, err)
	assert.Equal(t, spec.RecvApp, st.Event.Action)
	f, err := n.Drop(c12, 0)
	require.NoError(t, err)
	assert.Equal(t, wire.KindMarker, f.Kind)
	assert.Zero(t, n.InFlight())
	_, err = n.Drop(c12, 0)
	assert.Error(t, err)
}

// DrainDropping drops a refused frame and blocks its channel, stranding
// the frames behind it; a head admit refuses blocks its channel and stays.
func TestDrainDropping(t *testing.T) {
	n := twoBanks(t)
	for range 2 {
		_, err := n.SendAmount("P1", "P2", 10)
		require.NoError(t, err)
		_, err = n.SendAmount("P2", "P1", 5)
		require.NoError(t, err)
	}
	n.Queues[c12][0].Seq = 9 // refused by P2
	var took []spec.Event
	admit := func(c spec.Channel, f wire.Frame) bool { return c != c21 || f.Seq != 2 }
	refused, drained := n.DrainDropping(100, admit, func(ev spec.Event) bool { took = append(took, ev); return true })
	assert.True(t, drained)
	require.Len(t, refused, 2)
	assert.Equal(t, c12, refused[0].Chan)
	assert.ErrorIs(t, refused[0].Err, core.ErrSeq)
	assert.Contains(t, refused[0].String(), "on P1->P2: refused: core P2: deliver on P1->P2: out-of-order message")
	assert.Equal(t, c21, refused[1].Chan)
	assert.NoError(t, refused[1].Err)
	assert.Equal(t, "app#2(1 bytes) on P2->P1: not delivered", refused[1].String())
	assert.Len(t, n.Queues[c12], 1, "stranded behind the refused frame")
	assert.Len(t, n.Queues[c21], 1, "the head admit refused stays")
	require.Len(t, took, 1)
	assert.Equal(t, spec.RecvApp, took[0].Action)

	// limit and took stop the drain early.
	n = twoBanks(t)
	_, err := n.SendAmount("P1", "P2", 10)
	require.NoError(t, err)
	_, drained = n.DrainDropping(0, nil, nil)
	assert.False(t, drained)
	_, drained = n.DrainDropping(10, nil, func(spec.Event) bool { return false })
	assert.False(t, drained)
	assert.Zero(t, n.InFlight())
}

// RandomBank is repeatable, drained and conserving, takes snapshots, and
// refuses a snapshot rate it cannot honour.
func TestRandomBank(t *testing.T) {
	a, err := coretest.RandomBank(2000, 100, 7)
	require.NoError(t, err)
	b, err := coretest.RandomBank(2000, 100, 7)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(a.Events), 2000)
	assert.Equal(t, a.Events, b.Events, "the same arguments give the same run")
	assert.Zero(t, a.InFlight(), "drained")
	rec := a.Recorded()
	require.NotEmpty(t, rec)
	for s, g := range rec {
		assert.EqualValues(t, 5000, g.Total(), "snapshot %d", s)
	}
	_, err = coretest.RandomBank(10, 1, 7)
	assert.Error(t, err)
}
