package conformance

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
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

// workload is a concurrent run: every process transfers random amounts to
// random neighbours from its own goroutine while snapshots start at random
// initiators, in pairs at the same moment.
type workload struct {
	seed      uint64 // the workload's draws (derived from the root seed)
	transfers int    // per process
	pairs     int    // snapshot pairs started concurrently
	// root is the test's root seed (rootSeed) and delay the transport's
	// delay seed derived from it (0: none), for the failure message.
	root, delay uint64
	// kind is the application run (nil: banks holding the header's
	// balances, sending transfers of 1..30).
	kind *appKind
}

// appKind is an application a runtime test runs: each process's, the
// payload of one random message, and the invariants every collected
// snapshot must satisfy (given the header's initial balances).
type appKind struct {
	newApp     func(p spec.ProcID, bal int64) (core.App, error)
	msg        func(r *rand.Rand) []byte
	invariants func(bal map[spec.ProcID]int64) []spec.Invariant
}

// banks is the default appKind: every snapshot also checked against the
// bank's Conservation over its own states and payloads.
var banks = &appKind{
	newApp: func(_ spec.ProcID, bal int64) (core.App, error) { return app.NewBank(bal) },
	msg:    func(r *rand.Rand) []byte { return app.Transfer(1 + r.Int64N(30)) },
	invariants: func(bal map[spec.ProcID]int64) []spec.Invariant {
		var total int64
		for _, b := range bal {
			total += b
		}
		return []spec.Invariant{app.Conservation(total)}
	},
}

func (w workload) app() *appKind {
	if w.kind == nil {
		return banks
	}
	return w.kind
}

// seedEnv names the environment variable that sets the root seed of the
// randomized runtime tests; the -markerwave.seed flag overrides it.
const seedEnv = "MARKERWAVE_SEED"

var seedFlag = flag.String("markerwave.seed", "", "root seed of TestRuntimeMemory and TestRuntimeTCP (every workload and delay seed derives from it); overrides $"+seedEnv+"; default: the clock")

// parseSeed picks the root seed: the flag's value, else the environment
// variable's, else now(). It says where the seed came from.
func parseSeed(flagVal, envVal string, now func() uint64) (uint64, string, error) {
	v, src := flagVal, "-markerwave.seed"
	if v == "" {
		v, src = envVal, "$"+seedEnv
	}
	if v == "" {
		return now(), "the clock", nil
	}
	seed, err := strconv.ParseUint(strings.TrimSpace(v), 0, 64)
	if err != nil {
		return 0, src, fmt.Errorf("%s=%q is not a seed (an unsigned 64-bit integer): %w", src, v, err)
	}
	return seed, src, nil
}

// rootSeed is t's root seed (parseSeed), logged, and printed again with
// the command that replays it if t fails.
func rootSeed(t *testing.T) uint64 {
	t.Helper()
	seed, src, err := parseSeed(*seedFlag, os.Getenv(seedEnv), func() uint64 { return uint64(time.Now().UnixNano()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("root seed %d (from %s)", seed, src)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s failed with root seed %d; replay its random draws (workloads, transport delays; not the goroutine scheduling):\n  %s=%d go test ./conformance -count=1 -run '^%s$'", t.Name(), seed, seedEnv, seed, t.Name())
		}
	})
	return seed
}

// subSeed derives the seed of random source (i, stream) from root
// (splitmix64 of root, i and stream): every random source of a test draws
// from its own seed, and all of them are fixed by the root.
func subSeed(root uint64, i int, stream string) uint64 {
	mix := func(z uint64) uint64 {
		z += 0x9e3779b97f4a7c15
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	h := mix(root ^ mix(uint64(i)))
	for _, b := range []byte(stream) {
		h = mix(h ^ uint64(b))
	}
	return h
}

// runCluster runs w on a runtime.Cluster of banks over tr, collects every
// snapshot from the collector, merges the nodes' event logs with
// spec.MergeCausal and replays the result (Replay, which also runs
// CheckRun on the collector's snapshots). It returns the report.
func runCluster(t *testing.T, topo *spec.Topology, tr transport.Transport, w workload) Report {
	t.Helper()
	rng := rand.New(rand.NewPCG(w.seed, 7))
	bal := map[spec.ProcID]int64{}
	for _, p := range topo.Procs {
		bal[p] = 50 + rng.Int64N(100)
	}
	run := runTraced(t, topo, tr, w, rng, bal, nil)
	auditApp(t, run.trace, w, bal)
	return replayRun(t, run.trace, w)
}

// auditApp checks the application's invariants on every recorded
// snapshot of tr, the states rebuilt from its events (CheckAppInvariants).
func auditApp(t *testing.T, tr spec.Trace, w workload, bal map[spec.ProcID]int64) {
	t.Helper()
	kind := w.app()
	newApp := func(p spec.ProcID) (App, error) { return kind.newApp(p, bal[p]) }
	require.NoError(t, CheckAppInvariants(tr, newApp, kind.invariants(bal)), "the application's invariants, on the states the events lead to")
}

// replayRun replays tr (Replay) and, if it does not conform, writes it to
// FailDir and fails t saying how to replay the run.
func replayRun(t *testing.T, tr spec.Trace, w workload) Report {
	t.Helper()
	r := Replay(tr, Options{})
	if !r.OK() {
		require.NoError(t, os.MkdirAll(FailDir(), 0o755))
		path := filepath.Join(FailDir(), fmt.Sprintf("%s-seed%d.jsonl", strings.ReplaceAll(t.Name(), "/", "-"), w.seed))
		require.NoError(t, spec.WriteTraceFile(path, tr))
		t.Errorf("runtime run (root seed %d: workload seed %d, delay seed %d) does not conform; written to %s\nreplay: %s=%d go test ./conformance -count=1 -run '^%s$'\n%s",
			w.root, w.seed, w.delay, path, seedEnv, w.root, rootName(t), r)
	}
	return r
}

// tracedRun is one traced run of a workload: its merged trace (the
// header with the initiators and the drained claim, the collected
// snapshots as recorded lines), the snapshots the collector assembled, by
// id, and each process's state at the end.
type tracedRun struct {
	trace spec.Trace
	snaps map[spec.SnapID]snapshot.Global
	end   map[spec.ProcID]spec.LocalState
}

// runTraced runs w on a runtime.Cluster of w's application (banks by
// default) over tr (restored from
// from if it is set; bal is then the header's initial balances, the
// original run's): every process sends w.transfers random transfers from
// its own goroutine, started as soon as the cluster is (while a restored
// node re-delivers its recorded messages), while w.pairs pairs of
// snapshots start at random initiators at the same moment. It collects
// every snapshot, waits for the channels to drain, stops the cluster and
// merges the nodes' logs (spec.MergeCausal).
func runTraced(t *testing.T, topo *spec.Topology, tr transport.Transport, w workload, rng *rand.Rand, bal map[spec.ProcID]int64, from *snapshot.Global) tracedRun {
	t.Helper()
	h := spec.Header{Topology: topo, InitBal: bal, Source: "conformance runtime test"}
	bufs, sinks := nodeSinks(t, h)
	var nodeErrs errorLog
	kind := w.app()
	c, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: topo, Transport: tr, Traces: sinks, From: from,
		NewApp:     func(p spec.ProcID) (core.App, error) { return kind.newApp(p, bal[p]) },
		OnError:    nodeErrs.add,
		Invariants: kind.invariants(bal),
	})
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i, p := range topo.Procs {
		out := topo.Out(p)
		seed := w.seed + uint64(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 11))
			for k := 0; k < w.transfers; k++ {
				// Refusals (insufficient funds) are part of the workload.
				_ = c.Send(p, out[r.IntN(len(out))].To, kind.msg(r))
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				}
			}
		}()
	}
	var ids []spec.SnapID
	var idMu sync.Mutex
	for k := 0; k < w.pairs; k++ {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		var pw sync.WaitGroup
		for j := 0; j < 2; j++ {
			init := topo.Procs[rng.IntN(len(topo.Procs))]
			pw.Add(1)
			go func() {
				defer pw.Done()
				s, err := c.Snapshot(init)
				if err == nil {
					idMu.Lock()
					ids = append(ids, s)
					idMu.Unlock()
				}
			}()
		}
		pw.Wait()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snaps := map[spec.SnapID]snapshot.Global{}
	var recorded []spec.RecordedSnapshot
	for _, s := range ids {
		g, err := c.Collect(ctx, s)
		if err != nil && from != nil {
			for _, f := range c.FailedChannels() {
				t.Errorf("restore: a channel of the restored cluster failed (restored from snapshot %d): %v", from.ID, f)
			}
		}
		require.NoError(t, err, "the collector refused snapshot %d", s)
		snaps[s] = g
		recorded = append(recorded, g.RecordedSnapshot())
	}
	sort.Slice(recorded, func(i, j int) bool { return recorded[i].Snap < recorded[j].Snap })
	require.NoError(t, c.Quiesce(ctx))
	end := map[spec.ProcID]spec.LocalState{}
	for _, p := range topo.Procs {
		end[p], err = c.Node(p).State()
		require.NoError(t, err)
	}
	require.NoError(t, c.Stop(ctx))
	for _, s := range sinks {
		require.NoError(t, s.Close())
	}
	require.Empty(t, nodeErrs.all(), "node errors")
	require.Len(t, snaps, 2*w.pairs)

	logs := map[spec.ProcID][]spec.Event{}
	for p, b := range bufs {
		nt, err := spec.ReadTrace(b)
		require.NoError(t, err, "trace of %s", p)
		logs[p] = nt.Events
	}
	merged, err := spec.MergeCausal(topo, logs)
	require.NoError(t, err)
	h.Snaps, h.Drained = c.Initiators(), true
	for i := range recorded {
		if recorded[i].Initiator == "" {
			recorded[i].Initiator = h.Snaps[recorded[i].Snap]
		}
	}
	inFlight := 0
	for _, g := range snaps {
		inFlight += g.Recorded()
	}
	t.Logf("%d events, %d snapshots recording %d messages in flight", len(merged), len(snaps), inFlight)
	return tracedRun{trace: spec.Trace{Header: h, Events: merged, Recorded: recorded}, snaps: snaps, end: end}
}

// rootName is the name of t's top-level test.
func rootName(t *testing.T) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return name
}

// TestRuntimeMemory runs the concurrent runtime over the in-memory
// transport with random delays on several topologies. Every workload and
// delay seed derives from one root seed (rootSeed: $MARKERWAVE_SEED or
// -markerwave.seed, else the clock), printed on failure.
func TestRuntimeMemory(t *testing.T) {
	root := rootSeed(t)
	topos := []*spec.Topology{spec.Complete(4), spec.Ring(5), spec.Complete(3)}
	for i, topo := range topos {
		w := workload{root: root, seed: subSeed(root, i, "workload"), delay: subSeed(root, i, "delay"), transfers: 60, pairs: 3}
		t.Run(fmt.Sprintf("%dprocs-%dchans", len(topo.Procs), len(topo.Chans)), func(t *testing.T) {
			tr := transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: 300 * time.Microsecond, Seed: w.delay})
			r := runCluster(t, topo, tr, w)
			t.Logf("root seed %d (workload %d, delays %d): %s", root, w.seed, w.delay, r)
		})
	}
}

// TestRuntimeTCP runs the concurrent runtime once over loopback TCP; its
// workload seed derives from the root seed as in TestRuntimeMemory.
func TestRuntimeTCP(t *testing.T) {
	root := rootSeed(t)
	topo := spec.Complete(3)
	addrs := map[spec.ProcID]string{}
	for _, p := range topo.Procs {
		addrs[p] = "127.0.0.1:0"
	}
	tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs})
	require.NoError(t, err)
	w := workload{root: root, seed: subSeed(root, 0, "workload"), transfers: 40, pairs: 2}
	r := runCluster(t, topo, tr, w)
	t.Logf("root seed %d (workload %d): %s", root, w.seed, r)
}

// TestSeeds: the root seed comes from the flag, else the environment, else
// the clock, and a bad value is an error; derived seeds are fixed by the
// root and differ across sources.
func TestSeeds(t *testing.T) {
	now := func() uint64 { return 7 }
	for _, tc := range []struct {
		flag, env string
		want      uint64
		src       string
	}{
		{"", "", 7, "the clock"},
		{"", "42", 42, "$MARKERWAVE_SEED"},
		{"9", "42", 9, "-markerwave.seed"},
		{"", "0x10", 16, "$MARKERWAVE_SEED"},
		{"", " 1770000000000000000 ", 1770000000000000000, "$MARKERWAVE_SEED"},
	} {
		got, src, err := parseSeed(tc.flag, tc.env, now)
		require.NoError(t, err, "flag %q env %q", tc.flag, tc.env)
		require.Equal(t, tc.want, got, "flag %q env %q", tc.flag, tc.env)
		require.Equal(t, tc.src, src)
	}
	for _, bad := range []string{"abc", "-1", "1.5"} {
		_, _, err := parseSeed("", bad, now)
		require.ErrorContains(t, err, "$MARKERWAVE_SEED=", "env %q", bad)
	}
	_, _, err := parseSeed("x", "", now)
	require.ErrorContains(t, err, "-markerwave.seed=")

	require.Equal(t, subSeed(5, 1, "delay"), subSeed(5, 1, "delay"))
	seen := map[uint64]string{}
	for _, root := range []uint64{0, 5} {
		for i := range 3 {
			for _, stream := range []string{"workload", "delay"} {
				s := subSeed(root, i, stream)
				k := fmt.Sprint(root, i, stream)
				require.NotContains(t, seen, s, "%s collides with %s", k, seen[s])
				seen[s] = k
			}
		}
	}
}

// nodeSinks gives every process of h's topology a trace sink writing into
// a buffer of its own: its node log.
func nodeSinks(t *testing.T, h spec.Header) (map[spec.ProcID]*bytes.Buffer, map[spec.ProcID]*trace.Sink) {
	t.Helper()
	bufs := map[spec.ProcID]*bytes.Buffer{}
	sinks := map[spec.ProcID]*trace.Sink{}
	for _, p := range h.Topology.Procs {
		bufs[p] = &bytes.Buffer{}
		s, err := trace.NewSink(bufs[p], h)
		require.NoError(t, err)
		sinks[p] = s
	}
	return bufs, sinks
}

// errorLog collects the errors a cluster's nodes report
// (runtime.ClusterConfig.OnError).
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}
