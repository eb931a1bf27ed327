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
