package runtime_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// snapChan keys marker counts.
type snapChan struct {
	s spec.SnapID
	c spec.Channel
}

// countingTransport counts the frames a transport accepts, markers per
// (snapshot, channel), and can hold back every frame of chosen channels
// (keeping their order) until Release.
type countingTransport struct {
	transport.Transport
	mu      sync.Mutex
	markers map[snapChan]int
	app     int
	gated   map[spec.Channel]bool
	held    []wire.Envelope
}

func counting(tr transport.Transport) *countingTransport {
	return &countingTransport{Transport: tr, markers: map[snapChan]int{}, gated: map[spec.Channel]bool{}}
}

func (c *countingTransport) Send(env wire.Envelope) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gated[env.Chan] {
		c.held = append(c.held, wire.Envelope{Chan: env.Chan, Frame: env.Frame.Clone()})
		c.count(env)
		return nil
	}
	err := c.Transport.Send(env)
	if err == nil {
		c.count(env)
	}
	return err
}

func (c *countingTransport) count(env wire.Envelope) {
	if env.Frame.Kind == wire.KindMarker {
		c.markers[snapChan{env.Frame.Snap, env.Chan}]++
	} else {
		c.app++
	}
}

// Gate holds every later frame of ch.
func (c *countingTransport) Gate(ch spec.Channel) {
	c.mu.Lock()
	c.gated[ch] = true
	c.mu.Unlock()
}

// Release lets the held frames go, in order, and opens all gates.
func (c *countingTransport) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gated = map[spec.Channel]bool{}
	for _, env := range c.held {
		if err := c.Transport.Send(env); err != nil {
			return err
		}
	}
	c.held = nil
	return nil
}

func (c *countingTransport) Markers() map[snapChan]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[snapChan]int{}
	for k, v := range c.markers {
		out[k] = v
	}
	return out
}

func bankApps(bal int64) func(spec.ProcID) (core.App, error) {
	return func(spec.ProcID) (core.App, error) { return app.NewBank(bal) }
}

// conserves is the bank's Conservation for topo's processes holding bal
// each: every snapshot a test's cluster collects is checked on the
// application's own states and payloads.
func conserves(topo *spec.Topology, bal int64) []spec.Invariant {
	return []spec.Invariant{app.Conservation(bal * int64(len(topo.Procs)))}
}

func memCluster(t testing.TB, topo *spec.Topology, bal int64, maxDelay time.Duration, seed uint64) (*mwrt.Cluster, *countingTransport) {
	ct := counting(transport.NewMemory(topo, transport.MemoryConfig{MaxDelay: maxDelay, Seed: seed}))
	cl, err := mwrt.NewCluster(mwrt.ClusterConfig{Topology: topo, NewApp: bankApps(bal), Transport: ct, Invariants: conserves(topo, bal)})
	require.NoError(t, err)
	return cl, ct
}

func tcpTransport(t testing.TB, topo *spec.Topology) *transport.TCP {
	addrs := map[spec.ProcID]string{}
	for _, p := range topo.Procs {
		addrs[p] = "127.0.0.1:0"
	}
	tr, err := transport.NewTCP(topo, transport.TCPConfig{Addrs: addrs})
	require.NoError(t, err)
	return tr
}

// perNodeTCP returns one TCP transport per process, each serving only its
// process, on pre-bound loopback listeners: the shape of a multi-process
// cluster. opts, if any, adjust each transport's config.
func perNodeTCP(t testing.TB, topo *spec.Topology, opts ...func(*transport.TCPConfig)) map[spec.ProcID]transport.Transport {
	lns := map[spec.ProcID]net.Listener{}
	addrs := map[spec.ProcID]string{}
	for _, p := range topo.Procs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[p] = ln
		addrs[p] = ln.Addr().String()
	}
	out := map[spec.ProcID]transport.Transport{}
	for _, p := range topo.Procs {
		cfg := transport.TCPConfig{Addrs: addrs, Local: []spec.ProcID{p}, Listeners: map[spec.ProcID]net.Listener{p: lns[p]}}
		for _, o := range opts {
			o(&cfg)
		}
		tr, err := transport.NewTCP(topo, cfg)
		require.NoError(t, err)
		out[p] = tr
	}
	return out
}

// workload runs perNode random transfers from every node concurrently;
// refused transfers (insufficient funds) are skipped.
func workload(t testing.TB, cl *mwrt.Cluster, seed uint64, perNode int, pause time.Duration) {
	topo := cl.Topology()
	var wg sync.WaitGroup
	for i, p := range topo.Procs {
		out := topo.Out(p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for k := 0; k < perNode; k++ {
				to := out[rng.IntN(len(out))].To
				err := cl.Node(p).SendApp(to, app.Transfer(1+rng.Int64N(20)))
				if err != nil && !errors.Is(err, core.ErrApp) {
					t.Errorf("transfer %s->%s: %v", string(p), string(to), err)
					return
				}
				if pause > 0 && rng.IntN(8) == 0 {
					time.Sleep(pause)
				}
			}
		}()
	}
	wg.Wait()
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// checkNoLeak fails t if a goroutine started during the test is still
// running when it ends: goleak compares the goroutines left (retrying
// while they wind down) with those running when checkNoLeak was called.
func checkNoLeak(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}
