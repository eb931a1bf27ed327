package dataflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Adaptive: X blocks S1 once S1's barrier arrived; its alignment times
// out, it records at once, its barrier overtakes what X queued for K
// (persisted), S1 is done (what it blocked is the next snapshot's) and
// S2 follows the receiving rule until its barrier: its record before the
// barrier is logged. X reports unaligned, the type it took.
func TestAdaptiveTimeoutSwitches(t *testing.T) {
	g := diamond(t, Adaptive, 3, 4)
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Emit())
	must(t)(c.Take(s1x, ActProcess)) // X queues a record for K
	_, err := x.Timeout()
	assert.ErrorIs(t, err, ErrNotBlocked, "no barrier arrived: nothing to time out")
	must(t)(s1.Inject())
	must(t)(s1.Emit())
	must(t)(s2.Emit())
	must(t)(c.Take(s1x, ActRecvBarrier))
	require.True(t, x.Blocked())
	_, err = c.Take(s1x, ActProcess)
	assert.ErrorIs(t, err, ErrBlocked)
	st := must(t)(x.Timeout())
	assert.True(t, st.Recorded)
	assert.Equal(t, ActTimeout, st.Action)
	assert.True(t, x.Switched())
	assert.Equal(t, TypeUnaligned, x.Reported())
	assert.Equal(t, Done, x.RecChan(s1x))
	assert.Equal(t, Recording, x.RecChan(s2x))
	assert.Len(t, x.Part().Overtaken[xk], 1, "the barrier overtook X's queued record")
	head, _ := x.Head(xk)
	assert.True(t, head.Barrier)
	must(t)(c.Take(s1x, ActProcess)) // no longer blocked: it is the next snapshot's
	must(t)(c.Take(s2x, ActProcess)) // before S2's barrier: logged
	must(t)(s2.Inject())
	must(t)(c.Take(s2x, ActRecvBarrier))
	require.True(t, x.Done())
	assert.Len(t, x.Part().Logged[s2x], 1)
	assert.Equal(t, TypeUnaligned, x.Part().Type)
	_, err = x.Timeout()
	assert.ErrorIs(t, err, ErrTimeoutRecorded, "a timeout after recording is refused")
}

// An adaptive node that aligns in time reports aligned and records no
// channel state; a force-aligned edge's sender never switches, and its
// receiver only once the edge's barrier arrived.
func TestAdaptiveAlignedAndForceAligned(t *testing.T) {
	g := diamond(t, Adaptive, 2, 4)
	c := NewCluster(g, nil)
	must(t)(c.Nodes[0].Inject())
	must(t)(c.Nodes[1].Inject())
	c.Drain()
	require.True(t, c.Complete())
	x := c.Nodes[2].Part()
	assert.Equal(t, TypeAligned, x.Type)
	assert.False(t, x.Switched)
	assert.Empty(t, x.Overtaken)

	fg, err := NewGraph(Graph{Nodes: g.Nodes, Edges: []EdgeSpec{{From: 0, To: 2, ForceAligned: true}, {From: 1, To: 2}, {From: 2, To: 3, ForceAligned: true}},
		Cap: 4, Mode: Adaptive})
	require.NoError(t, err)
	c = NewCluster(fg, nil)
	must(t)(c.Nodes[1].Inject())
	must(t)(c.Take(s2x, ActRecvBarrier))
	_, err = c.Nodes[2].Timeout()
	assert.ErrorIs(t, err, ErrFeedsForceAligned)
	_, err = c.Nodes[3].Timeout()
	assert.ErrorIs(t, err, ErrNotBlocked)

	_, err = NewGraph(Graph{Nodes: g.Nodes, Edges: []EdgeSpec{{From: 0, To: 2, ForceAligned: true}, {From: 1, To: 2}, {From: 2, To: 3}}, Cap: 4, Mode: Aligned})
	assert.ErrorContains(t, err, "only the adaptive mode has force-aligned edges")
}

// A receiver of a force-aligned edge may switch only once that edge's
// barrier arrived.
func TestAdaptiveForceAlignedInput(t *testing.T) {
	base := diamond(t, Adaptive, 2, 4)
	g, err := NewGraph(Graph{Nodes: base.Nodes, Edges: []EdgeSpec{{From: 0, To: 2, ForceAligned: true}, {From: 1, To: 2}, {From: 2, To: 3}}, Cap: 4, Mode: Adaptive})
	require.NoError(t, err)
	c := NewCluster(g, nil)
	must(t)(c.Nodes[1].Inject())
	must(t)(c.Take(s2x, ActRecvBarrier))
	_, err = c.Nodes[2].Timeout()
	assert.ErrorIs(t, err, ErrForceAlignedPending)
	_, err = c.Nodes[0].Timeout()
	assert.ErrorIs(t, err, ErrSourceTimeout)
}

// The timeout in the output buffer (TimeoutOut): X recorded aligned, and
// its barrier waits on X -> K behind the records it queued there
// (backpressure). The barrier overtakes them; they are persisted in X's
// part, which is replaced (a runtime's copy of the old one is unchanged),
// and X reports unaligned. The records behind the barrier (sent after X
// recorded) stay behind it. Every refusal is TimeoutOutV's conjunct.
func TestAdaptiveTimeoutOut(t *testing.T) {
	g := diamond(t, Adaptive, 3, 4)
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	_, err := x.TimeoutOut()
	assert.ErrorIs(t, err, ErrTimeoutNotRecorded)
	_, err = s1.TimeoutOut()
	assert.ErrorIs(t, err, ErrTimeoutNotRecorded, "a source too, once it injected")
	must(t)(s1.Emit())
	must(t)(s2.Emit())
	must(t)(c.Take(s1x, ActProcess))
	must(t)(c.Take(s2x, ActProcess)) // X queues two records for K
	must(t)(s1.Inject())
	must(t)(s2.Inject())
	must(t)(s1.Emit())
	must(t)(c.Take(s1x, ActRecvBarrier))
	must(t)(c.Take(s2x, ActRecvBarrier)) // X records aligned
	must(t)(c.Take(s1x, ActProcess))     // and queues a record after its barrier
	require.True(t, x.Done())
	old := x.Part()
	assert.Equal(t, TypeAligned, old.Type)
	assert.Len(t, x.Queue(xk), 4)

	st := must(t)(x.TimeoutOut())
	assert.Equal(t, ActTimeoutOut, st.Action)
	assert.False(t, st.Recorded, "its state was recorded already")
	q := x.Queue(xk)
	require.Len(t, q, 4)
	assert.True(t, q[0].Barrier, "the barrier overtook the records ahead of it")
	assert.Equal(t, []int{1, 2, 3}, []int{q[1].Seq, q[2].Seq, q[3].Seq}, "the records keep their order")
	p := x.Part()
	assert.Equal(t, []Item{q[1], q[2]}, p.Overtaken[xk], "the two records sent before X recorded are persisted, not the third")
	assert.Equal(t, TypeUnaligned, p.Type)
	assert.True(t, p.Switched)
	assert.True(t, p.OutTimeout)
	assert.Equal(t, old.CutSent, p.CutSent)
	assert.True(t, x.Switched())
	assert.False(t, x.CutAligned())
	assert.Empty(t, old.Overtaken, "the part handed out before is unchanged")
	assert.Equal(t, TypeAligned, old.Type)

	_, err = x.TimeoutOut()
	assert.ErrorIs(t, err, ErrAlreadySwitched)
	c.Drain()
	require.True(t, c.Complete())
	snap, err := c.Snapshot()
	require.NoError(t, err)
	r, err := RestoreCluster(g, snap, nil)
	require.NoError(t, err)
	r.DrainRecords()
	ff := NewCluster(g, nil)
	ff.DrainRecords()
	assert.Equal(t, ff.Sink().Output(), r.Sink().Output(), "restored: every record once, as without a failure")
}

// Nothing to overtake: X's barrier left its output (the receiver took
// it), or it never queued behind records, or the output is force-aligned.
func TestAdaptiveTimeoutOutNothingQueued(t *testing.T) {
	g := diamond(t, Adaptive, 2, 4)
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Inject())
	must(t)(s2.Inject())
	must(t)(c.Take(s1x, ActRecvBarrier))
	must(t)(c.Take(s2x, ActRecvBarrier))
	_, err := x.TimeoutOut()
	assert.ErrorIs(t, err, ErrNothingQueued, "the barrier is at the head: nothing ahead of it")

	fg, err := NewGraph(Graph{Nodes: g.Nodes, Edges: []EdgeSpec{{From: 0, To: 2}, {From: 1, To: 2}, {From: 2, To: 3, ForceAligned: true}}, Cap: 4, Mode: Adaptive})
	require.NoError(t, err)
	c = NewCluster(fg, nil)
	s1, s2, x = c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Emit())
	must(t)(c.Take(s1x, ActProcess))
	must(t)(s1.Inject())
	must(t)(s2.Inject())
	must(t)(c.Take(s1x, ActRecvBarrier))
	must(t)(c.Take(s2x, ActRecvBarrier))
	_, err = x.TimeoutOut()
	assert.ErrorIs(t, err, ErrNothingQueued, "X -> K is force-aligned: its barrier stays behind the record")
	must(t)(c.Take(xk, ActProcess))
	must(t)(c.Take(xk, ActRecvBarrier))
	_, err = x.TimeoutOut()
	assert.ErrorIs(t, err, ErrNothingQueued)
}
