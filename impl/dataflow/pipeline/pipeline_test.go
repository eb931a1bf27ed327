package pipeline

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// The pipeline's output is, per key, the sum of 3i+1 over the records of
// that key.
func TestPipelineSums(t *testing.T) {
	const par, budget = 3, 25
	g, logics, err := Pipeline(par, budget, 2, dataflow.Aligned)
	require.NoError(t, err)
	c := dataflow.NewCluster(g, logics())
	c.DrainRecords()
	want := map[int64]int64{}
	for s := range par {
		for i := 1; i <= budget; i++ {
			want[key(dataflow.Item{Src: s, I: i})] += 3*int64(i) + 1
		}
	}
	assert.Equal(t, want, c.Sink().Logic().(*Sink).Latest)
}

// Each record leaves the loop with the integer square root of i*1000003.
func TestIterationConverges(t *testing.T) {
	const budget = 12
	g, logics, err := Iteration(budget, 20, 2, dataflow.Unaligned)
	require.NoError(t, err)
	c := dataflow.NewCluster(g, logics())
	c.DrainRecords()
	out := c.Sink().Logic().(*Sink).Latest
	require.Len(t, out, budget)
	for i := 1; i <= budget; i++ {
		n := float64(i) * 1000003
		assert.Equal(t, int64(math.Sqrt(n)), out[int64(i)], "record %d", i)
	}
}

func TestPipelineRefusesNoParallelism(t *testing.T) {
	_, _, err := Pipeline(0, 1, 1, dataflow.Aligned)
	assert.Error(t, err)
}

// Restoring the pipeline's snapshot into another application's logics
// is an error naming the node, not a panic.
func TestRestoreRefusesAnotherAppsState(t *testing.T) {
	g, logics, err := Pipeline(1, 3, 2, dataflow.Aligned)
	require.NoError(t, err)
	c := dataflow.NewCluster(g, logics())
	_, err = c.Nodes[0].Inject()
	require.NoError(t, err)
	c.DrainRecords()
	for e := range g.Edges {
		_, _ = c.Take(e, dataflow.ActRecvBarrier)
		c.DrainRecords()
	}
	snap, err := c.Snapshot()
	require.NoError(t, err)
	_, err = dataflow.RestoreCluster(g, snap, logics())
	require.NoError(t, err)
	wrong := logics()
	wrong[2] = &Sink{} // the aggregation's state into a sink
	_, err = dataflow.RestoreCluster(g, snap, wrong)
	assert.ErrorContains(t, err, "agg0's recorded state: pipeline: the sink's state is its output, not pipeline.Sums")
}
