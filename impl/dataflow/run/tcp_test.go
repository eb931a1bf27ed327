package run

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
)

// A stop-the-world pause that falls due in a source's round (its emit
// made the snapshot due) is not seen drained before the record that
// round emitted is in the source's buffer: the drain check waits for the
// round (it used to read what the nodes published at their rounds' ends,
// saw no record anywhere, and let the sources inject behind a record in
// flight, which the iteration's back edge then recorded as channel
// state). Deterministic: the check is started inside the round, and
// must not answer before the round ends.
func TestTCPDrainWaitsForTheRound(t *testing.T) {
	g, logics, err := pipeline.Iteration(4, 2, 4, dataflow.Aligned)
	require.NoError(t, err)
	g = g.Successively()
	c := dataflow.NewCluster(g, logics())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := startTCP(ctx, g, make(chan error, 1))
	require.NoError(t, err)
	defer closeTCP(tr)
	nodes, err := tcpNodes(c, tr)
	require.NoError(t, err)
	b := newBook(c, Options{InjectAt: 1, FailAfter: -1, StopTheWorld: true})

	answer := make(chan bool, 1)
	var early []bool
	testHookInRound = func(n *tcpNode) {
		require.True(t, b.needsDrain(), "the round's emit made the stop-the-world snapshot due")
		go func() { answer <- tcpDrained(c, b, nodes) }()
		select {
		case d := <-answer:
			early = append(early, d) // answered mid-round: the bug
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer func() { testHookInRound = nil }()
	moved, err := nodes[0].round(g, b)
	testHookInRound = nil
	require.NoError(t, err)
	require.True(t, moved, "the source emitted")
	assert.Empty(t, early, "the drain check answered in the middle of the source's round")
	if len(early) == 0 {
		assert.False(t, <-answer, "the record the round emitted is in the source's buffer: not drained")
	}
	assert.Len(t, c.Nodes[0].Queue(0), 1)
	assert.False(t, tcpDrained(c, b, nodes), "the record is still in flight")
}
