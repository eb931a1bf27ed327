package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func loadTLA(t *testing.T, name string) *Config {
	t.Helper()
	cfg, err := Load("../tla/" + name + ".cfg")
	require.NoError(t, err)
	return cfg
}

// step applies an action that must be enabled, checks that it left its
// input alone, and checks every invariant of the spec in the successor.
type result struct {
	n   *State
	err error
}

func r(n *State, err error) result { return result{n, err} }

func step(t *testing.T, cfg *Config, st *State, label string, res result) *State {
	t.Helper()
	n, err := res.n, res.err
	require.NoError(t, err, "%s should be enabled", label)
	require.NotNil(t, n)
	found := false
	for _, tr := range Next(cfg, st) {
		if Key(cfg, tr.State) == Key(cfg, n) {
			found = true
		}
	}
	assert.True(t, found, "%s's successor is not among Next's", label)
	for name, f := range invariantFuncs {
		if mustHold(cfg.Variant, name) {
			assert.True(t, f(cfg, n), "%s violated after %s", name, label)
		}
	}
	return n
}

// disabled checks that an action is not enabled, for the reason want
// (the NotEnabled error's text, naming the false conjunct).
func disabled(t *testing.T, label string, n *State, err error, want string) {
	t.Helper()
	var ne *NotEnabled
	require.ErrorAs(t, err, &ne, "%s should be disabled", label)
	assert.EqualError(t, err, want, label)
	assert.Nil(t, n)
}

func recTotal(cfg *Config, st *State, s int) int64 {
	var sum int64
	for _, l := range st.RecProc[s] {
		sum += l.Bal
	}
	for _, ms := range st.RecMsgs[s] {
		for _, m := range ms {
			sum += m.Amt
		}
	}
	return sum
}

func ch(cfg *Config, p, q spec.ProcID) int { return cfg.ChanIndex(p, q) }

// The article's token ring P1 -> P2 -> P3 -> P1, step by step. The token
// is a balance of 1 held by P2; P1 holds none and initiates.
func TestArticleTokenRing(t *testing.T) {
	cfg := loadTLA(t, "MCRing")
	st := Init(cfg)
	before := Key(cfg, st)
	p1, p2, p3 := 0, 1, 2
	c12, c23, c31 := ch(cfg, "P1", "P2"), ch(cfg, "P2", "P3"), ch(cfg, "P3", "P1")

	// Nothing to receive yet; P1 holds no token so it cannot send one.
	n, err := RecvApp(cfg, st, "P1", "P2")
	disabled(t, "RecvApp(P1,P2)", n, err,
		`RecvApp("P1","P2") is not enabled: channel P1->P2 is empty in the model (i \in 1..Len(chan[<<p, q>>]), ChandyLamport.tla line 192)`)
	n, err = RecvMarker(cfg, st, "P3", "P1")
	disabled(t, "RecvMarker(P3,P1)", n, err,
		`RecvMarker("P3","P1") is not enabled: channel P3->P1 is empty in the model (i \in 1..Len(chan[c]), ChandyLamport.tla line 232)`)
	n, err = SendApp(cfg, st, "P1", "P2", 1)
	disabled(t, "SendApp(P1,P2,1) without the token", n, err,
		`SendApp("P1","P2",1) is not enabled: P1's balance 0 is less than 1 (proc[p].bal >= a, ChandyLamport.tla line 163)`)
	n, err = SendApp(cfg, st, "P1", "P3", 1)
	disabled(t, "SendApp on a channel that does not exist", n, err,
		`SendApp("P1","P3",1) is not enabled: <<P1, P3>> is not a channel (<<p, q>> \in Chan, ChandyLamport.tla line 250)`)

	// 1. P1 initiates: records hasToken=false, marker to P2, records c31.
	st = step(t, cfg, st, "Initiate(1)", r(Initiate(cfg, st, 1)))
	assert.Equal(t, before, Key(cfg, Init(cfg)), "Init is a value")
	assert.True(t, st.Recorded[0].Has(p1))
	assert.Equal(t, int64(0), st.RecProc[0][p1].Bal)
	assert.Equal(t, []Msg{MarkerOf(0)}, st.Chan[c12])
	assert.Equal(t, Recording, st.RecChan[0][c31])
	assert.True(t, Initiated(cfg, st, 0))
	assert.False(t, Complete(cfg, st, 0))
	n, err = Initiate(cfg, st, 1)
	disabled(t, "Initiate(1) twice", n, err,
		`Initiate(1) is not enabled: its initiator P1 has already recorded for snapshot 1 (Initiator[s] \notin recorded[s], ChandyLamport.tla line 223)`)
	n, err = Initiate(cfg, st, 7)
	disabled(t, "Initiate of an unknown snapshot", n, err,
		`Initiate(7) is not enabled: snapshot 7 is not in Snap (s \in Snap, ChandyLamport.tla line 252)`)

	// 2. P2 sends the token to P3 before P1's marker arrives.
	st = step(t, cfg, st, "SendApp(P2,P3,1)", r(SendApp(cfg, st, "P2", "P3", 1)))
	assert.Equal(t, []Msg{AppMsgOf(1, 1)}, st.Chan[c23])
	assert.Equal(t, int64(0), st.Proc[p2].Bal)

	// 3. P2 receives P1's marker: case 1, records hasToken=false, c12
	// empty, marker forwarded behind the token.
	st0 := st
	k0 := Key(cfg, st0)
	st = step(t, cfg, st, "RecvMarker(P1,P2)", r(RecvMarker(cfg, st, "P1", "P2")))
	assert.Equal(t, k0, Key(cfg, st0), "RecvMarker must not modify its input")
	assert.True(t, st.Recorded[0].Has(p2))
	assert.Equal(t, int64(0), st.RecProc[0][p2].Bal)
	assert.Equal(t, Done, st.RecChan[0][c12])
	assert.Empty(t, st.RecMsgs[0][c12])
	assert.Equal(t, []Msg{AppMsgOf(1, 1), MarkerOf(0)}, st.Chan[c23])

	// 4. The token reaches P3 ahead of the marker (FIFO), then the marker:
	// P3 records hasToken=true, c23 empty, marker forwarded to P1.
	n, err = RecvMarker(cfg, st, "P2", "P3")
	disabled(t, "RecvMarker(P2,P3) behind the token", n, err,
		`RecvMarker("P2","P3") is not enabled: the head of P2->P3 is 1#1, not a marker (chan[c][i].kind = "marker", ChandyLamport.tla line 233)`)
	st = step(t, cfg, st, "RecvApp(P2,P3)", r(RecvApp(cfg, st, "P2", "P3")))
	assert.Equal(t, int64(1), st.Proc[p3].Bal)
	n, err = RecvApp(cfg, st, "P2", "P3")
	disabled(t, "RecvApp(P2,P3) on a marker", n, err,
		`RecvApp("P2","P3") is not enabled: the head of P2->P3 is Marker(1), not an application message (chan[<<p, q>>][i].kind = "app", ChandyLamport.tla line 193)`)
	st = step(t, cfg, st, "RecvMarker(P2,P3)", r(RecvMarker(cfg, st, "P2", "P3")))
	assert.Equal(t, int64(1), st.RecProc[0][p3].Bal)
	assert.Equal(t, Done, st.RecChan[0][c23])
	assert.Equal(t, []Msg{MarkerOf(0)}, st.Chan[c31])

	// 5. P1 receives P3's marker: case 2, c31 recorded empty.
	st = step(t, cfg, st, "RecvMarker(P3,P1)", r(RecvMarker(cfg, st, "P3", "P1")))
	assert.Equal(t, Done, st.RecChan[0][c31])

	// 6. Complete: P1 false, P2 false, P3 true; all channels empty; one token.
	assert.True(t, Complete(cfg, st, 0))
	assert.Equal(t, []int64{0, 0, 1}, []int64{st.RecProc[0][p1].Bal, st.RecProc[0][p2].Bal, st.RecProc[0][p3].Bal})
	for c := range cfg.Topo.Chans {
		assert.Empty(t, st.RecMsgs[0][c], "channel %s", cfg.Topo.Chans[c])
	}
	assert.Equal(t, int64(1), recTotal(cfg, st, 0))
	assert.Equal(t, -1, SnapshotDone(cfg, st))
	// The recorded state is the pre shadow, and the post shadow is now.
	assert.True(t, st.Pre[0].Equal(RecordedApp(st, 0)))
	assert.True(t, st.Post[0].Equal(CurrentApp(st)))
}

// The article's puzzle: m21 is in transit on c21 when P1 initiates. It
// ends up as c21's recorded state, and P1's recorded balance is pre-m21.
func TestArticlePuzzleM21(t *testing.T) {
	cfg := loadTLA(t, "MCTwoBank")
	p1, p2 := 0, 1
	c12, c21 := ch(cfg, "P1", "P2"), ch(cfg, "P2", "P1")
	st := Init(cfg)
	st = step(t, cfg, st, "SendApp(P2,P1,30)", r(SendApp(cfg, st, "P2", "P1", 30))) // m21
	n, err := SendApp(cfg, st, "P2", "P1", 30)
	disabled(t, "SendApp(P2,P1,30) past P2's budget of 1", n, err,
		`SendApp("P2","P1",30) is not enabled: P2 has spent its budget (proc[P2].sent = 1, Budget[P2] = 1) (proc[p].sent < Budget[p], ChandyLamport.tla line 162)`)
	st = step(t, cfg, st, "Initiate(1)", r(Initiate(cfg, st, 1)))
	assert.Equal(t, int64(100), st.RecProc[0][p1].Bal)
	assert.Equal(t, Recording, st.RecChan[0][c21])
	st = step(t, cfg, st, "RecvApp(P2,P1)", r(RecvApp(cfg, st, "P2", "P1"))) // m21 arrives, recorded
	assert.Equal(t, int64(130), st.Proc[p1].Bal)
	assert.Equal(t, []spec.AppMsg{{Amt: 30, Seq: 1}}, st.RecMsgs[0][c21])
	st = step(t, cfg, st, "RecvMarker(P1,P2)", r(RecvMarker(cfg, st, "P1", "P2")))
	assert.Equal(t, spec.LocalState{Bal: 20, Sent: 1}, st.RecProc[0][p2], "P2: post-send memory")
	st = step(t, cfg, st, "RecvMarker(P2,P1)", r(RecvMarker(cfg, st, "P2", "P1")))
	require.True(t, Complete(cfg, st, 0))
	assert.Equal(t, spec.LocalState{Bal: 100}, st.RecProc[0][p1], "P1: pre-m21 memory")
	assert.Equal(t, []spec.AppMsg{{Amt: 30, Seq: 1}}, st.RecMsgs[0][c21], "c21 = [m21]")
	assert.Empty(t, st.RecMsgs[0][c12])
	assert.Equal(t, int64(150), recTotal(cfg, st, 0))
}

// The two-account transfer: every complete snapshot totals $150, whether
// the $30 is recorded in a balance or in a channel. Without FIFO the
// transfer can overtake the marker ($180, an orphan); without channel
// recording it vanishes ($120).
func TestArticleTwoAccountTransfer(t *testing.T) {
	cfg := loadTLA(t, "MCTwoBank")
	p1, p2 := 0, 1

	// P1 sends $30, then initiates: the marker follows the transfer.
	st := Init(cfg)
	st = step(t, cfg, st, "SendApp(P1,P2,30)", r(SendApp(cfg, st, "P1", "P2", 30)))
	st = step(t, cfg, st, "Initiate(1)", r(Initiate(cfg, st, 1)))
	st = step(t, cfg, st, "RecvApp(P1,P2)", r(RecvApp(cfg, st, "P1", "P2")))
	st = step(t, cfg, st, "RecvMarker(P1,P2)", r(RecvMarker(cfg, st, "P1", "P2")))
	st = step(t, cfg, st, "RecvMarker(P2,P1)", r(RecvMarker(cfg, st, "P2", "P1")))
	require.True(t, Complete(cfg, st, 0))
	assert.Equal(t, int64(70), st.RecProc[0][p1].Bal)
	assert.Equal(t, int64(80), st.RecProc[0][p2].Bal)
	assert.Equal(t, int64(150), recTotal(cfg, st, 0))

	// P1 initiates, then sends $30: the transfer is sent after P1's cut and
	// queues behind the marker, so P2 records $50 and P1's $100 stands.
	st = Init(cfg)
	st = step(t, cfg, st, "Initiate(1)", r(Initiate(cfg, st, 1)))
	st = step(t, cfg, st, "SendApp(P1,P2,30)", r(SendApp(cfg, st, "P1", "P2", 30)))
	n, err := RecvApp(cfg, st, "P1", "P2")
	disabled(t, "RecvApp(P1,P2): the transfer is behind the marker", n, err,
		`RecvApp("P1","P2") is not enabled: the head of P1->P2 is Marker(1), not an application message (chan[<<p, q>>][i].kind = "app", ChandyLamport.tla line 193)`)
	st = step(t, cfg, st, "RecvMarker(P1,P2)", r(RecvMarker(cfg, st, "P1", "P2")))
	st = step(t, cfg, st, "RecvMarker(P2,P1)", r(RecvMarker(cfg, st, "P2", "P1")))
	require.True(t, Complete(cfg, st, 0))
	assert.Equal(t, int64(150), recTotal(cfg, st, 0))
	assert.Equal(t, []int64{100, 50}, []int64{st.RecProc[0][p1].Bal, st.RecProc[0][p2].Bal})

	// Non-FIFO: the $30 overtakes the marker and P2 records $80: $180.
	nf := *cfg
	nf.Variant = VariantNonFIFO
	st = Init(&nf)
	st, _ = Initiate(&nf, st, 1)
	st, _ = SendApp(&nf, st, "P1", "P2", 30)
	n, err = RecvAppAt(&nf, st, "P1", "P2", 1)
	disabled(t, "RecvAppAt(P1,P2,1) on the marker", n, err,
		`RecvAppAt("P1","P2",1) is not enabled: the head of P1->P2 is Marker(1), not an application message (chan[<<p, q>>][i].kind = "app", ChandyLamport.tla line 193)`)
	n, err = RecvAppAt(&nf, st, "P1", "P2", 3)
	disabled(t, "RecvAppAt(P1,P2,3) past the end", n, err,
		`RecvAppAt("P1","P2",3) is not enabled: channel P1->P2 holds 2 messages, none at position 3 (i \in 1..Len(chan[<<p, q>>]), ChandyLamport.tla line 192)`)
	n, err = RecvMarkerAt(&nf, st, "P1", "P2", 2)
	disabled(t, "RecvMarkerAt(P1,P2,2) on the transfer", n, err,
		`RecvMarkerAt("P1","P2",2) is not enabled: position 2 of P1->P2 is 30#1, not a marker (chan[c][i].kind = "marker", ChandyLamport.tla line 233)`)
	st, err = RecvAppAt(&nf, st, "P1", "P2", 2)
	require.NoError(t, err)
	assert.True(t, ConsistentCut(&nf, st), "P2 has not recorded yet")
	st, err = RecvMarkerAt(&nf, st, "P1", "P2", 1)
	require.NoError(t, err)
	assert.False(t, ConsistentCut(&nf, st), "the orphan message")
	st, _ = RecvMarkerAt(&nf, st, "P2", "P1", 1)
	require.True(t, Complete(&nf, st, 0))
	assert.Equal(t, int64(180), recTotal(&nf, st, 0))
	assert.False(t, Conservation(&nf, st))
	assert.False(t, SnapshotReachable(&nf, st), "pre shadow: P2 received $30 before P1 sent it")

	// No channel recording: P2 sends $30, P1 initiates, the $30 reaches P1
	// while c21 should be recording it: $100 + $20 = $120.
	nr := *cfg
	nr.Variant = VariantNoRecord
	st = Init(&nr)
	st, _ = SendApp(&nr, st, "P2", "P1", 30)
	st, _ = Initiate(&nr, st, 1)
	st, err = RecvAppNoRecord(&nr, st, "P2", "P1")
	require.NoError(t, err)
	assert.Empty(t, st.RecMsgs[0][ch(&nr, "P2", "P1")])
	st, _ = RecvMarker(&nr, st, "P1", "P2")
	st, _ = RecvMarker(&nr, st, "P2", "P1")
	require.True(t, Complete(&nr, st, 0))
	assert.Equal(t, int64(120), recTotal(&nr, st, 0))
	assert.False(t, Conservation(&nr, st))
}

// Without forwarding, P3 never hears of the snapshot.
func TestRecvMarkerNoForward(t *testing.T) {
	cfg := loadTLA(t, "MCNoForward")
	st := Init(cfg)
	st, _ = Initiate(cfg, st, 1)
	n, err := RecvMarkerNoForward(cfg, st, "P2", "P3")
	disabled(t, "RecvMarkerNoForward(P2,P3) on an empty channel", n, err,
		`RecvMarkerNoForward("P2","P3") is not enabled: channel P2->P3 is empty in the model (chan[c] # <<>>, ChandyLamportNoForward.tla line 11)`)
	st, err = RecvMarkerNoForward(cfg, st, "P1", "P2")
	require.NoError(t, err)
	assert.True(t, st.Recorded[0].Has(1))
	for _, ms := range st.Chan {
		assert.Empty(t, ms, "no marker forwarded")
	}
	assert.False(t, fairEnabled(cfg, st))
	assert.Equal(t, 0, SnapshotDone(cfg, st))
}

func TestNextOrderAndLabels(t *testing.T) {
	cfg := loadTLA(t, "MCTwoBank")
	st := Init(cfg)
	st, _ = SendApp(cfg, st, "P2", "P1", 30)
	var labels []string
	for _, tr := range Next(cfg, st) {
		labels = append(labels, tr.Label)
		again, err := tr.Action.Apply(cfg, st)
		require.NoError(t, err)
		assert.Equal(t, Key(cfg, tr.State), Key(cfg, again))
	}
	assert.Equal(t, []string{`SendApp("P1","P2",30)`, `RecvApp("P2","P1")`, `Initiate(1)`}, labels)

	nf := *cfg
	nf.Variant = VariantNonFIFO
	st = Init(&nf)
	st, _ = Initiate(&nf, st, 1)
	st, _ = SendApp(&nf, st, "P1", "P2", 30)
	labels = nil
	for _, tr := range Next(&nf, st) {
		labels = append(labels, tr.Label)
	}
	assert.Equal(t, []string{`SendApp("P1","P2",30)`, `SendApp("P2","P1",30)`, `RecvAppAt("P1","P2",2)`, `RecvMarkerAt("P1","P2",1)`}, labels)
}
