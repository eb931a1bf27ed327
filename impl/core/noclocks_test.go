package core_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

func bankNode(t *testing.T, p spec.ProcID, bal int64, noClocks bool) *core.Node {
	bank, err := app.NewBank(bal)
	require.NoError(t, err)
	nd, err := core.New(core.Config{Topology: spec.Complete(3), Self: p, App: bank, NoClocks: noClocks})
	require.NoError(t, err)
	return nd
}

// Without clocks a node takes the same steps: the same events but for VC
// and Payload, the same frames but for VC, which is empty.
func TestNoClocksSameSteps(t *testing.T) {
	run := func(noClocks bool) []core.Step {
		p1, p2 := bankNode(t, "P1", 100, noClocks), bankNode(t, "P2", 100, noClocks)
		var steps []core.Step
		keep := func(st core.Step, err error) core.Step {
			require.NoError(t, err)
			st.Out = append([]wire.Envelope(nil), st.Out...) // Out is valid until the next step
			steps = append(steps, st)
			return st
		}
		s1 := keep(p1.SendApp("P2", app.Transfer(3)))
		keep(p2.Initiate(1))
		keep(p2.Deliver(s1.Out[0]))
		s2 := keep(p1.SendApp("P2", app.Transfer(4)))
		keep(p2.Deliver(wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindMarker, Snap: 1}}))
		keep(p2.Deliver(s2.Out[0]))
		return steps
	}
	with, without := run(false), run(true)
	require.Len(t, without, len(with))
	for k := range with {
		w, o := with[k], without[k]
		assert.NotNil(t, w.Event.VC, "step %d with clocks", k)
		assert.Nil(t, o.Event.VC, "step %d without clocks", k)
		assert.Nil(t, o.Event.Payload, "step %d without clocks", k)
		w.Event.VC, w.Event.Payload = nil, nil
		assert.Equal(t, w.Event, o.Event, "step %d", k)
		require.Len(t, o.Out, len(w.Out), "step %d", k)
		for j := range w.Out {
			assert.Len(t, w.Out[j].Frame.VC, 3, "step %d frame %d with clocks", k, j)
			assert.Empty(t, o.Out[j].Frame.VC, "step %d frame %d without clocks", k, j)
			w.Out[j].Frame.VC = nil
			assert.Equal(t, w.Out[j], o.Out[j], "step %d frame %d", k, j)
		}
	}
}

// Without clocks SendApp and Deliver of an application message, recorded
// or not, allocate nothing once the recording's buffers have grown; a
// recorded payload is still a copy, not the caller's buffer.
func TestNoClocksNoAllocs(t *testing.T) {
	p1 := bankNode(t, "P1", 1<<40, true)
	payload := app.Transfer(1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		if _, err := p1.SendApp("P2", payload); err != nil {
			t.Fatal(err)
		}
	}), "SendApp")

	for _, recording := range []bool{false, true} {
		p2 := bankNode(t, "P2", 0, true)
		if recording {
			_, err := p2.Initiate(1)
			require.NoError(t, err)
		}
		buf := append([]byte(nil), payload...)
		env := wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindApp, Payload: buf}}
		deliver := func() {
			env.Frame.Seq++
			if _, err := p2.Deliver(env); err != nil {
				t.Fatal(err)
			}
		}
		for range 1 << 16 { // grow the recording past its doublings
			deliver()
		}
		// AllocsPerRun rounds down its average: a rare chunk or slice
		// growth averages below one.
		assert.Zero(t, testing.AllocsPerRun(1000, deliver), "Deliver, recording %v", recording)
		if recording {
			ls, ok := p2.Snapshot(1)
			require.True(t, ok)
			msgs := ls.Chans[0].Msgs
			require.NotEmpty(t, msgs)
			buf[0] = 'X'
			assert.Equal(t, payload, msgs[0].Payload, "the recorded payload aliases the caller's buffer")
			assert.Equal(t, payload, msgs[len(msgs)-1].Payload)
			assert.Equal(t, len(msgs[0].Payload), cap(msgs[0].Payload), "a recorded payload's capacity ends at its length")
		}
	}
}
