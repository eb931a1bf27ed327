package core_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// bankBal is the balance in b's captured memory, what a naive snapshot
// of it would record.
func bankBal(t *testing.T, b *app.Bank) int64 {
	t.Helper()
	st, err := b.Capture()
	require.NoError(t, err)
	mem, err := app.NewBank(0)
	require.NoError(t, err)
	require.NoError(t, mem.Restore(st))
	return mem.Balance()
}

// The article's two-account example: P1 $100, P2 $50, a $30 transfer in
// flight. Capturing the two memories naively at the two orderings the
// article describes gives $180 (orphan) or $120 (missing); Chandy-Lamport
// records $150, the $30 as channel state.
func TestArticleTwoAccountTransfer(t *testing.T) {
	n := newBankNet(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50})

	p1Before := bankBal(t, n.bank("P1")) // before the deduction
	n.send("P1", "P2", app.Transfer(30))
	p1After := bankBal(t, n.bank("P1"))
	p2Before := bankBal(t, n.bank("P2")) // transfer still in flight

	// P2 initiates; its marker reaches P1 after P1 sent the transfer, and
	// P1's marker follows the transfer on P1->P2.
	n.initiate("P2", 1)
	e := n.deliver("P2", "P1")
	assert.True(t, e.First)
	assert.Equal(t, "[app#1(2 bytes) marker(1)]", n.head("P1", "P2"))
	n.deliver("P1", "P2") // the transfer, recorded on P1->P2
	p2After := bankBal(t, n.bank("P2"))
	n.deliver("P1", "P2") // the marker closes P1->P2

	assert.Equal(t, int64(180), p1Before+p2After, "naive orphan: P1 before the send, P2 after the receive")
	assert.Equal(t, int64(120), p1After+p2Before, "naive missing: the in-flight $30 is on no node")

	g := n.global(1)
	assert.Equal(t, int64(150), g.Total())
	want := spec.GlobalState{
		Procs: map[spec.ProcID]spec.LocalState{"P1": {Bal: 70, Sent: 1}, "P2": {Bal: 50}},
		Chans: map[spec.Channel][]spec.AppMsg{{From: "P1", To: "P2"}: {{Amt: 30, Seq: 1}}},
	}
	assert.Empty(t, want.Diff(g))
	assert.Equal(t, int64(150), n.liveTotal())
}

// The other order of the same run: P1 initiates before sending, so the
// transfer follows the marker and is in no recording.
func TestTwoAccountTransferInitiatedBeforeSend(t *testing.T) {
	n := newBankNet(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50})
	n.initiate("P1", 1)
	n.send("P1", "P2", app.Transfer(30))
	n.drain()
	g := n.global(1)
	assert.Equal(t, int64(150), g.Total())
	assert.Equal(t, spec.LocalState{Bal: 100}, g.Procs["P1"])
	assert.Equal(t, spec.LocalState{Bal: 50}, g.Procs["P2"])
	for c, ms := range g.Chans {
		assert.Empty(t, ms, "channel %s", c)
	}
}

// The article's three-process token ring, step by step.
func TestArticleTokenRing(t *testing.T) {
	n := newTokenNet(t, spec.Ring(3), "P2")
	tok := json.RawMessage(app.TokenPayload)

	// 1. P1 initiates holding no token.
	st, err := n.Initiate("P1", 1)
	require.NoError(t, err)
	require.Len(t, st.Out, 1)
	assert.Equal(t, spec.Channel{From: "P1", To: "P2"}, st.Out[0].Chan)
	assert.Zero(t, st.Completed)
	rec, ok := n.Nodes["P1"].Snapshot(1)
	require.True(t, ok)
	assert.Equal(t, int64(0), rec.State.Bal, "State(P1) = { hasToken: false }")
	status, msgs := chanState(t, n.Nodes["P1"], 1, spec.Channel{From: "P3", To: "P1"})
	assert.Equal(t, core.Recording, status)
	assert.Empty(t, msgs)

	// 2. P2 sends the token to P3 before P1's marker arrives.
	n.send("P2", "P3", app.TokenPayload)
	assert.False(t, n.token("P2").HasToken())

	// 3. P2 receives the first marker: case 1, and it is P2's only incoming
	// channel, so P2's part is complete.
	st, err = n.Deliver(spec.Channel{From: "P1", To: "P2"})
	require.NoError(t, err)
	assert.Equal(t, spec.SnapID(1), st.Completed)
	assert.Equal(t, "[app#1(7 bytes) marker(1)]", n.head("P2", "P3"), "the marker follows the token (FIFO)")

	// 4. P3 receives the token, then the first marker.
	n.deliver("P2", "P3")
	assert.True(t, n.token("P3").HasToken())
	n.deliver("P2", "P3")

	// 5. P1 receives the subsequent marker: case 2, empty channel state.
	n.deliver("P3", "P1")
	assert.Zero(t, n.InFlight())

	// 6. Termination: P1 false, P2 false, P3 true, all channels empty.
	held := map[spec.ProcID]bool{}
	for _, p := range []spec.ProcID{"P1", "P2", "P3"} {
		ls, ok := n.Nodes[p].Snapshot(1)
		require.True(t, ok)
		mem := app.NewToken(false)
		require.NoError(t, mem.Restore(ls.App))
		held[p] = mem.HasToken()
		for _, r := range ls.Chans {
			assert.Equal(t, core.Done, r.Status)
			assert.Empty(t, r.Msgs, "channel %s", r.Chan)
		}
	}
	assert.Equal(t, map[spec.ProcID]bool{"P1": false, "P2": false, "P3": true}, held)
	g := n.global(1)
	assert.Equal(t, int64(1), g.Total(), "exactly one token")

	want := []spec.Event{
		{Proc: "P1", Seq: 1, Action: spec.Initiate, Snap: 1, After: spec.LocalState{}, VC: []uint64{1, 0, 0}},
		{Proc: "P2", Seq: 1, Action: spec.SendApp, From: "P2", To: "P3", Amount: 1, Msg: 1, Payload: tok, After: spec.LocalState{Bal: 0, Sent: 1}, VC: []uint64{0, 1, 0}},
		{Proc: "P2", Seq: 2, Action: spec.RecvMarker, From: "P1", To: "P2", Snap: 1, First: true, After: spec.LocalState{Bal: 0, Sent: 1}, VC: []uint64{1, 2, 0}},
		{Proc: "P3", Seq: 1, Action: spec.RecvApp, From: "P2", To: "P3", Amount: 1, Msg: 1, Payload: tok, After: spec.LocalState{Bal: 1, Rcvd: 1}, VC: []uint64{0, 1, 1}},
		{Proc: "P3", Seq: 2, Action: spec.RecvMarker, From: "P2", To: "P3", Snap: 1, First: true, After: spec.LocalState{Bal: 1, Rcvd: 1}, VC: []uint64{1, 2, 2}},
		{Proc: "P1", Seq: 2, Action: spec.RecvMarker, From: "P3", To: "P1", Snap: 1, First: false, After: spec.LocalState{}, VC: []uint64{2, 2, 2}},
	}
	assert.Equal(t, want, n.Events)
	merged, err := spec.MergeCausal(n.Topo, n.Logs)
	require.NoError(t, err)
	assert.Len(t, merged, len(want))

	// Each node hands its part out exactly once.
	for _, p := range n.Topo.Procs {
		got := n.Nodes[p].TakeCompleted()
		require.Len(t, got, 1)
		assert.Equal(t, spec.SnapID(1), got[0].Snap)
		assert.Empty(t, n.Nodes[p].TakeCompleted())
		assert.Equal(t, core.Released, n.Nodes[p].Phase(1))
	}
}

// The article's puzzle: m21 is in transit when P1 initiates. It is
// recorded as the state of P2->P1 and P1's recorded memory is pre-m21;
// restoring and replaying the channel applies m21 exactly once.
func TestArticlePuzzle(t *testing.T) {
	n := newBankNet(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50})
	n.send("P2", "P1", app.Transfer(20)) // m21 in transit
	n.initiate("P1", 1)
	e := n.deliver("P2", "P1") // m21 arrives after P1 recorded
	assert.Equal(t, spec.RecvApp, e.Action)
	assert.Equal(t, int64(120), n.Nodes["P1"].State().Bal)
	_, msgs := chanState(t, n.Nodes["P1"], 1, spec.Channel{From: "P2", To: "P1"})
	assert.Equal(t, []spec.AppMsg{{Amt: 20, Seq: 1}}, msgs, "recorded while in flight")
	n.deliver("P1", "P2") // marker reaches P2: case 1
	n.deliver("P2", "P1") // P2's marker closes P2->P1
	assert.Zero(t, n.InFlight())

	g := n.global(1)
	want := spec.GlobalState{
		Procs: map[spec.ProcID]spec.LocalState{"P1": {Bal: 100}, "P2": {Bal: 30, Sent: 1}},
		Chans: map[spec.Channel][]spec.AppMsg{{From: "P2", To: "P1"}: {{Amt: 20, Seq: 1}}},
	}
	assert.Empty(t, want.Diff(g), "P1 pre-m21, P2 post-send, c21 = [m21]")
	n.Take()
	parts := n.Parts[1]
	p1 := parts["P1"]
	r, ok := p1.Chan(spec.Channel{From: "P2", To: "P1"})
	require.True(t, ok)
	require.Len(t, r.Msgs, 1)
	assert.Equal(t, app.Transfer(20), r.Msgs[0].Payload)
	assert.Equal(t, uint64(1), r.NextRecv)

	// Restore both from the snapshot and replay c21.
	banks := map[spec.ProcID]*app.Bank{}
	nodes := map[spec.ProcID]*core.Node{}
	for _, p := range n.Topo.Procs {
		b, _ := app.NewBank(0)
		ls := parts[p]
		nd, err := core.Restore(core.Config{Topology: n.Topo, Self: p, App: b}, ls.Checkpoint())
		require.NoError(t, err)
		banks[p], nodes[p] = b, nd
		assert.Equal(t, ls.State, nd.State())
		assert.Equal(t, core.Released, nd.Phase(1), "ids up to the snapshot's are retired")
	}
	st, err := nodes["P1"].Deliver(wire.Envelope{Chan: r.Chan, Frame: wire.Frame{Kind: wire.KindApp, Seq: r.Msgs[0].Seq, Payload: r.Msgs[0].Payload}})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Event.Seq, "a restored node starts a new event log")
	assert.Equal(t, int64(120), banks["P1"].Balance(), "m21 applied once, on replay")
	assert.Equal(t, int64(30), banks["P2"].Balance())
	// Seqs continue where the snapshot left them.
	st, err = nodes["P2"].SendApp("P1", app.Transfer(5))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.Out[0].Frame.Seq)
	_, err = nodes["P1"].Deliver(st.Out[0])
	require.NoError(t, err)
	_, err = nodes["P1"].Initiate(1)
	require.ErrorIs(t, err, core.ErrDuplicateSnap)
}
