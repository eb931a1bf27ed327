package run

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
)

// The adaptive mode on both runtimes, behind a slow aggregation: with an
// aligned timeout of 0 the operators that block switch at once (channel
// state, type unaligned), with one of a minute none does (no channel
// state, every part aligned); either way the run restored from its
// latest checkpoint ends with the failure-free output, every record at
// the sink once.
func TestAdaptiveRuntimes(t *testing.T) {
	for _, rt := range []struct {
		name string
		run  runFunc
	}{{"memory", Run}, {"tcp", RunTCP}} {
		for _, timeout := range []time.Duration{0, time.Minute} {
			t.Run(rt.name+"/"+timeout.String(), func(t *testing.T) {
				adaptiveRun(t, rt.run, timeout)
			})
		}
	}
}

func adaptiveRun(t *testing.T, run runFunc, timeout time.Duration) {
	g, logics, err := pipeline.Pipeline(3, budget, 4, dataflow.Adaptive)
	require.NoError(t, err)
	free := dataflow.NewCluster(g, logics())
	_, want := outputOf(t, run, free, Options{InjectAt: -1, FailAfter: -1})
	slow := map[int]time.Duration{len(g.Nodes) - 2: 200 * time.Microsecond}
	c := dataflow.NewCluster(g, logics())
	res, _ := outputOf(t, run, c, Options{InjectAt: budget / 2, FailAfter: budget / 2, Throttle: slow, AlignedTimeout: timeout})
	require.True(t, res.Failed)
	require.Len(t, res.Checkpoints, 1)
	switched, bytes := 0, 0
	for i, cost := range res.Checkpoints[0].Costs() {
		if g.Nodes[i].Kind == dataflow.Source {
			assert.Equal(t, dataflow.TypeNone, cost.Type)
			continue
		}
		want := dataflow.TypeAligned
		if cost.Switched {
			switched++
			want = dataflow.TypeUnaligned
		}
		assert.Equal(t, want, cost.Type, "%s reports the type it took", g.Nodes[i].Name)
		bytes += cost.Bytes
	}
	if timeout > 0 {
		assert.Zero(t, switched, "no alignment lasts a minute")
		assert.Zero(t, bytes, "an adaptive checkpoint that never switched records no channel state")
	} else {
		assert.Positive(t, switched, "an aligned timeout of 0 switches the operators that block")
	}
	r, err := dataflow.RestoreCluster(g, res.Latest(), logics())
	require.NoError(t, err)
	_, got := outputOf(t, run, r, Options{InjectAt: -1, FailAfter: -1, Throttle: slow})
	exactlyOnce(t, g, r)
	assert.Equal(t, want, got)
}
