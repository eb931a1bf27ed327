package core_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

func ch(from, to spec.ProcID) spec.Channel { return spec.Channel{From: from, To: to} }

func TestNewRejectsBadConfig(t *testing.T) {
	b, _ := app.NewBank(1)
	_, err := core.New(core.Config{Self: "P1", App: b})
	require.ErrorContains(t, err, "no topology")
	_, err = core.New(core.Config{Topology: spec.Ring(2), Self: "P1"})
	require.ErrorContains(t, err, "no application")
	_, err = core.New(core.Config{Topology: spec.Ring(2), Self: "P7", App: b})
	require.ErrorContains(t, err, `process "P7" is not in the topology`)
}

func TestSendAppNumbersPerChannel(t *testing.T) {
	n := newBankNet(t, spec.Complete(3), map[spec.ProcID]int64{"P1": 100})
	e := n.send("P1", "P3", app.Transfer(1))
	assert.Equal(t, uint64(1), e.Msg)
	e = n.send("P1", "P2", app.Transfer(2))
	assert.Equal(t, uint64(1), e.Msg)
	e = n.send("P1", "P3", app.Transfer(3))
	assert.Equal(t, uint64(2), e.Msg)
	assert.Equal(t, spec.LocalState{Bal: 94, Sent: 3}, e.After)
	assert.Equal(t, []uint64{3, 0, 0}, e.VC)
	assert.Equal(t, "[app#1(1 bytes) app#2(1 bytes)]", n.head("P1", "P3"))
	// Recording does not change sends: no extra frames, same numbering.
	n.initiate("P1", 1)
	st, err := n.Nodes["P1"].SendApp("P3", app.Transfer(4))
	require.NoError(t, err)
	require.Len(t, st.Out, 1)
	assert.Equal(t, uint64(3), st.Out[0].Frame.Seq)
	assert.Equal(t, wire.KindApp, st.Out[0].Frame.Kind)
}

func TestInitiateSendsMarkersInTopologyOrder(t *testing.T) {
	n := newBankNet(t, spec.Complete(4), nil)
	st, err := n.Nodes["P3"].Initiate(7)
	require.NoError(t, err)
	var got []spec.Channel
	for _, env := range st.Out {
		assert.Equal(t, wire.Frame{Kind: wire.KindMarker, Snap: 7, VC: []uint64{0, 0, 1, 0}}, env.Frame)
		got = append(got, env.Chan)
	}
	assert.Equal(t, []spec.Channel{ch("P3", "P1"), ch("P3", "P2"), ch("P3", "P4")}, got)
	assert.Equal(t, []spec.SnapID{7}, core.ActiveSnaps(n.Nodes["P3"]))
	ls, ok := n.Nodes["P3"].Snapshot(7)
	require.True(t, ok)
	for _, r := range ls.Chans {
		assert.Equal(t, core.Recording, r.Status, "%s", r.Chan)
	}
}

// A single process with no channels completes its snapshot on Initiate.
func TestInitiateAlone(t *testing.T) {
	topo, err := spec.NewTopology([]spec.ProcID{"P1"}, nil)
	require.NoError(t, err)
	b, _ := app.NewBank(5)
	nd := mustNode(t, topo, "P1", b)
	st, err := nd.Initiate(1)
	require.NoError(t, err)
	assert.Empty(t, st.Out)
	assert.Equal(t, spec.SnapID(1), st.Completed)
	got := nd.TakeCompleted()
	require.Len(t, got, 1)
	assert.Equal(t, spec.LocalState{Bal: 5}, got[0].State)
}

func TestMarkerCases(t *testing.T) {
	n := newBankNet(t, spec.Complete(3), map[spec.ProcID]int64{"P1": 10, "P2": 10, "P3": 10})
	n.initiate("P1", 1)
	n.send("P3", "P2", app.Transfer(3)) // before P3 records: will be channel state of P3->P2
	e := n.deliver("P1", "P2")          // case 1 at P2
	assert.True(t, e.First)
	assert.Equal(t, spec.SnapID(1), e.Snap)
	st, msgs := chanState(t, n.Nodes["P2"], 1, ch("P1", "P2"))
	assert.Equal(t, core.Done, st, "the first marker's channel is recorded empty")
	assert.Empty(t, msgs)
	st, _ = chanState(t, n.Nodes["P2"], 1, ch("P3", "P2"))
	assert.Equal(t, core.Recording, st)
	st, _ = chanState(t, n.Nodes["P3"], 1, ch("P1", "P3"))
	assert.Equal(t, core.Idle, st, "P3 has not recorded yet")

	n.deliver("P3", "P2") // the transfer, recorded
	_, msgs = chanState(t, n.Nodes["P2"], 1, ch("P3", "P2"))
	assert.Equal(t, []spec.AppMsg{{Amt: 3, Seq: 1}}, msgs)
	assert.Equal(t, core.Active, n.Nodes["P2"].Phase(1))
	n.drain()
	for _, p := range n.Topo.Procs {
		assert.Equal(t, core.Complete, n.Nodes[p].Phase(1), "%s", p)
	}
	g := n.global(1)
	assert.Equal(t, []spec.AppMsg{{Amt: 3, Seq: 1}}, g.Chans[ch("P3", "P2")])
	assert.Equal(t, int64(30), g.Total())
	for _, c := range n.Topo.Chans {
		assert.Equal(t, 1, n.MarkersSent(1, c), "markers for snap 1 on %s", c)
	}
}

// Two snapshots in flight at once, with interleaved markers: each records
// independently; markers go exactly once per channel per snapshot.
func TestConcurrentSnapshots(t *testing.T) {
	n := newBankNet(t, spec.Complete(3), map[spec.ProcID]int64{"P1": 100, "P2": 50, "P3": 25})
	n.initiate("P1", 1)
	n.send("P1", "P2", app.Transfer(10))
	n.initiate("P3", 2)
	n.send("P3", "P1", app.Transfer(5)) // after marker 2, before marker 1 on P3->P1
	n.send("P2", "P3", app.Transfer(20))

	e := n.deliver("P3", "P1") // marker 2: case 1 at P1 for snapshot 2
	assert.Equal(t, spec.SnapID(2), e.Snap)
	assert.True(t, e.First)
	n.deliver("P3", "P1") // the 5: in snapshot 1's recording only
	_, m1 := chanState(t, n.Nodes["P1"], 1, ch("P3", "P1"))
	_, m2 := chanState(t, n.Nodes["P1"], 2, ch("P3", "P1"))
	assert.Equal(t, []spec.AppMsg{{Amt: 5, Seq: 1}}, m1)
	assert.Empty(t, m2)
	assert.Equal(t, []spec.SnapID{1, 2}, core.ActiveSnaps(n.Nodes["P1"]))

	n.deliver("P1", "P2") // marker 1, P2 case 1
	n.deliver("P2", "P3") // marker 1 reaches P3 ahead of the 20
	n.deliver("P3", "P2") // marker 2: case 1 at P2, which starts recording P1->P2
	n.deliver("P1", "P2") // the 10: after marker 1, so only in snapshot 2's recording
	n.deliver("P1", "P2") // marker 2
	n.drain()

	for _, s := range []spec.SnapID{1, 2} {
		g := n.global(s)
		assert.Equal(t, int64(175), g.Total(), "snapshot %d", s)
		for _, c := range n.Topo.Chans {
			assert.Equal(t, 1, n.MarkersSent(s, c), "markers for snap %d on %s", s, c)
		}
	}
	assert.Equal(t, []spec.AppMsg{{Amt: 5, Seq: 1}}, n.global(1).Chans[ch("P3", "P1")])
	assert.Equal(t, []spec.AppMsg{{Amt: 10, Seq: 1}}, n.global(2).Chans[ch("P1", "P2")])
	_, err := spec.MergeCausal(n.Topo, n.Logs)
	require.NoError(t, err)

	n.Take()
	for _, s := range []spec.SnapID{1, 2} {
		assert.Len(t, n.Parts[s], 3)
		assert.Equal(t, int64(175), coretest.Assemble(n.Parts[s]).Total())
	}
	for _, p := range n.Topo.Procs {
		assert.Equal(t, uint64(2), core.CompletedCount(n.Nodes[p]))
		_, ok := n.Nodes[p].Snapshot(1)
		assert.False(t, ok, "released")
	}
}

// errorSetup returns a Complete(3) bank run where, at P1: snapshot 9 is
// completed and released; snapshot 1 (initiated by P1) is recording and
// has recorded one message on P2->P1; snapshot 2 (from P3) is recording
// with P3->P1 done. The next message expected on P2->P1 is seq 2.
func errorSetup(t *testing.T) *tnet {
	n := newBankNet(t, spec.Complete(3), map[spec.ProcID]int64{"P1": 100, "P2": 50, "P3": 25})
	n.initiate("P2", 9)
	n.drain()
	n.Take()
	n.send("P2", "P1", app.Transfer(5))
	n.initiate("P1", 1)
	n.deliver("P2", "P1")
	n.initiate("P3", 2)
	n.deliver("P3", "P1")
	require.Equal(t, core.Released, n.Nodes["P1"].Phase(9))
	require.Equal(t, core.Active, n.Nodes["P1"].Phase(1))
	require.Equal(t, core.Active, n.Nodes["P1"].Phase(2))
	return n
}

func TestStepErrorsLeaveStateUnchanged(t *testing.T) {
	app5 := wire.Frame{Kind: wire.KindApp, Seq: 2, Payload: app.Transfer(5)}
	marker := func(s spec.SnapID) wire.Frame { return wire.Frame{Kind: wire.KindMarker, Snap: s} }
	deliver := func(c spec.Channel, f wire.Frame) func(*core.Node) error {
		return func(nd *core.Node) error { _, err := nd.Deliver(wire.Envelope{Chan: c, Frame: f}); return err }
	}
	send := func(to spec.ProcID, p []byte) func(*core.Node) error {
		return func(nd *core.Node) error { _, err := nd.SendApp(to, p); return err }
	}
	initiate := func(s spec.SnapID) func(*core.Node) error {
		return func(nd *core.Node) error { _, err := nd.Initiate(s); return err }
	}
	with := func(f wire.Frame, edit func(*wire.Frame)) wire.Frame { edit(&f); return f }

	cases := []struct {
		name string
		step func(*core.Node) error
		is   error
		msg  string
	}{
		{"send to unknown peer", send("P9", app.Transfer(1)), core.ErrUnknownChannel, "no channel P1->P9"},
		{"send to self", send("P1", app.Transfer(1)), core.ErrUnknownChannel, "no channel P1->P1"},
		{"send overdraft", send("P2", app.Transfer(106)), core.ErrApp, "insufficient funds: balance 105, transfer of 106 to P2"},
		{"send zero", send("P2", []byte("0")), core.ErrApp, "transfer amount 0 is not positive"},
		{"send garbage", send("P2", []byte("ten")), core.ErrApp, `"ten" is not a decimal amount`},
		{"initiate 0", initiate(0), core.ErrBadSnap, "invalid snapshot id: 0"},
		{"initiate active id", initiate(1), core.ErrDuplicateSnap, "P1 already knows snapshot 1"},
		{"initiate id recorded via marker", initiate(2), core.ErrDuplicateSnap, "P1 already knows snapshot 2"},
		{"initiate released id", initiate(9), core.ErrDuplicateSnap, "P1 already knows snapshot 9"},
		{"frame for another node", deliver(ch("P2", "P3"), app5), core.ErrUnknownChannel, "core P1: deliver on P2->P3: unknown channel: the frame is addressed to P3"},
		{"frame from unknown peer", deliver(ch("P9", "P1"), app5), core.ErrUnknownChannel, `core P1: deliver on P9->P1: unknown channel: not an incoming channel (unknown peer "P9")`},
		{"seq gap", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.Seq = 3 })), core.ErrSeq, "deliver on P2->P1: out-of-order message: expected seq 2, got 3"},
		{"seq replay", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.Seq = 1 })), core.ErrSeq, "expected seq 2, got 1"},
		{"seq on fresh channel", deliver(ch("P3", "P1"), with(app5, func(f *wire.Frame) { f.Seq = 2 })), core.ErrSeq, "P3->P1: out-of-order message: expected seq 1, got 2"},
		{"bad payload", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.Payload = []byte("x") })), core.ErrApp, `bad payload: bank: transfer payload "x"`},
		{"apply overflow", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.Payload = app.Transfer(math.MaxInt64) })), core.ErrApp, "overflows balance"},
		{"app frame with snap id", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.Snap = 1 })), core.ErrBadFrame, "app frame carries snapshot id 1"},
		{"unknown kind", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.Kind = 7 })), core.ErrBadFrame, "unknown frame kind 7"},
		{"clock of wrong size", deliver(ch("P2", "P1"), with(app5, func(f *wire.Frame) { f.VC = []uint64{1, 2} })), core.ErrBadFrame, "vector clock has 2 entries, want 3"},
		{"marker snap 0", deliver(ch("P2", "P1"), marker(0)), core.ErrBadSnap, "marker with snapshot id 0"},
		{"marker with payload", deliver(ch("P2", "P1"), with(marker(1), func(f *wire.Frame) { f.Payload = []byte("1") })), core.ErrBadFrame, "marker 1 carries seq 0 and 1 payload bytes"},
		{"duplicate marker", deliver(ch("P3", "P1"), marker(2)), core.ErrDuplicateMarker, "deliver on P3->P1: duplicate marker: second marker of snapshot 2"},
		{"marker of released snapshot", deliver(ch("P2", "P1"), marker(9)), core.ErrReleased, "marker for snapshot 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := errorSetup(t)
			nd := n.Nodes["P1"]
			before := core.Fingerprint(nd, 1, 2, 9)
			err := tc.step(nd)
			require.ErrorIs(t, err, tc.is)
			assert.ErrorContains(t, err, tc.msg)
			assert.ErrorContains(t, err, "core P1")
			assert.Equal(t, before, core.Fingerprint(nd, 1, 2, 9), "state changed by a failed step")
			// The node still works: drain everything and both snapshots complete.
			n.drain()
			assert.Equal(t, core.Complete, nd.Phase(1))
			assert.Equal(t, core.Complete, nd.Phase(2))
			assert.Equal(t, int64(175), n.global(1).Total())
			assert.Equal(t, int64(175), n.global(2).Total())
		})
	}
}

// A refused step is a *core.Error naming the node, the operation, the
// channel and the message's seq where they are known; errors.Is sees the
// sentinel and the application's error through it.
func TestErrorNamesNodeOpChanSeq(t *testing.T) {
	n := errorSetup(t)
	nd := n.Nodes["P1"]
	c21 := ch("P2", "P1")
	cases := []struct {
		err  error
		want core.Error
		is   error
		msg  string
	}{
		{
			err:  second(nd.Deliver(wire.Envelope{Chan: c21, Frame: wire.Frame{Kind: wire.KindApp, Seq: 3, Payload: app.Transfer(5)}})),
			want: core.Error{Node: "P1", Op: "deliver", Chan: c21},
			is:   core.ErrSeq,
			msg:  "core P1: deliver on P2->P1: out-of-order message: expected seq 2, got 3",
		},
		{
			err:  second(nd.Deliver(wire.Envelope{Chan: c21, Frame: wire.Frame{Kind: wire.KindApp, Seq: 2, Payload: app.Transfer(math.MaxInt64)}})),
			want: core.Error{Node: "P1", Op: "deliver", Chan: c21, Seq: 2},
			is:   core.ErrApp,
			msg:  "core P1: deliver on P2->P1, seq 2: application error: bank: ",
		},
		{
			err:  second(nd.SendApp("P2", app.Transfer(106))),
			want: core.Error{Node: "P1", Op: "send", Chan: ch("P1", "P2")},
			is:   core.ErrApp,
			msg:  "core P1: send on P1->P2: application error: refused: ",
		},
		{
			err:  second(nd.Initiate(0)),
			want: core.Error{Node: "P1", Op: "initiate"},
			is:   core.ErrBadSnap,
			msg:  "core P1: initiate: invalid snapshot id: 0",
		},
	}
	for _, tc := range cases {
		var ce *core.Error
		require.ErrorAs(t, tc.err, &ce)
		require.ErrorIs(t, tc.err, tc.is)
		assert.ErrorContains(t, tc.err, tc.msg)
		got := *ce
		got.Err = nil
		assert.Equal(t, tc.want, got, "%v", tc.err)
	}
	_, err := core.Restore(core.Config{Topology: spec.Complete(2), Self: "P2", App: n.bank("P2")}, core.Checkpoint{State: spec.LocalState{Sent: -1}})
	var ce *core.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "restore", ce.Op)
	assert.EqualError(t, err, "core P2: restore: negative counters sent=-1 rcvd=0")
	_, err = core.New(core.Config{Topology: spec.Complete(2), Self: "P7", App: n.bank("P2")})
	assert.EqualError(t, err, `core P7: new: process "P7" is not in the topology`)
}

func second(_ core.Step, err error) error { return err }

func TestDuplicateMarkerAfterCompletionBeforeRelease(t *testing.T) {
	n := newBankNet(t, spec.Complete(2), nil)
	n.initiate("P1", 1)
	n.drain()
	nd := n.Nodes["P2"]
	require.Equal(t, core.Complete, nd.Phase(1))
	_, err := nd.Deliver(wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindMarker, Snap: 1}})
	require.ErrorIs(t, err, core.ErrDuplicateMarker)
	nd.TakeCompleted()
	_, err = nd.Deliver(wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindMarker, Snap: 1}})
	require.ErrorIs(t, err, core.ErrReleased)
	_, ok := nd.Snapshot(1)
	assert.False(t, ok, "released: only the id is remembered")
	assert.Equal(t, core.Released, nd.Phase(1))
}

func TestTokenRingTwoTokensIsAnError(t *testing.T) {
	n := newTokenNet(t, spec.Ring(2), "P1")
	n.send("P1", "P2", app.TokenPayload)
	nd := n.Nodes["P2"]
	before := core.Fingerprint(nd)
	_, err := nd.Deliver(wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: app.TokenPayload}})
	require.NoError(t, err)
	_, err = nd.Deliver(wire.Envelope{Chan: ch("P1", "P2"), Frame: wire.Frame{Kind: wire.KindApp, Seq: 2, Payload: app.TokenPayload}})
	require.ErrorIs(t, err, core.ErrApp)
	require.ErrorContains(t, err, "two tokens")
	assert.NotEqual(t, before, core.Fingerprint(nd))
	_, err = n.Nodes["P1"].SendApp("P2", app.TokenPayload)
	require.ErrorContains(t, err, "not holding it")
}

func TestRestoreRejectsBadCheckpoint(t *testing.T) {
	topo := spec.Complete(2)
	cfg := func() core.Config { b, _ := app.NewBank(7); return core.Config{Topology: topo, Self: "P1", App: b} }
	good := core.Checkpoint{App: []byte(`{"bal":3}`), State: spec.LocalState{Bal: 3, Sent: 1, Rcvd: 2}}
	nd, err := core.Restore(cfg(), good)
	require.NoError(t, err)
	assert.Equal(t, spec.LocalState{Bal: 3, Sent: 1, Rcvd: 2}, nd.State())
	assert.Equal(t, core.Unknown, nd.Phase(1))

	bad := func(edit func(*core.Checkpoint)) core.Checkpoint { cp := good; edit(&cp); return cp }
	cases := map[string]core.Checkpoint{
		"negative counters sent=-1":                          bad(func(cp *core.Checkpoint) { cp.State.Sent = -1 }),
		"P2->P1 is not an outgoing channel":                  bad(func(cp *core.Checkpoint) { cp.NextSend = map[spec.Channel]uint64{ch("P2", "P1"): 1} }),
		"P1->P2 is not an incoming channel":                  bad(func(cp *core.Checkpoint) { cp.NextRecv = map[spec.Channel]uint64{ch("P1", "P2"): 1} }),
		"next send seq on P1->P2 is 0":                       bad(func(cp *core.Checkpoint) { cp.NextSend = map[spec.Channel]uint64{ch("P1", "P2"): 0} }),
		"next receive seq on P2->P1 is 0":                    bad(func(cp *core.Checkpoint) { cp.NextRecv = map[spec.Channel]uint64{ch("P2", "P1"): 0} }),
		"bank: restore":                                      bad(func(cp *core.Checkpoint) { cp.App = []byte(`{"bal":-3}`) }),
		"application state has balance 3, checkpoint says 4": bad(func(cp *core.Checkpoint) { cp.State.Bal = 4 }),
	}
	for msg, cp := range cases {
		c := cfg()
		_, err := core.Restore(c, cp)
		assert.ErrorContains(t, err, msg)
		assert.Equal(t, int64(7), core.InitialBalance(c.App), "%s: application left as it was", msg)
	}
}
