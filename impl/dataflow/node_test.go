package dataflow

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// diamond is S1 -> X, S2 -> X, X -> K: an operator with two inputs.
func diamond(t *testing.T, mode Mode, budget, capacity int) *Graph {
	t.Helper()
	g, err := NewGraph(Graph{
		Nodes: []NodeSpec{{Name: "S1", Budget: budget}, {Name: "S2", Budget: budget},
			{Name: "X", Kind: Operator}, {Name: "K", Kind: Sink}},
		Edges: []EdgeSpec{{From: 0, To: 2}, {From: 1, To: 2}, {From: 2, To: 3}},
		Cap:   capacity, Mode: mode,
	})
	require.NoError(t, err)
	return g
}

const (
	s1x = 0
	s2x = 1
	xk  = 2
)

// must fails the test if a step was refused.
func must(t *testing.T) func(Step, error) Step {
	return func(st Step, err error) Step {
		t.Helper()
		require.NoError(t, err)
		return st
	}
}

// Aligned: once S1's barrier reached X, X takes nothing more off S1 until
// S2's barrier arrives; it then records, and no channel state is recorded.
func TestAlignedBlocksAndRecordsNoChannelState(t *testing.T) {
	g := diamond(t, Aligned, 3, 4)
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Inject())
	must(t)(s1.Emit())
	must(t)(s2.Emit())
	st := must(t)(c.Take(s1x, ActRecvBarrier))
	assert.False(t, st.Recorded, "X waits for S2's barrier")
	_, err := c.Take(s1x, ActProcess)
	assert.ErrorIs(t, err, ErrBlocked)
	assert.Equal(t, ErrBlocked, x.CanTake(s1x))
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "X", e.Node)
	must(t)(c.Take(s2x, ActProcess)) // S2's pre-barrier record
	must(t)(s2.Inject())
	st = must(t)(c.Take(s2x, ActRecvBarrier))
	assert.True(t, st.Recorded)
	assert.Equal(t, 1, x.part.Cnt, "X recorded after S2's record, before S1's")
	must(t)(c.Take(s1x, ActProcess)) // unblocked
	for !c.Nodes[3].Done() {
		must(t)(c.TakeAny(xk))
	}
	require.True(t, c.Complete())
	snap, err := c.Snapshot()
	require.NoError(t, err)
	all, _ := snap.ChannelRecords(g)
	assert.Zero(t, all, "ABS on a DAG records no channel state")
}

// Unaligned: X records on its first barrier; its barrier overtakes its
// queued output, which is persisted; S2's records taken before S2's
// barrier are logged.
func TestUnalignedOvertakesAndLogs(t *testing.T) {
	g := diamond(t, Unaligned, 3, 4)
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Emit())
	must(t)(c.Take(s1x, ActProcess)) // X's output holds one record
	must(t)(s2.Emit())
	must(t)(s1.Inject())
	st := must(t)(c.Take(s1x, ActRecvBarrier))
	require.True(t, st.Recorded)
	head, _ := x.Head(xk)
	assert.True(t, head.Barrier, "the barrier overtook the queued record")
	assert.Len(t, x.part.Overtaken[xk], 1)
	must(t)(c.Take(s2x, ActProcess)) // logged: S2 has not recorded
	assert.Len(t, x.Logged(s2x), 1)
	must(t)(s2.Inject())
	must(t)(c.Take(s2x, ActRecvBarrier))
	must(t)(c.Take(xk, ActRecvBarrier))
	require.True(t, c.Complete())
	snap, err := c.Snapshot()
	require.NoError(t, err)
	assert.Len(t, snap.Channel(g, xk), 1)
	assert.Len(t, snap.Channel(g, s2x), 1)
}

// A full output buffer stops the sender: backpressure.
func TestBackpressure(t *testing.T) {
	g := diamond(t, Aligned, 5, 2)
	c := NewCluster(g, nil)
	must(t)(c.Nodes[0].Emit())
	must(t)(c.Nodes[0].Emit())
	_, err := c.Nodes[0].Emit()
	assert.ErrorIs(t, err, ErrNoRoom)
	must(t)(c.Take(s1x, ActProcess))
	must(t)(c.Take(s1x, ActProcess))
	must(t)(c.Nodes[1].Emit())
	_, err = c.Take(s2x, ActProcess)
	assert.ErrorIs(t, err, ErrNoRoom, "X's output holds Cap records")
	assert.Equal(t, 1, c.Nodes[1].NSent(s2x), "the refused record stays queued")
}

func TestRefusals(t *testing.T) {
	g := diamond(t, Aligned, 1, 2)
	c := NewCluster(g, nil)
	_, err := c.Nodes[2].Emit()
	assert.ErrorIs(t, err, ErrNotSource)
	_, err = c.Take(s1x, ActProcess)
	assert.ErrorIs(t, err, ErrEmpty)
	must(t)(c.Nodes[0].Emit())
	_, err = c.Nodes[0].Emit()
	assert.ErrorIs(t, err, ErrBudgetSpent)
	_, err = c.Take(s1x, ActRecvBarrier)
	assert.ErrorIs(t, err, ErrNotBarrier)
	_, err = c.Nodes[2].Process(xk, Item{Src: 0, I: 1, Seq: 1})
	assert.ErrorIs(t, err, ErrNotInput)
	_, err = c.Nodes[2].Process(s1x, Item{Src: 0, I: 1, Seq: 2})
	assert.ErrorIs(t, err, ErrSeq)
	_, err = c.Nodes[2].Process(s1x, Item{Src: 2, I: 1, Seq: 1})
	assert.ErrorIs(t, err, ErrBadItem)
	must(t)(c.Nodes[0].Inject())
	_, err = c.Nodes[0].Inject()
	assert.ErrorIs(t, err, ErrAlreadyRecorded)
	_, err = c.Take(s1x, ActRecvBarrier)
	assert.ErrorIs(t, err, ErrNotBarrier, "the barrier is behind the record (aligned)")
}

func TestNewGraphRefusesBadShapes(t *testing.T) {
	ok := Graph{Nodes: []NodeSpec{{Name: "S", Budget: 1}, {Name: "K", Kind: Sink}},
		Edges: []EdgeSpec{{From: 0, To: 1}}, Cap: 1}
	_, err := NewGraph(ok)
	require.NoError(t, err)
	for name, mut := range map[string]func(g *Graph){
		"no cap":       func(g *Graph) { g.Cap = 0 },
		"two sinks":    func(g *Graph) { g.Nodes = append(g.Nodes, NodeSpec{Name: "K2", Kind: Sink}) },
		"self loop":    func(g *Graph) { g.Edges = append(g.Edges, EdgeSpec{From: 1, To: 1}) },
		"out of range": func(g *Graph) { g.Edges = append(g.Edges, EdgeSpec{From: 0, To: 7}) },
		"sink budget":  func(g *Graph) { g.Nodes[1].Budget = 2 },
		"dup name":     func(g *Graph) { g.Nodes[1].Name = "S" },
		"back source":  func(g *Graph) { g.Edges[0].Back = true },
	} {
		g := ok
		g.Nodes = append([]NodeSpec(nil), ok.Nodes...)
		g.Edges = append([]EdgeSpec(nil), ok.Edges...)
		mut(&g)
		_, err := NewGraph(g)
		assert.ErrorIs(t, err, ErrGraph, name)
	}
}

// A snapshot that is not this graph's is refused, naming the node.
func TestRestoreRefusesForeignSnapshots(t *testing.T) {
	g := diamond(t, Unaligned, 1, 2)
	c := NewCluster(g, nil)
	for _, s := range c.Nodes[:2] {
		must(t)(s.Inject())
	}
	must(t)(c.Take(s1x, ActRecvBarrier))
	must(t)(c.Take(s2x, ActRecvBarrier))
	must(t)(c.Take(xk, ActRecvBarrier))
	snap, err := c.Snapshot()
	require.NoError(t, err)
	_, err = RestoreCluster(g, snap, nil)
	require.NoError(t, err)

	_, err = RestoreCluster(g, nil, nil)
	assert.ErrorContains(t, err, "no part for S1")
	_, err = RestoreCluster(g, &Snapshot{Parts: snap.Parts[:3]}, nil)
	assert.ErrorContains(t, err, "no part for S1")
	swapped := &Snapshot{Parts: []*Part{snap.Parts[1], snap.Parts[0], snap.Parts[2], snap.Parts[3]}}
	_, err = RestoreCluster(g, swapped, nil)
	assert.ErrorContains(t, err, "part for S1 is node 1's")
	bad := *snap.Parts[2]
	bad.CutSent = map[int]int{}
	_, err = Restore(g, &Snapshot{Parts: []*Part{snap.Parts[0], snap.Parts[1], &bad, snap.Parts[3]}}, 2, nil)
	assert.ErrorContains(t, err, `X's part has no sequence number for its output <<"X", "K">>`)
	bad = *snap.Parts[0]
	bad.Emitted = 5
	_, err = Restore(g, &Snapshot{Parts: []*Part{&bad, snap.Parts[1], snap.Parts[2], snap.Parts[3]}}, 0, nil)
	assert.ErrorContains(t, err, "S1's recorded counts are out of range")

	_, err = Collect(g, c.Nodes[:2])
	assert.Error(t, err)
	_, err = NewCluster(g, nil).Snapshot()
	assert.ErrorContains(t, err, "S1 has not completed its part")
}

// Chandy-Lamport on the dataflow: X records on its first barrier without
// blocking, its barrier goes behind its queued output (nothing
// overtaken), and S2's records before S2's barrier are logged.
func TestChandyLamportRecordsAtOnceBehindTheQueue(t *testing.T) {
	g := diamond(t, ChandyLamport, 3, 4)
	c := NewCluster(g, nil)
	s1, s2, x := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	must(t)(s1.Emit())
	must(t)(c.Take(s1x, ActProcess))
	must(t)(s2.Emit())
	must(t)(s1.Inject())
	must(t)(s1.Emit())
	st := must(t)(c.Take(s1x, ActRecvBarrier))
	require.True(t, st.Recorded, "records on the first barrier")
	head, _ := x.Head(xk)
	assert.False(t, head.Barrier, "the barrier is behind the queued record")
	assert.Empty(t, x.Part().Overtaken)
	must(t)(c.Take(s1x, ActProcess)) // not blocked
	must(t)(c.Take(s2x, ActProcess)) // logged
	assert.Len(t, x.Logged(s2x), 1)
	assert.Equal(t, "chandy-lamport", g.Mode.String())
}
