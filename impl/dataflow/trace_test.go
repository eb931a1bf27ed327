package dataflow

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// injectEarly has every source emit one record and inject the barrier
// after it, returning the steps taken: a snapshot for Drain to complete.
func injectEarly(c *Cluster) int {
	steps := 0
	for _, n := range c.Nodes {
		if c.G.Nodes[n.id].Kind != Source {
			continue
		}
		for _, step := range []func() (Step, error){n.Emit, n.Inject} {
			if _, err := step(); err == nil {
				steps++
			}
		}
	}
	return steps
}

// A tracer attached to a cluster writes one line per step taken, in
// order, and nothing for a refused step; spec.ReadBarrierTrace reads it back with
// the graph, each step's record, logging and part.
func TestTraceRoundTrip(t *testing.T) {
	g := diamond(t, Unaligned, 3, 2)
	var b bytes.Buffer
	tr, err := NewTracer(&b, g, spec.BarrierHeader{Drained: true, Note: "round trip"})
	require.NoError(t, err)
	c := NewCluster(g, nil)
	tr.Attach(c)
	_, err = c.Take(s1x, ActProcess) // refused: the queue is empty
	require.ErrorIs(t, err, ErrEmpty)
	steps := injectEarly(c) + c.Drain()
	require.True(t, c.Complete())
	snap, err := c.Snapshot()
	require.NoError(t, err)
	r, err := RestoreCluster(g, snap, nil)
	require.NoError(t, err)
	tr.Restore(r)
	steps += r.Drain() + 1
	require.NoError(t, tr.Flush())

	got, err := spec.ReadBarrierTrace(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, g.Trace(), got.Header.Graph)
	assert.Equal(t, "round trip", got.Header.Note)
	require.Len(t, got.Events, steps)
	parts, restores := 0, 0
	for i, ev := range got.Events {
		assert.Equal(t, i+2, got.Lines[i])
		if ev.Part != nil {
			parts++
		}
		if ev.Action == spec.BarrierRestore {
			restores++
		}
	}
	assert.Equal(t, len(g.Nodes), parts, "each node's part, on the step it recorded in")
	assert.Equal(t, 1, restores)
}

// Without a tracer a step costs one nil test: BenchmarkDrain's untraced
// runs are the core's own cost, the traced ones add the encoding.
func BenchmarkDrain(b *testing.B) {
	g, err := NewGraph(Graph{
		Nodes: []NodeSpec{{Name: "S1", Budget: 200}, {Name: "S2", Budget: 200},
			{Name: "X", Kind: Operator}, {Name: "K", Kind: Sink}},
		Edges: []EdgeSpec{{From: 0, To: 2}, {From: 1, To: 2}, {From: 2, To: 3}},
		Cap:   4, Mode: Unaligned,
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, traced := range []bool{false, true} {
		name := map[bool]string{false: "untraced", true: "traced"}[traced]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				c := NewCluster(g, nil)
				if traced {
					tr, _ := NewTracer(io.Discard, g, spec.BarrierHeader{})
					tr.Attach(c)
				}
				injectEarly(c)
				c.Drain()
			}
		})
	}
}
