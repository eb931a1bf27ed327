package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// gate is a transport that holds every frame of the gated channels, in
// order, until Release.
type gate struct {
	transport.Transport
	mu    sync.Mutex
	gated map[spec.Channel]bool
	held  []wire.Envelope
}

func (g *gate) Send(env wire.Envelope) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gated[env.Chan] {
		g.held = append(g.held, wire.Envelope{Chan: env.Chan, Frame: env.Frame.Clone()})
		return nil
	}
	return g.Transport.Send(env)
}

func (g *gate) heldCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// Release sends the held frames in order and opens every gate.
func (g *gate) Release() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gated = nil
	for _, env := range g.held {
		if err := g.Transport.Send(env); err != nil {
			return err
		}
	}
	g.held = nil
	return nil
}

// TestRuntimeCollectIncomplete checks the collector's verdict on a
// snapshot that cannot complete against the model. On random topologies,
// some random channels are gated (their frames held, so the snapshot's
// marker on them cannot arrive) while the workload runs and a snapshot
// starts; once nothing moves but the held frames, Collect with a deadline
// must return an *IncompleteError naming exactly what the model, stepped
// through the run's events so far, lacks for that snapshot: the processes
// that have not recorded (NeverRecorded), the channels whose recording
// has not closed (Open, by receiver in topology order, then incoming
// order), no stopped node, and the deadline as its cause. With the gates
// open, the same snapshot is then collected and the whole run replays
// (Replay, drained, with the collected snapshots).
func TestRuntimeCollectIncomplete(t *testing.T) {
	root := rootSeed(t)
	topos := []*spec.Topology{spec.Complete(3), spec.Ring(4), spec.Complete(4), spec.Ring(3)}
	for i := range 6 {
		topo := topos[i%len(topos)]
		seed := subSeed(root, i, "incomplete")
		t.Run(fmt.Sprintf("%d-%dprocs-%dchans", i, len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
			collectIncompleteRun(t, topo, seed)
		})
	}
}

func collectIncompleteRun(t *testing.T, topo *spec.Topology, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 20 + rng.Int64N(50)
	}
	gated := map[spec.Channel]bool{}
	for len(gated) == 0 {
		for _, c := range topo.Chans {
			if rng.IntN(3) == 0 {
				gated[c] = true
			}
		}
	}
	g := &gate{Transport: transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 100 * time.Microsecond, Seed: seed}), gated: gated}
	h := spec.Header{Topology: topo, InitBal: bal, Source: "conformance collect test"}
	bufs, sinks := nodeSinks(t, h)
	var nodeErrs errorLog
	c, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, Transport: g, Traces: sinks,
		NewApp:  func(p spec.ProcID) (core.App, error) { return app.NewBank(bal[p]) },
		OnError: nodeErrs.add,
	})
	require.NoError(t, err)
	defer c.Stop(context.Background())

	// Some traffic, a snapshot in the middle of it, more traffic.
	send := func(n int) {
		for range n {
			p := topo.Procs[rng.IntN(len(topo.Procs))]
			out := topo.Out(p)
			_ = c.Send(p, out[rng.IntN(len(out))].To, app.Transfer(1+rng.Int64N(10)))
		}
	}
	send(10 + rng.IntN(20))
	s, err := c.Snapshot(topo.Procs[rng.IntN(len(topo.Procs))])
	require.NoError(t, err)
	send(rng.IntN(20))

	// Wait until nothing moves but the held frames, then ask.
	var inc *runtime.IncompleteError
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 50, "the cluster never settled")
		stable(t, c, g)
		before := counts(sinks)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err := c.Collect(ctx, s)
		cancel()
		require.ErrorAs(t, err, &inc, "snapshot %d with channels %v gated must be incomplete", s, gatedList(topo, gated))
		if slices.Equal(before, counts(sinks)) && c.Stats().InFlight() == uint64(g.heldCount()) {
			break
		}
	}
	require.ErrorIs(t, inc, context.DeadlineExceeded, "the cause")

	// What the model lacks for s after the events so far.
	evs := mergedSoFar(t, topo, sinks, bufs)
	tr := spec.Trace{Header: h, Events: evs}
	tr.Header.Snaps = c.Initiators()
	cfg, err := ConfigFromTrace(tr)
	require.NoError(t, err)
	st := stepModel(t, cfg, evs)
	require.NotNil(t, st)
	k := cfg.SnapIndex(s)
	var never []spec.ProcID
	var open []spec.Channel
	for pi, p := range topo.Procs {
		if !st.Recorded[k].Has(pi) {
			never = append(never, p)
		}
		for _, ch := range topo.In(p) {
			if st.RecChan[k][cfg.ChanIndex(ch.From, ch.To)] != model.Done {
				open = append(open, ch)
			}
		}
	}
	if !slices.Equal(inc.NeverRecorded, never) || !slices.Equal(inc.Open, open) || len(inc.Stopped) != 0 || len(inc.Failed) != 0 {
		t.Errorf("Collect's verdict on snapshot %d (gated %v) is not what the model lacks after the run's %d events:\n  collector: never recorded %v, open %v, stopped %v, failed %d\n  model:     never recorded %v, open %v\n  error: %v",
			s, gatedList(topo, gated), len(evs), inc.NeverRecorded, inc.Open, inc.Stopped, len(inc.Failed), never, open, inc)
	}
	require.NotEmpty(t, open, "a gated channel keeps snapshot %d open", s)
	t.Logf("snapshot %d, gated %v: %v", s, gatedList(topo, gated), inc)

	// Open the gates: the same snapshot completes, and the run conforms.
	require.NoError(t, g.Release())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gl, err := c.Collect(ctx, s)
	require.NoError(t, err, "snapshot %d after the gates opened", s)
	require.NoError(t, c.Quiesce(ctx))
	require.NoError(t, c.Stop(ctx))
	for _, sk := range sinks {
		require.NoError(t, sk.Close())
	}
	require.Empty(t, nodeErrs.all(), "node errors")
	all := mergedSoFar(t, topo, nil, bufs)
	rec := gl.RecordedSnapshot()
	full := spec.Trace{Header: h, Events: all, Recorded: []spec.RecordedSnapshot{rec}}
	full.Header.Snaps, full.Header.Drained = c.Initiators(), true
	replayRun(t, full, workload{seed: seed})
}

// stable waits until c's only frames in flight are the ones g holds, and
// stay so for a while.
func stable(t *testing.T, c *runtime.Cluster, g *gate) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	since := time.Time{}
	for time.Now().Before(deadline) {
		if c.Stats().InFlight() == uint64(g.heldCount()) {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) > 10*time.Millisecond {
				return
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(200 * time.Microsecond)
	}
	t.Fatalf("the cluster did not settle: %d frames in flight, %d held", c.Stats().InFlight(), g.heldCount())
}

// counts is every sink's number of events, in sinks' process order.
func counts(sinks map[spec.ProcID]*trace.Sink) []int {
	ps := make([]string, 0, len(sinks))
	for p := range sinks {
		ps = append(ps, string(p))
	}
	slices.Sort(ps)
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = sinks[spec.ProcID(p)].Count()
	}
	return out
}

// mergedSoFar flushes the sinks (if given) and merges what the buffers
// hold (spec.MergeCausal).
func mergedSoFar(t *testing.T, topo *spec.Topology, sinks map[spec.ProcID]*trace.Sink, bufs map[spec.ProcID]*bytes.Buffer) []spec.Event {
	t.Helper()
	logs := map[spec.ProcID][]spec.Event{}
	for p, b := range bufs {
		if sinks != nil {
			require.NoError(t, sinks[p].Flush())
		}
		nt, err := spec.ReadTrace(bytes.NewReader(b.Bytes()))
		require.NoError(t, err, "trace of %s", p)
		logs[p] = nt.Events
	}
	evs, err := spec.MergeCausal(topo, logs)
	require.NoError(t, err)
	return evs
}

func gatedList(topo *spec.Topology, gated map[spec.Channel]bool) []string {
	var out []string
	for _, c := range topo.Chans {
		if gated[c] {
			out = append(out, c.String())
		}
	}
	return out
}
