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

// The adaptive mode on both runtimes, behind a slow aggregation: with an
// aligned timeout of 0 the barriers that block switch at once (channel
// state; an operator's type unaligned, a source's switch its output
// side's), with one of a minute none does (no channel
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
	// 2ms a record (not 0.2): at the injection the slow aggregation is
	// the bottleneck with records ahead of its barrier even when the
	// sources emit slowly (-race under load); at 0.2ms it drained them
	// in 1 of 120 runs, no barrier blocked and nothing switched.
	slow := map[int]time.Duration{len(g.Nodes) - 2: 2 * time.Millisecond}
	c := dataflow.NewCluster(g, logics())
	res, _ := outputOf(t, run, c, Options{InjectAt: budget / 2, FailAfter: budget / 2, Throttle: slow, AlignedTimeout: timeout})
	require.True(t, res.Failed)
	require.Len(t, res.Checkpoints, 1)
	costs := res.Checkpoints[0].Costs()
	switched, bytes := 0, 0
	for i, cost := range costs {
		if cost.Switched {
			switched++
		}
		bytes += cost.Bytes
		if g.Nodes[i].Kind == dataflow.Source {
			// A source never aligns: its one switch is its barrier
			// overtaking a full output buffer (TimeoutOut).
			assert.Equal(t, dataflow.TypeNone, cost.Type)
			assert.Equal(t, cost.Switched, cost.OutTimeout, "%s: a source's switch is the output side's", g.Nodes[i].Name)
			continue
		}
		want := map[bool]dataflow.SnapType{true: dataflow.TypeUnaligned, false: dataflow.TypeAligned}[cost.Switched]
		assert.Equal(t, want, cost.Type, "%s reports the type it took", g.Nodes[i].Name)
	}
	if timeout > 0 {
		assert.Zero(t, switched, "no alignment lasts a minute")
		assert.Zero(t, bytes, "an adaptive checkpoint that never switched records no channel state")
	} else {
		// Behind the slow aggregation a barrier blocks somewhere: in a
		// source's full output buffer (the source switches, TimeoutOut,
		// and the operators after it then align at once) or at an
		// operator's input (it switches, Timeout). Which one is the
		// scheduler's choice; that one of them switches is not.
		assert.Positive(t, switched, "an aligned timeout of 0 switches the barriers that block: %+v", costs)
	}
	r, err := dataflow.RestoreCluster(g, res.Latest(), logics())
	require.NoError(t, err)
	_, got := outputOf(t, run, r, Options{InjectAt: -1, FailAfter: -1, Throttle: slow})
	exactlyOnce(t, g, r)
	assert.Equal(t, want, got)
}

// The timeout in the output buffer on both runtimes: S -> X -> K with a
// slow sink, so that the buffers are full when S injects and X records
// (X's one input never blocks: its only timeout is TimeoutOut, as a
// source's). With an aligned timeout of 0 the barriers overtake the
// records ahead of them, at S (its barrier behind its full buffer) or at
// X or both: each switched part is an output-side switch with the
// overtaken records as channel state, X reports unaligned if it switched
// and aligned if not (a source reports no type); the run restored from
// the checkpoint ends with every record at the sink once.
func TestAdaptiveOutputTimeout(t *testing.T) {
	g, err := dataflow.NewGraph(dataflow.Graph{
		Nodes: []dataflow.NodeSpec{{Name: "S", Budget: 80}, {Name: "X", Kind: dataflow.Operator}, {Name: "K", Kind: dataflow.Sink}},
		Edges: []dataflow.EdgeSpec{{From: 0, To: 1}, {From: 1, To: 2}}, Cap: 4, Mode: dataflow.Adaptive})
	require.NoError(t, err)
	slow := map[int]time.Duration{2: 300 * time.Microsecond}
	for _, rt := range []struct {
		name string
		run  runFunc
	}{{"memory", Run}, {"tcp", RunTCP}} {
		t.Run(rt.name, func(t *testing.T) {
			c := dataflow.NewCluster(g, nil)
			res, err := rt.run(context.Background(), c, Options{InjectAt: 40, FailAfter: 60, Throttle: slow})
			require.NoError(t, err)
			require.Len(t, res.Checkpoints, 1)
			costs, parts := res.Checkpoints[0].Costs(), res.Latest().Parts
			for i, cost := range costs {
				assert.Equal(t, cost.Switched, cost.OutTimeout, "%s: a switch here is the output side's", g.Nodes[i].Name)
				if cost.Switched {
					assert.Positive(t, cost.Bytes, "%s: the overtaken records are its output's channel state", g.Nodes[i].Name)
					assert.NotEmpty(t, parts[i].Overtaken[i]) // node i's output is edge i
				}
			}
			assert.True(t, costs[0].Switched || costs[1].Switched, "a barrier waited behind a full buffer: it overtook it")
			assert.Equal(t, dataflow.TypeNone, costs[0].Type)
			assert.Equal(t, map[bool]dataflow.SnapType{true: dataflow.TypeUnaligned, false: dataflow.TypeAligned}[costs[1].Switched], costs[1].Type)
			r, err := dataflow.RestoreCluster(g, res.Latest(), nil)
			require.NoError(t, err)
			_, err = rt.run(context.Background(), r, Options{InjectAt: -1, FailAfter: -1})
			require.NoError(t, err)
			exactlyOnce(t, g, r)
		})
	}
}
