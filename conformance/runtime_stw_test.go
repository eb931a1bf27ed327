package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// stwRound notes, for one StopTheWorld, where in its own event log each
// node was when its state was captured.
type stwRound struct {
	mu sync.Mutex
	at map[spec.ProcID][]int
}

func (r *stwRound) note(p spec.ProcID, n int) {
	r.mu.Lock()
	r.at[p] = append(r.at[p], n)
	r.mu.Unlock()
}

// stwApp is a bank that, during a stop-the-world round, notes at each
// capture how many events its node has traced (the capture runs on the
// node goroutine, which alone writes that trace).
type stwApp struct {
	*app.Bank
	self  spec.ProcID
	sink  *trace.Sink
	round *atomic.Pointer[stwRound]
}

func (a *stwApp) Capture() ([]byte, error) {
	if r := a.round.Load(); r != nil {
		r.note(a.self, a.sink.Count())
	}
	return a.Bank.Capture()
}

// TestRuntimeStopTheWorld checks the stop-the-world baseline
// (Cluster.StopTheWorld) against the model while every node sends from
// its own goroutine over a delaying transport. Each round's snapshot must
// be a global state the run passed through with every channel empty: the
// events each node had taken when it was captured form a cut that the
// model replays (no orphan), on which every message sent was received
// (drained), whose state is exactly the recorded one, and whose seqs are
// the snapshot's cut (where a restore would resume). The whole run then
// replays drained.
func TestRuntimeStopTheWorld(t *testing.T) {
	root := rootSeed(t)
	for i, topo := range []*spec.Topology{spec.Complete(3), spec.Ring(4)} {
		seed := subSeed(root, i, "stw")
		t.Run(fmt.Sprintf("%dprocs-%dchans", len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
			stwRun(t, topo, seed, transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 300 * time.Microsecond, Seed: seed}))
		})
	}
	// Over loopback TCP (TestRuntimeStopTheWorldMidSend pins a transfer
	// inside Send on both transports).
	topo := spec.Ring(3)
	t.Run(fmt.Sprintf("tcp-%dprocs-%dchans", len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
		stwRun(t, topo, subSeed(root, 7, "stw"), loopbackTCP(t, topo))
	})
}

// loopbackTCP is one TCP transport for every process of topo, on
// loopback ports the system picks.
func loopbackTCP(t *testing.T, topo *spec.Topology) transport.Transport {
	t.Helper()
	addrs := map[spec.ProcID]string{}
	for _, p := range topo.Procs {
		addrs[p] = "127.0.0.1:0"
	}
	tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs})
	require.NoError(t, err)
	return tr
}

func stwRun(t *testing.T, topo *spec.Topology, seed uint64, net transport.Transport) {
	rng := rand.New(rand.NewPCG(seed, 5))
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 100 + rng.Int64N(100)
	}
	h := spec.Header{Topology: topo, InitBal: bal, Source: "conformance stop-the-world test"}
	bufs, sinks := nodeSinks(t, h)
	var round atomic.Pointer[stwRound]
	var nodeErrs errorLog
	c, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, Traces: sinks,
		Transport: net,
		NewApp: func(p spec.ProcID) (core.App, error) {
			b, err := app.NewBank(bal[p])
			return &stwApp{Bank: b, self: p, sink: sinks[p], round: &round}, err
		},
		OnError: nodeErrs.add,
	})
	require.NoError(t, err)
	defer c.Stop(context.Background())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range topo.Procs {
		out := topo.Out(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed+uint64(i), 11))
			for k := 0; k < 400; k++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = c.Send(p, out[r.IntN(len(out))].To, app.Transfer(1+r.Int64N(20)))
				if r.IntN(3) == 0 {
					time.Sleep(time.Duration(r.IntN(100)) * time.Microsecond)
				}
			}
		}()
	}
	type taken struct {
		g  snapshot.Global
		at map[spec.ProcID][]int
	}
	var rounds []taken
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for r := range 12 {
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		rd := &stwRound{at: map[spec.ProcID][]int{}}
		round.Store(rd)
		g, err := c.StopTheWorld(ctx, spec.SnapID(1000+r))
		round.Store(nil)
		require.NoError(t, err, "stop-the-world round %d", r)
		rounds = append(rounds, taken{g, rd.at})
	}
	close(stop)
	wg.Wait()
	require.NoError(t, c.Quiesce(ctx))
	require.NoError(t, c.Stop(ctx))
	for _, s := range sinks {
		require.NoError(t, s.Close())
	}
	require.Empty(t, nodeErrs.all(), "node errors")
	evs := mergedSoFar(t, topo, nil, bufs)
	tr := spec.Trace{Header: h, Events: evs}
	tr.Header.Drained = true
	cfg, err := ConfigFromTrace(tr)
	require.NoError(t, err)

	busy := 0
	for _, rd := range rounds {
		at := map[spec.ProcID]int{}
		for _, p := range topo.Procs {
			require.Len(t, rd.at[p], 1, "stop-the-world snapshot %d: captures of %s", rd.g.ID, string(p))
			at[p] = rd.at[p][0]
		}
		// The cut: each node's events before its capture, in run order.
		var pre []spec.Event
		seen := map[spec.ProcID]int{}
		sent, got := map[spec.Channel]uint64{}, map[spec.Channel]uint64{}
		for _, e := range evs {
			if seen[e.Proc] < at[e.Proc] {
				pre = append(pre, e)
				switch e.Action {
				case spec.SendApp:
					sent[e.Chan()]++
				case spec.RecvApp:
					got[e.Chan()]++
				}
			}
			seen[e.Proc]++
		}
		cut := rd.g.Cut()
		for _, ch := range topo.Chans {
			if sent[ch] != got[ch] {
				t.Errorf("stop-the-world snapshot %d recorded %s empty, but when the nodes were captured %s had sent %d messages on it and %s received %d: the channels were not drained",
					rd.g.ID, ch, string(ch.From), sent[ch], string(ch.To), got[ch])
			}
			if k := (spec.ChanCut{Sent: sent[ch], Got: got[ch]}); cut[ch] != k {
				t.Errorf("stop-the-world snapshot %d: cut of %s is %s, the run's is %s", rd.g.ID, ch, cut[ch], k)
			}
		}
		st := stepModel(t, cfg, pre)
		if st == nil {
			t.Errorf("stop-the-world snapshot %d: the nodes' events before their captures are no run of the model (above)", rd.g.ID)
			continue
		}
		if d := AppState(cfg, st).Diff(rd.g.Abstract()); d != "" {
			t.Errorf("stop-the-world snapshot %d is not the state the run was in when it was taken (model vs recorded):\n%s", rd.g.ID, d)
		}
		if len(pre) > 0 && len(pre) < len(evs) {
			busy++
		}
	}
	t.Logf("%d events, %d stop-the-world snapshots taken mid-run", len(evs), busy)
	replayRun(t, tr, workload{seed: seed})
}
