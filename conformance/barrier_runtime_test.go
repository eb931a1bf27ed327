package conformance

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/run"
	"github.com/markerwave/markerwave/spec"
)

// TestBarrierRuntimeTraceConforms: the concurrent in-memory runtime
// (impl/dataflow/run, a goroutine per node) with a tracer attached to its
// cluster writes a trace in a causal order (each step is written under
// the locks the runtime takes for it), and the trace conforms: on the
// fan-in DAG and the cycle, both protocols, a run that completes its
// snapshot, fails some records later, is restored from the snapshot and
// runs to the end.
func TestBarrierRuntimeTraceConforms(t *testing.T) {
	for _, mode := range []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned} {
		for name, graph := range map[string]func(dataflow.Mode) dataflow.Graph{"fan-in": fanIn, "cycle": loop} {
			t.Run(fmt.Sprintf("%s/%s", name, mode), func(t *testing.T) {
				gs := graph(mode)
				for i := range gs.Nodes {
					if gs.Nodes[i].Kind == dataflow.Source {
						gs.Nodes[i].Budget = 40
					}
				}
				g, err := dataflow.NewGraph(gs)
				require.NoError(t, err)
				var b bytes.Buffer
				tr, err := dataflow.NewTracer(&b, g, spec.BarrierHeader{Drained: true, Source: "conformance TestBarrierRuntimeTraceConforms"})
				require.NoError(t, err)
				c := dataflow.NewCluster(g, nil)
				tr.Attach(c)
				res, err := run.Run(context.Background(), c, run.Options{InjectAt: 10, FailAfter: 3})
				require.NoError(t, err)
				require.NotNil(t, res.Latest(), "the snapshot completed")
				if res.Failed {
					c, err = dataflow.RestoreCluster(g, res.Latest(), nil)
					require.NoError(t, err)
					tr.Restore(c)
					_, err = run.Run(context.Background(), c, run.Options{InjectAt: -1, FailAfter: -1})
					require.NoError(t, err)
				}
				require.NoError(t, tr.Flush())
				trace, err := spec.ReadBarrierTrace(bytes.NewReader(b.Bytes()))
				require.NoError(t, err)
				t.Logf("%s, restored: %v", plural(len(trace.Events), "step"), res.Failed)
				rep := AuditBarrier(trace, Options{})
				require.True(t, rep.OK(), "restored: %v\n%s", res.Failed, rep)
			})
		}
	}
}

// A trace of successive snapshots reads, but the audit refuses it by
// name: the spec, and so the model it is replayed against, has one
// snapshot.
func TestBarrierAuditRefusesSuccessiveSnapshots(t *testing.T) {
	gs := fanIn(dataflow.Aligned)
	gs.Successive = true
	g, err := dataflow.NewGraph(gs)
	require.NoError(t, err)
	var b bytes.Buffer
	tr, err := dataflow.NewTracer(&b, g, spec.BarrierHeader{})
	require.NoError(t, err)
	require.NoError(t, tr.Flush())
	trace, err := spec.ReadBarrierTrace(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	assert.True(t, trace.Header.Graph.Successive)
	rep := AuditBarrier(trace, Options{})
	require.Error(t, rep.Err)
	assert.Contains(t, rep.Err.Error(), "successive snapshots")
}
