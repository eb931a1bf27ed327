package run

import (
	"context"
	"fmt"
	"maps"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

type app func(mode dataflow.Mode) (*dataflow.Graph, func() []dataflow.Logic, error)

const budget = 60

var apps = map[string]app{
	"pipeline": func(mode dataflow.Mode) (*dataflow.Graph, func() []dataflow.Logic, error) {
		return pipeline.Pipeline(3, budget, 4, mode)
	},
	"iteration": func(mode dataflow.Mode) (*dataflow.Graph, func() []dataflow.Logic, error) {
		return pipeline.Iteration(budget/2, 8, 4, mode)
	},
}

// output runs c to the end and returns the sink's output, checking each
// record reached the sink exactly once.
func output(t *testing.T, c *dataflow.Cluster, opt Options) (*Result, map[int64]int64) {
	t.Helper()
	return outputOf(t, Run, c, opt)
}

// outputOf is output with the runtime run.
func outputOf(t *testing.T, run runFunc, c *dataflow.Cluster, opt Options) (*Result, map[int64]int64) {
	t.Helper()
	res, err := run(context.Background(), c, opt)
	require.NoError(t, err)
	return res, maps.Clone(c.Sink().Logic().(*pipeline.Sink).Latest)
}

func exactlyOnce(t *testing.T, g *dataflow.Graph, c *dataflow.Cluster) {
	t.Helper()
	total := 0
	for _, n := range g.Nodes {
		total += n.Budget
	}
	got := c.Sink().Output()
	require.Len(t, got, total, "every record reached the sink")
	for k, n := range got {
		require.Equal(t, 1, n, "record %v reached the sink %d times", k, n)
	}
}

// Restore from a complete snapshot of either protocol, taken at any point
// of the run and followed by a failure, then run on: the sink's output is
// a failure-free run's, every record counted once. A slow aggregation
// makes backpressure: buffers fill to Cap and no more.
func TestRestoreExactlyOnce(t *testing.T) {
	for name, mk := range apps {
		for _, mode := range []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned, dataflow.ChandyLamport} {
			g, logics, err := mk(mode)
			require.NoError(t, err)
			free := dataflow.NewCluster(g, logics())
			_, want := output(t, free, Options{InjectAt: -1, FailAfter: -1})
			exactlyOnce(t, g, free)
			// A slow aggregation in the pipeline; the iteration runs
			// unthrottled (a sleep per pass, at the timer's granularity
			// under load, would cost a second a run).
			throttle := map[int]time.Duration{}
			if name == "pipeline" {
				throttle[len(g.Nodes)-2] = 20 * time.Microsecond
			}
			total := 0
			for _, n := range g.Nodes {
				total += n.Budget
			}
			for _, at := range []int{0, total / 10, total / 2, total - 1} {
				t.Run(fmt.Sprintf("%s/%s/inject-at-%d", name, mode, at), func(t *testing.T) {
					c := dataflow.NewCluster(g, logics())
					res, _ := output(t, c, Options{InjectAt: at, FailAfter: 5, Throttle: throttle})
					require.Len(t, res.Checkpoints, 1, "the snapshot completed")
					snap := res.Latest()
					for e, n := range res.MaxQueue {
						if !g.Edges[e].Back {
							assert.LessOrEqual(t, n, g.Cap, "edge %s is bounded", g.EdgeName(e))
						}
					}
					all, forward := snap.ChannelRecords(g)
					if mode == dataflow.Aligned {
						assert.Zero(t, forward, "aligned records channel state on back-edges only")
					}
					t.Logf("failed %v; channel records %d (forward %d); completed in %v", res.Failed, all, forward, res.Checkpoints[0].Took)
					r, err := dataflow.RestoreCluster(g, snap, logics())
					require.NoError(t, err)
					_, got := output(t, r, Options{InjectAt: -1, FailAfter: -1})
					assert.Equal(t, want, got, "the restored run's output is the failure-free run's")
					exactlyOnce(t, g, r)
				})
			}
		}
	}
}

// A slow aggregation: the buffers into it fill to Cap and stay bounded,
// and the sources wait (backpressure) instead of queueing without bound.
func TestBackpressure(t *testing.T) {
	g, logics, err := pipeline.Pipeline(3, budget, 4, dataflow.Aligned)
	require.NoError(t, err)
	slow := len(g.Nodes) - 2
	c := dataflow.NewCluster(g, logics())
	res, err := Run(context.Background(), c, Options{InjectAt: -1, FailAfter: -1,
		Throttle: map[int]time.Duration{slow: time.Millisecond}})
	require.NoError(t, err)
	full := 0
	for _, e := range g.In(slow) {
		assert.LessOrEqual(t, res.MaxQueue[e], g.Cap)
		if res.MaxQueue[e] == g.Cap {
			full++
		}
	}
	assert.Positive(t, full, "a buffer into the slow stage filled up: %v", res.MaxQueue)
	exactlyOnce(t, g, c)
}

// A run that cannot finish in time says what is pending.
func TestTimeoutSaysWhatIsPending(t *testing.T) {
	g, logics, err := pipeline.Pipeline(1, budget, 4, dataflow.Aligned)
	require.NoError(t, err)
	slow := len(g.Nodes) - 2
	_, err = Run(context.Background(), dataflow.NewCluster(g, logics()), Options{InjectAt: -1, FailAfter: -1,
		Throttle: map[int]time.Duration{slow: 20 * time.Millisecond}, Timeout: 50 * time.Millisecond})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "src0 has")
	assert.Contains(t, err.Error(), `<<"map0", "agg0">> holds`)
}

// runner is Run or RunTCP.
type runFunc func(context.Context, *dataflow.Cluster, Options) (*Result, error)

// successiveRestores runs each app with successive snapshots under every
// protocol and the stop-the-world baseline, a slow stage in the
// pipeline, and a failure; it restores from every completed snapshot and
// runs on: each restored run ends with the failure-free output, every
// record at the sink once.
func successiveRestores(t *testing.T, run runFunc) {
	for _, name := range []string{"pipeline", "iteration"} {
		for _, proto := range []string{"aligned", "unaligned", "chandy-lamport", "stop-the-world"} {
			t.Run(name+"/"+proto, func(t *testing.T) {
				mode := map[string]dataflow.Mode{"unaligned": dataflow.Unaligned, "chandy-lamport": dataflow.ChandyLamport}[proto]
				g, logics, err := apps[name](mode)
				if name == "iteration" { // shorter: its runs are the slow ones
					g, logics, err = pipeline.Iteration(budget/4, 4, 4, mode)
				}
				require.NoError(t, err)
				g = g.Successively()
				free := dataflow.NewCluster(g, logics())
				_, want := output(t, free, Options{InjectAt: -1, FailAfter: -1})
				total := 0
				for _, n := range g.Nodes {
					total += n.Budget
				}
				opt := Options{InjectAt: 5, Every: total / 8, Interval: 10 * time.Millisecond,
					FailAfter: total / 4, FailFrom: 2, StopTheWorld: proto == "stop-the-world"}
				if name == "pipeline" {
					opt.Throttle = map[int]time.Duration{len(g.Nodes) - 2: 20 * time.Microsecond}
				}
				c := dataflow.NewCluster(g, logics())
				res, err := run(context.Background(), c, opt)
				require.NoError(t, err)
				require.GreaterOrEqual(t, len(res.Checkpoints), 2, "several snapshots completed")
				for e, n := range res.MaxQueue {
					if !g.Edges[e].Back {
						assert.LessOrEqual(t, n, g.Cap, "edge %s is bounded", g.EdgeName(e))
					}
				}
				channel := 0
				defer func() {
					if name == "pipeline" && mode == dataflow.Unaligned {
						assert.Positive(t, channel, "unaligned barriers overtook the records queued for the slow stage")
					}
				}()
				for k, cp := range res.Checkpoints {
					require.Equal(t, k+1, cp.Snapshot.ID())
					all, _ := cp.Snapshot.ChannelRecords(g)
					channel += all
					if opt.StopTheWorld || mode == dataflow.Aligned && name == "pipeline" {
						assert.Zero(t, all, "ABS on a DAG, and stop-the-world, record no channel state")
					}
					r, err := dataflow.RestoreCluster(g, cp.Snapshot, logics())
					require.NoError(t, err)
					_, got := outputOf(t, run, r, Options{InjectAt: -1, FailAfter: -1})
					assert.Equal(t, want, got, "restored from snapshot %d", cp.Snapshot.ID())
					exactlyOnce(t, g, r)
				}
				// The restored run takes snapshots on from the restored id.
				last := res.Checkpoints[len(res.Checkpoints)-1].Snapshot
				r, err := dataflow.RestoreCluster(g, last, logics())
				require.NoError(t, err)
				res2, err := run(context.Background(), r, Options{InjectAt: 0, Every: total / 8, FailAfter: -1, StopTheWorld: opt.StopTheWorld})
				require.NoError(t, err)
				if len(res2.Checkpoints) > 0 {
					assert.Equal(t, last.ID()+1, res2.Checkpoints[0].Snapshot.ID())
				}
				exactlyOnce(t, g, r)
				t.Logf("%d snapshots before the failure (failed %v), %d after the restore; %d latencies",
					len(res.Checkpoints), res.Failed, len(res2.Checkpoints), len(res.Latency))
			})
		}
	}
}

func TestSuccessiveRestoreExactlyOnce(t *testing.T) { successiveRestores(t, Run) }

func TestSuccessiveRestoreExactlyOnceTCP(t *testing.T) { successiveRestores(t, RunTCP) }

// A message the TCP runtime cannot read, or an acknowledgement of more
// than was shipped, is an error naming the edge.
func TestTCPBadFramesAreNamed(t *testing.T) {
	g, logics, err := pipeline.Pipeline(1, 3, 2, dataflow.Aligned)
	require.NoError(t, err)
	c := dataflow.NewCluster(g, logics())
	src, err := newTCPNode(g, 0, c.Nodes[0], nil)
	require.NoError(t, err)
	mapper, err := newTCPNode(g, 1, c.Nodes[1], nil)
	require.NoError(t, err)
	frame := func(n *tcpNode, from int, payload []byte) error {
		ch := spec.Channel{From: procOf(from), To: procOf(n.i)}
		return n.frame(g, wire.Envelope{Chan: ch, Frame: wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: payload}})
	}
	err = frame(src, 1, []byte{0, 9})
	assert.ErrorContains(t, err, `<<"src0", "map0">>: unknown message kind 9`)
	err = frame(mapper, 0, []byte{0, msgItems, 2, 0, 0})
	assert.ErrorContains(t, err, `<<"src0", "map0">>: items cut short: unexpected EOF`)
	err = frame(src, 1, []byte{7, msgAck, 0, 0})
	assert.ErrorContains(t, err, "a message for no edge of the graph (7 of")
	err = frame(src, 1, appendAck(nil, 0, 2, false))
	assert.ErrorContains(t, err, `<<"src0", "map0">>: the receiver acknowledged 2 items, 0 were shipped`)
	err = frame(src, 1, appendItems(nil, 0, nil))
	assert.ErrorContains(t, err, "in the wrong direction")
	err = frame(mapper, 0, appendItems(nil, 0, []dataflow.Item{{Src: 0, I: 1, Seq: 1}}))
	assert.NoError(t, err)
	assert.Len(t, mapper.copies[0], 1, "the item shipped is the receiver's copy")
}

// A cut connection is resumed by the transport: the run goes on and
// every record reaches the sink exactly once.
func TestTCPCutConnectionResumes(t *testing.T) {
	g, logics, err := pipeline.Pipeline(1, budget, 2, dataflow.Aligned)
	require.NoError(t, err)
	var cuts atomic.Int32
	var tr *transport.TCP
	afterStart = func(t *transport.TCP, nodes []*tcpNode) {
		tr = t
		ch := spec.Channel{From: procOf(0), To: procOf(1)} // <<"src0", "map0">>'s items
		for k := 1; k <= 3; k++ {
			time.AfterFunc(time.Duration(k)*5*time.Millisecond, func() {
				if tr.CutConnection(ch) {
					cuts.Add(1)
				}
			})
		}
	}
	defer func() { afterStart = nil }()
	slow := map[int]time.Duration{len(g.Nodes) - 2: time.Millisecond} // the run outlasts the cuts
	c := dataflow.NewCluster(g, logics())
	_, err = RunTCP(context.Background(), c, Options{InjectAt: -1, FailAfter: -1, Throttle: slow, Timeout: 10 * time.Second})
	require.NoError(t, err)
	exactlyOnce(t, g, c)
	assert.Positive(t, cuts.Load(), "a connection was cut")
	assert.Positive(t, tr.Stats().Cuts)
}

// A transport error that stops a channel stops the run with an error
// naming the edges it carries, instead of a hang or a silent loss; a
// failed dial, which the transport retries, does not.
func TestTCPTransportErrorsAreNamed(t *testing.T) {
	g, _, err := pipeline.Pipeline(1, budget, 2, dataflow.Aligned)
	require.NoError(t, err)
	ch := spec.Channel{From: procOf(1), To: procOf(0)}
	err = fatalError(g, &transport.ConnError{Op: "ack", Chan: ch, Err: &transport.PeerRestartedError{Chan: ch}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `<<"src0", "map0">>`)
	assert.ErrorIs(t, err, transport.ErrPeerRestarted)
	assert.NoError(t, fatalError(g, &transport.ConnError{Op: "dial", Chan: ch, Err: net.ErrClosed}))
}
