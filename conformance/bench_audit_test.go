package conformance

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/core/coretest"
	"github.com/markerwave/markerwave/spec"
)

// bankTrace is a drained bank run of the real core nodes (coretest.Net)
// on Complete(nodes), of about events events, with snaps snapshots
// started evenly through it at random processes: each step is a transfer
// between two random processes or the delivery of the head of a channel
// picked at random among the frames in flight, transfers while fewer than
// nodes frames are in flight and half the time below 4*nodes, so that
// the frames in flight per process stay the same at any size. It is how the audit's benchmarks and size
// tests make big traces instead of committing them.
func bankTrace(tb testing.TB, nodes, events, snaps int, seed uint64) spec.Trace {
	tb.Helper()
	topo := spec.Complete(nodes)
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 1000
	}
	net, err := coretest.NewBank(topo, bal)
	require.NoError(tb, err)
	g := &bankGen{net: net, r: rand.New(rand.NewPCG(seed, 3))}
	every := max(1, events/(snaps+1))
	for sid := spec.SnapID(1); len(net.Events) < events; {
		if sid <= spec.SnapID(snaps) && len(net.Events) >= int(sid)*every {
			g.took(net.Initiate(topo.Procs[g.r.IntN(nodes)], sid))
			sid++
			continue
		}
		if len(g.flight) < nodes || len(g.flight) < 4*nodes && g.r.IntN(2) == 0 {
			p, q := g.r.IntN(nodes), g.r.IntN(nodes-1)
			if q >= p {
				q++
			}
			if st, err := net.SendAmount(topo.Procs[p], topo.Procs[q], 1+g.r.Int64N(20)); err == nil {
				g.took(st, nil)
			}
			continue
		}
		g.deliverOne()
	}
	for len(g.flight) > 0 {
		g.deliverOne()
	}
	require.NoError(tb, g.err)
	net.Take()
	tr := net.Trace(fmt.Sprintf("bankTrace(%d nodes, %d events, %d snapshots, seed %d)", nodes, events, snaps, seed))
	tr.Header.Drained = true
	return tr
}

// bankGen is bankTrace's state: the net and one entry per frame in
// flight, naming its channel.
type bankGen struct {
	net    *coretest.Net
	r      *rand.Rand
	flight []spec.Channel
	err    error
}

// took notes a step's frames in flight.
func (g *bankGen) took(st core.Step, err error) {
	if err != nil {
		g.err = err
		return
	}
	for _, env := range st.Out {
		g.flight = append(g.flight, env.Chan)
	}
}

// deliverOne delivers the head of the channel of a random frame in
// flight.
func (g *bankGen) deliverOne() {
	i := g.r.IntN(len(g.flight))
	c := g.flight[i]
	g.flight[i] = g.flight[len(g.flight)-1]
	g.flight = g.flight[:len(g.flight)-1]
	g.took(g.net.Deliver(c))
}

// BenchmarkAudit audits bank runs of the same length at 5, 32 and 128
// nodes side by side and reports events/s (wall clock) and
// cpu-ns/event: the audit's cost per event must not grow with the
// number of nodes.
func BenchmarkAudit(b *testing.B) {
	for _, nodes := range []int{5, 32, 128} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			tr := bankTrace(b, nodes, 20_000, 8, 1)
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for range b.N {
				if r := Audit(tr, Options{}); !r.OK() {
					b.Fatal(r)
				}
			}
			b.StopTimer()
			n := float64(b.N * len(tr.Events))
			b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/n, "cpu-ns/event")
			b.ReportMetric(float64(len(tr.Events)), "events")
		})
	}
}

// TestWriteBigTrace writes a bankTrace to $MARKERWAVE_BIG_TRACE, of
// $MARKERWAVE_BIG_EVENTS events (default 10^6) on $MARKERWAVE_BIG_NODES
// nodes (default 5) with $MARKERWAVE_BIG_SNAPS snapshots (default 10), for
// timing markerwave audit on a big trace (docs/performance.md):
//
//	MARKERWAVE_BIG_TRACE=/tmp/big.jsonl go test ./conformance -run TestWriteBigTrace -count=1
//	markerwave audit --progress /tmp/big.jsonl
//
// Without MARKERWAVE_BIG_TRACE it skips.
func TestWriteBigTrace(t *testing.T) {
	path := os.Getenv("MARKERWAVE_BIG_TRACE")
	if path == "" {
		t.Skip("MARKERWAVE_BIG_TRACE is unset: set it to a file to write a big trace there")
	}
	num := func(name string, def int) int {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, "%s=%q", name, v)
			return n
		}
		return def
	}
	tr := bankTrace(t, num("MARKERWAVE_BIG_NODES", 5), num("MARKERWAVE_BIG_EVENTS", 1_000_000), num("MARKERWAVE_BIG_SNAPS", 10), 1)
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	require.NoError(t, spec.WriteTrace(w, tr))
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	t.Logf("wrote %s: %d events, %d snapshots", path, len(tr.Events), len(tr.Recorded))
}
