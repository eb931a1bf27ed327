package runtime_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// testDetector is fast enough for tests and, at 3*Interval below Timeout
// with room to spare, slow enough that a loaded machine does not make
// live peers look dead.
var testDetector = mwrt.DetectorConfig{Interval: 20 * time.Millisecond, Timeout: 400 * time.Millisecond}

// schedSlack is what a loaded machine may add to the detection bound on
// the wall clock (late ticks and node goroutines waiting for a CPU: the
// shared 2-core test machine ran at a load of 24). The bound itself is
// checked exactly, on the detector's own clock, by
// TestDetectorBoundProperty; here it guards against gross failures.
const schedSlack = 2 * time.Second

// faultLog collects OnFault reports.
type faultLog struct {
	mu     sync.Mutex
	faults []mwrt.Fault
}

func (l *faultLog) add(f mwrt.Fault) { l.mu.Lock(); l.faults = append(l.faults, f); l.mu.Unlock() }

// of returns the reports of action a by node p about peer q.
func (l *faultLog) of(a spec.Action, p, q spec.ProcID) []mwrt.Fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []mwrt.Fault
	for _, f := range l.faults {
		if f.Action == a && f.Node == p && f.Peer == q {
			out = append(out, f)
		}
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func balance(t *testing.T, cl *mwrt.Cluster, p spec.ProcID) int64 {
	st, err := cl.Node(p).State()
	require.NoError(t, err)
	return st.Bal
}

func faultCluster(t *testing.T, cfg mwrt.ClusterConfig) (*mwrt.Cluster, *faultLog) {
	log := &faultLog{}
	cfg.NewApp = bankApps(100)
	cfg.Detector = testDetector
	cfg.OnFault = log.add
	cl, err := mwrt.NewCluster(cfg)
	require.NoError(t, err)
	return cl, log
}

// crashScenario is the kill -9 walk-through on one cluster: P3 crashes
// while snapshot s is under way; within the detection bound P1 and P2
// suspect it, name it, abort s (releasing its recording), refuse
// transfers to it without debiting, and refuse new snapshots.
func crashScenario(t *testing.T, cl *mwrt.Cluster, log *faultLog) {
	require.NoError(t, cl.Send("P1", "P2", app.Transfer(10)))
	s1, err := cl.Snapshot("P1")
	require.NoError(t, err)
	g, err := cl.Collect(ctxFor(t, 10*time.Second), s1)
	require.NoError(t, err, "no failure yet: the snapshot completes")
	assert.Equal(t, int64(300), g.Total())

	// P3 crashes; P2 starts a snapshot before anyone notices.
	require.NoError(t, cl.Send("P3", "P1", app.Transfer(5)))
	cl.Node("P3").Crash()
	crashed := time.Now()
	s2, err := cl.Snapshot("P2")
	require.NoError(t, err)

	for _, p := range []spec.ProcID{"P1", "P2"} {
		waitFor(t, testDetector.Bound()+schedSlack, string(p)+" suspects P3", func() bool { return len(log.of(spec.Suspect, p, "P3")) > 0 })
		f := log.of(spec.Suspect, p, "P3")[0]
		assert.LessOrEqual(t, f.At.Sub(crashed), testDetector.Bound()+schedSlack, "%s suspected P3 after %v", p, f.At.Sub(crashed))
		assert.Contains(t, f.String(), "suspect P3")
		assert.Contains(t, f.String(), "nothing heard since")
		assert.Empty(t, log.of(spec.Suspect, p, otherLive(p)), "%s suspects a live peer", p)
	}

	// s2 is aborted on both, with P3 the cause, and its buffers released.
	_, err = cl.Collect(ctxFor(t, 3*(testDetector.Bound()+schedSlack)), s2)
	var ab *mwrt.AbortedError
	require.ErrorAs(t, err, &ab, "snapshot %d was not aborted: %v", s2, err)
	require.NotEmpty(t, ab.By, "no survivor aborted snapshot %d: %v", s2, err)
	assert.ErrorIs(t, err, mwrt.ErrAborted)
	assert.Equal(t, []spec.ProcID{"P3"}, ab.Causes())
	assert.Contains(t, err.Error(), "suspected")
	waitFor(t, testDetector.Bound()+schedSlack, "both survivors abort s2", func() bool {
		return len(log.of(spec.Abort, "P1", "P3")) > 0 && len(log.of(spec.Abort, "P2", "P3")) > 0
	})
	for _, p := range []spec.ProcID{"P1", "P2"} {
		require.NoError(t, cl.Node(p).Inspect(func(n *core.Node) {
			assert.Equal(t, core.Aborted, n.Phase(s2))
			_, held := n.Snapshot(s2)
			assert.False(t, held, "%s still holds s2's recording", p)
			assert.Empty(t, n.Active())
		}))
	}

	// Transfers to P3 are refused, naming it; nothing is debited.
	before := balance(t, cl, "P1")
	err = cl.Send("P1", "P3", app.Transfer(7))
	require.ErrorIs(t, err, core.ErrSuspected)
	assert.Contains(t, err.Error(), "P3 is suspected")
	assert.Equal(t, before, balance(t, cl, "P1"))
	require.NoError(t, cl.Send("P1", "P2", app.Transfer(1)), "the live peer still gets transfers")

	// No new snapshot while P3 is suspected.
	_, err = cl.Snapshot("P1")
	require.ErrorIs(t, err, mwrt.ErrPeerSuspected)
	assert.Contains(t, err.Error(), "P3")
}

func otherLive(p spec.ProcID) spec.ProcID {
	if p == "P1" {
		return "P2"
	}
	return "P1"
}

func TestCrashDetectedAbortedRefusedMemory(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	cl, log := faultCluster(t, mwrt.ClusterConfig{Topology: topo, Transport: transport.NewMemory(topo, transport.MemoryConfig{})})
	stopped := false
	defer func() {
		if !stopped {
			_ = cl.Stop(ctxFor(t, 200*time.Millisecond))
		}
	}()
	crashScenario(t, cl, log)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := cl.Stop(ctx)
	stopped = true
	// What was sent to the dead P3 is reported, not lost silently.
	var rep *mwrt.StopReport
	if errors.As(err, &rep) {
		for _, e := range rep.Undelivered {
			assert.Equal(t, spec.ProcID("P3"), e.Chan.To, "only frames to the dead node stay undelivered: %v", e)
		}
	}
}

func TestCrashDetectedAbortedRefusedTCP(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	// Frames sent to P3 before it was suspected are never acknowledged:
	// Close need not wait long for them.
	trs := perNodeTCP(t, topo, func(c *transport.TCPConfig) { c.DrainTimeout = 100 * time.Millisecond })
	cl, log := faultCluster(t, mwrt.ClusterConfig{Topology: topo, NodeTransports: trs})
	defer func() { _ = cl.Stop(ctxFor(t, 100*time.Millisecond)) }()
	// A crashed process's transport dies with it: its connections drop.
	go func() {
		<-cl.Node("P3").Done()
		_ = trs["P3"].Close()
	}()
	crashScenario(t, cl, log)
}

// A peer that falls silent and comes back: suspected, snapshots waiting
// for it aborted (their late markers dropped), then trusted again, and
// the next snapshot completes with the money conserved.
func TestFalseSuspicionWithdrawnNextSnapshotCompletes(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	ct := counting(transport.NewMemory(topo, transport.MemoryConfig{}))
	cl, log := faultCluster(t, mwrt.ClusterConfig{Topology: topo, Transport: ct})
	defer func() { require.NoError(t, cl.Stop(ctxFor(t, 10*time.Second))) }()

	for _, c := range topo.Out("P3") {
		ct.Gate(c) // P3 falls silent: its frames, heartbeats included, are held
	}
	s, err := cl.Snapshot("P1")
	require.NoError(t, err)
	_, err = cl.Collect(ctxFor(t, 3*(testDetector.Bound()+schedSlack)), s)
	var ab *mwrt.AbortedError
	require.ErrorAs(t, err, &ab, "snapshot %d was not aborted: %v", s, err)
	assert.Equal(t, []spec.ProcID{"P3"}, ab.Causes())
	// The first suspicion decides the collector; let both survivors
	// suspect P3 before it is heard again.
	for _, p := range []spec.ProcID{"P1", "P2"} {
		waitFor(t, testDetector.Bound()+schedSlack, string(p)+" suspects P3", func() bool { return len(log.of(spec.Suspect, p, "P3")) > 0 })
	}

	require.NoError(t, ct.Release()) // P3 is heard again, its late marker of s with it
	for _, p := range []spec.ProcID{"P1", "P2"} {
		waitFor(t, testDetector.Bound()+schedSlack, string(p)+" trusts P3 again", func() bool { return len(log.of(spec.Unsuspect, p, "P3")) > 0 })
	}
	require.NoError(t, cl.Send("P1", "P3", app.Transfer(5)))
	var g snapshot.Global
	waitFor(t, 5*time.Second, "a new snapshot completes", func() bool {
		s, err := cl.Snapshot("P2")
		if errors.Is(err, mwrt.ErrPeerSuspected) {
			return false
		}
		require.NoError(t, err)
		g, err = cl.Collect(ctxFor(t, 10*time.Second), s)
		require.NoError(t, err)
		return true
	})
	assert.Equal(t, int64(300), g.Total())
}

// A graceful stop: every node finishes (no more transfers, done sent
// behind them), the cluster drains, and the stop finds nothing in flight:
// the balances add up.
func TestFinishDrainsCleanly(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	cl, _ := faultCluster(t, mwrt.ClusterConfig{Topology: topo, Transport: transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: time.Millisecond, Seed: 3})})
	workload(t, cl, 9, 100, 0)
	_, err := cl.Snapshot("P2")
	require.NoError(t, err)
	for _, p := range topo.Procs {
		require.NoError(t, cl.Node(p).Finish())
	}
	err = cl.Send("P1", "P2", app.Transfer(1))
	require.ErrorIs(t, err, mwrt.ErrFinished)
	for _, p := range topo.Procs {
		waitFor(t, 10*time.Second, string(p)+" drained", func() bool {
			d, err := cl.Node(p).Draining()
			require.NoError(t, err)
			return d.Empty()
		})
	}
	var total int64
	for _, p := range topo.Procs {
		total += balance(t, cl, p)
	}
	assert.Equal(t, int64(300), total)
	require.NoError(t, cl.Stop(ctxFor(t, 5*time.Second)))
}

func TestDetectorConfigCheck(t *testing.T) {
	assert.NoError(t, mwrt.DetectorConfig{}.Check())
	assert.NoError(t, testDetector.Check())
	assert.ErrorContains(t, mwrt.DetectorConfig{Interval: time.Second, Timeout: 2 * time.Second}.Check(), "below 3 heartbeat intervals")
	assert.ErrorContains(t, mwrt.DetectorConfig{Interval: -1}.Check(), "negative")
	assert.Equal(t, 420*time.Millisecond, testDetector.Bound())
}

// A snapshot whose markers all went out but one of whose parts can never
// come (its node crashed before completing it): the survivors complete
// their parts, and once they suspect the crashed node the collector
// reports the snapshot aborted, naming the missing part and who suspects
// its process.
func TestCrashMissingPartAborted(t *testing.T) {
	checkNoLeak(t)
	topo := spec.Complete(3)
	ct := counting(transport.NewMemory(topo, transport.MemoryConfig{}))
	cl, _ := faultCluster(t, mwrt.ClusterConfig{Topology: topo, Transport: ct})
	defer func() { _ = cl.Stop(ctxFor(t, 200*time.Millisecond)) }()
	for _, c := range topo.In("P3") {
		ct.Gate(c) // P3 never gets the markers it needs
	}
	s, err := cl.Snapshot("P3")
	require.NoError(t, err)
	cl.Node("P3").Crash()
	_, err = cl.Collect(ctxFor(t, 3*(testDetector.Bound()+schedSlack)), s)
	var ab *mwrt.AbortedError
	require.ErrorAs(t, err, &ab, "snapshot %d was not aborted: %v", s, err)
	assert.Empty(t, ab.By, "no survivor waits for a marker of P3's")
	require.NotEmpty(t, ab.PartOf)
	assert.Equal(t, spec.ProcID("P3"), ab.PartOf[0].Peer)
	assert.Equal(t, []spec.ProcID{"P3"}, ab.Causes())
	assert.Contains(t, err.Error(), "P3's part is missing and P")
}

// TestSuspectInNeighbourOnly: Node.Suspect, the detector's suspicion
// source, on a ring, where in- and out-neighbours differ: a node suspects
// the process it hears (its in-neighbour) and tells OnFault and the
// Collector, which then reports a snapshot lacking that process's part
// aborted; it refuses the process it only sends to (ErrNotInNeighbour)
// and a second suspicion (core.ErrAlreadySuspected). The aborts a
// suspicion causes are checked step by step on rings and chords by
// conformance's TestRuntimeLockstepFaults.
func TestSuspectInNeighbourOnly(t *testing.T) {
	topo := spec.Ring(3) // P1 -> P2 -> P3 -> P1
	tr := transport.NewMemory(topo, transport.MemoryConfig{})
	col := mwrt.NewCollector(topo)
	var faults faultLog
	nodes := map[spec.ProcID]*mwrt.Node{}
	for _, p := range topo.Procs {
		b, err := app.NewBank(10)
		require.NoError(t, err)
		n, err := mwrt.NewNode(mwrt.NodeConfig{Topology: topo, Self: p, App: b, Transport: tr, Collector: col, OnFault: faults.add})
		require.NoError(t, err)
		nodes[p] = n
	}
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
		_ = tr.Close()
	}()
	require.NoError(t, nodes["P2"].Suspect("P1", "test"))
	require.ErrorIs(t, nodes["P2"].Suspect("P1", "test"), core.ErrAlreadySuspected)
	require.ErrorIs(t, nodes["P2"].Suspect("P3", "test"), mwrt.ErrNotInNeighbour, "P2 sends to P3 and hears nothing from it")
	require.ErrorIs(t, nodes["P1"].Suspect("P2", "test"), mwrt.ErrNotInNeighbour, "P1 sends to P2 and hears nothing from it")
	fs := faults.of(spec.Suspect, "P2", "P1")
	require.Len(t, fs, 1)
	assert.Equal(t, "test", fs[0].Why)
	require.ErrorIs(t, nodes["P2"].Initiate(1), mwrt.ErrPeerSuspected, "P2 suspects P1")
	require.NoError(t, nodes["P3"].Initiate(2))
	// Snapshot 2 may complete (P1 finished its part before or after the
	// suspicion) or be aborted for P1 (its part missing when asked): the
	// verdict is one of the two, never incomplete.
	_, err := col.Collect(ctxFor(t, 5*time.Second), 2)
	var ab *mwrt.AbortedError
	if err != nil {
		require.ErrorAs(t, err, &ab)
		assert.Equal(t, []spec.ProcID{"P1"}, ab.Causes())
	}
}
