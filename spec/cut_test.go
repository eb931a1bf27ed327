package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ChanCut.Check on a record: ConsistentCut (Got <= Sent) and
// ExactChannelState (messages Got+1 .. Sent, in order).
func TestChanCutCheck(t *testing.T) {
	c := Channel{From: "P1", To: "P2"}
	o, x := ChanCut{Sent: 3, Got: 1}.Check(c, []AppMsg{{30, 2}, {10, 3}})
	assert.NoError(t, o)
	assert.NoError(t, x)

	o, x = ChanCut{Sent: 1, Got: 0}.Check(c, nil)
	assert.NoError(t, o)
	assert.EqualError(t, x, "0 messages recorded, but 1 were in flight across the cut (seq 1)")
	_, x = ChanCut{Sent: 9, Got: 4}.Check(c, nil)
	assert.EqualError(t, x, "0 messages recorded, but 5 were in flight across the cut (seqs 5..9)")
	_, x = ChanCut{Sent: 2, Got: 0}.Check(c, []AppMsg{{30, 2}, {10, 1}})
	assert.EqualError(t, x, "message 0 has seq 2, want 1")

	o, x = ChanCut{Sent: 0, Got: 1}.Check(c, []AppMsg{{30, 1}})
	assert.EqualError(t, o, "orphan messages: P2 received up to seq 1 when it recorded, but P1 had sent only up to seq 0 when it recorded")
	assert.EqualError(t, x, "1 messages recorded, but 0 were in flight across the cut (none: the receiver expected seq 2, the sender's next was seq 1)")
	assert.Equal(t, o, CheckChannel(c, ChanCut{Sent: 0, Got: 1}, []AppMsg{{30, 1}}), "the orphan first")
	assert.NoError(t, CheckChannel(c, ChanCut{Sent: 2, Got: 2}, nil))
}

// cutRun builds a two-process run event by event.
type cutRun struct{ events []Event }

func (r *cutRun) send(p, q ProcID, amt int64, seq uint64) *cutRun {
	r.events = append(r.events, Event{Proc: p, Action: SendApp, From: p, To: q, Amount: amt, Msg: seq})
	return r
}

func (r *cutRun) recv(p, q ProcID, amt int64, seq uint64) *cutRun {
	r.events = append(r.events, Event{Proc: q, Action: RecvApp, From: p, To: q, Amount: amt, Msg: seq, After: LocalState{Bal: amt}})
	return r
}

func (r *cutRun) initiate(p ProcID, s SnapID) *cutRun {
	r.events = append(r.events, Event{Proc: p, Action: Initiate, Snap: s, After: LocalState{Bal: 7}})
	return r
}

func (r *cutRun) marker(p, q ProcID, s SnapID) *cutRun {
	r.events = append(r.events, Event{Proc: q, Action: RecvMarker, From: p, To: q, Snap: s})
	return r
}

func (r *cutRun) cut(s SnapID) (*CutIndex, SnapCut) {
	x := NewCutIndex(Complete(2), r.events)
	return x, x.Cut(s)
}

var (
	c12 = Channel{From: "P1", To: "P2"}
	c21 = Channel{From: "P2", To: "P1"}
)

func TestCutInFlightRecorded(t *testing.T) {
	// The article's $30 in flight: P2 initiates after P1 sent it; P1
	// records at P2's marker; P2 receives the $30 while recording P1->P2.
	x, k := new(cutRun).send("P1", "P2", 30, 1).initiate("P2", 1).marker("P2", "P1", 1).recv("P1", "P2", 30, 1).marker("P1", "P2", 1).cut(1)
	assert.Empty(t, x.Problems)
	assert.Empty(t, x.SendProblems)
	assert.Equal(t, []SnapID{1}, x.Snaps)
	assert.Equal(t, ProcID("P2"), x.Initiator(1))
	assert.Equal(t, map[ProcID]int{"P1": 2, "P2": 1}, k.Rec)
	assert.True(t, k.Complete())
	v := k.Chan(c12)
	require.NotNil(t, v)
	assert.Equal(t, ChanCut{Sent: 1, Got: 0}, v.Cut)
	assert.Equal(t, 4, v.Marker)
	assert.Equal(t, []RunMsg{{Chan: c12, AppMsg: AppMsg{30, 1}, Send: 0, Recv: 3}}, v.InFlight)
	assert.Equal(t, v.InFlight, v.Received)
	assert.Empty(t, v.Orphans)
	assert.Equal(t, map[Channel][]AppMsg{c12: {{30, 1}}}, k.Implied().Chans)
	assert.Equal(t, LocalState{Bal: 7}, k.Implied().Procs["P2"], "P2's state at its Initiate")

	recorded := []MsgFinding{{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgRecorded}}
	vs := k.JudgeEvents()
	require.Len(t, vs, 2)
	assert.True(t, vs[0].Exact && vs[1].Exact)
	assert.Equal(t, recorded, Findings(vs))
	assert.Equal(t, recorded, Findings(k.JudgeReport(map[Channel][]AppMsg{c12: {{30, 1}}})))

	// A report without the $30 misses it; one with a message not in
	// flight, on a channel or not, has it spurious.
	vs = k.JudgeReport(nil)
	assert.False(t, vs[0].Exact)
	assert.Equal(t, []AppMsg{{30, 1}}, vs[0].Want())
	assert.Equal(t, []MsgFinding{{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgMissing}}, Findings(vs))
	odd := Channel{From: "P1", To: "P9"}
	vs = k.JudgeReport(map[Channel][]AppMsg{c12: {{30, 1}, {30, 1}}, c21: {{5, 1}}, odd: {{1, 1}}})
	require.Len(t, vs, 3)
	assert.Nil(t, vs[2].View, "not a channel")
	assert.Equal(t, []MsgFinding{
		{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgRecorded},
		{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgSpurious},
		{Chan: c21, Msg: AppMsg{5, 1}, Status: MsgSpurious},
		{Chan: odd, Msg: AppMsg{1, 1}, Status: MsgSpurious},
	}, Findings(vs))
}

func TestCutOrphan(t *testing.T) {
	// The article's $180: P1 records, then sends $30, which overtakes its
	// marker; P2 records after receiving it.
	_, k := new(cutRun).initiate("P1", 1).send("P1", "P2", 30, 1).recv("P1", "P2", 30, 1).marker("P1", "P2", 1).marker("P2", "P1", 1).cut(1)
	assert.True(t, k.Complete())
	v := k.Chan(c12)
	assert.Equal(t, ChanCut{Sent: 0, Got: 1}, v.Cut)
	assert.True(t, v.Cut.Orphan())
	assert.Equal(t, []RunMsg{{Chan: c12, AppMsg: AppMsg{30, 1}, Send: 1, Recv: 2}}, v.Orphans)
	assert.Empty(t, v.InFlight)
	assert.Equal(t, []MsgFinding{{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgOrphan}}, Findings(k.JudgeEvents()))
}

func TestCutMissingAndPending(t *testing.T) {
	// The article's $120: the marker overtakes the $30 sent before it.
	_, k := new(cutRun).send("P1", "P2", 30, 1).initiate("P1", 1).marker("P1", "P2", 1).recv("P1", "P2", 30, 1).marker("P2", "P1", 1).cut(1)
	assert.Empty(t, k.Chan(c12).Received)
	assert.Equal(t, []MsgFinding{{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgMissing}}, Findings(k.JudgeEvents()))

	// Before the marker arrives, the $30 is pending in the events, and
	// missing from a report (a report is final).
	_, k = new(cutRun).send("P1", "P2", 30, 1).initiate("P2", 1).cut(1)
	assert.Equal(t, []string{"P1 never recorded", "no marker received on P1->P2", "no marker received on P2->P1"}, k.Incomplete())
	assert.False(t, k.Complete())
	assert.Equal(t, []MsgFinding{{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgPending}}, Findings(k.JudgeEvents()))
	assert.Equal(t, []MsgFinding{{Chan: c12, Msg: AppMsg{30, 1}, Status: MsgMissing}}, Findings(k.JudgeReport(nil)))
}

func TestCutIndexProblems(t *testing.T) {
	x, k := new(cutRun).send("P1", "P2", 30, 2).send("P1", "P2", 30, 2).recv("P2", "P1", 5, 1).marker("P2", "P1", 1).marker("P1", "P2", 1).marker("P1", "P2", 1).cut(1)
	assert.Equal(t, []string{"P1 sends 30#2 on P1->P2 out of sequence", "P1 sends 30#2 on P1->P2 out of sequence"}, x.SendProblems)
	assert.Equal(t, []string{
		"event 2: SendApp(P1, P2, 30) #2 sent twice (first at event 1)",
		"event 4: RecvMarker(P2, P1) [snap 1]: P2 had not recorded for snapshot 1, so sent no marker",
		"event 6: RecvMarker(P1, P2) [snap 1]: second marker of snapshot 1 on P1->P2",
		"event 3: message P2->P1 #1 received but never sent",
	}, x.Problems)
	assert.Equal(t, -1, x.Find(c12, 1))
	assert.Equal(t, 0, x.Find(c12, 2))
	assert.Empty(t, x.Initiator(1))
	// P1 received a message P2 never sent before P1 recorded: an orphan.
	assert.Equal(t, []MsgFinding{{Chan: c21, Msg: AppMsg{5, 1}, Status: MsgOrphan}}, k.JudgeEvents()[1].Findings)
}
