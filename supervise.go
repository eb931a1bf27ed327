package markerwave

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// Recovery is one automatic restart of a supervised cluster: the death
// that caused it, the new incarnation and the snapshot it started from,
// the detection and restart times, the catalog entries passed over.
type Recovery = coord.Recovery

// Etcd names the etcd cluster a supervised cluster coordinates through.
type Etcd struct {
	// Endpoints are etcd's client URLs (required), e.g. an embedded
	// server's (impl/coord/etcdembed) or a cluster's.
	Endpoints []string
	// Cluster names this cluster's keys (/markerwave/<Cluster>/...).
	Cluster string
	// TLS, if set, is how etcd is reached (client certificate and CA).
	TLS *tls.Config
	// DialTimeout bounds the wait for an unreachable etcd (default 3 s).
	DialTimeout time.Duration
}

// SuperviseConfig is Start's Config plus the coordination.
type SuperviseConfig struct {
	Config
	Etcd Etcd
	// LeaseTTL is each node's lease in etcd (default 2 s).
	LeaseTTL time.Duration
	// Keep, if positive, keeps only the last Keep complete snapshots.
	Keep int
	// Log receives the supervisor's events; nil discards them.
	Log io.Writer
	// OnRecovery, if set, is called after every automatic restart.
	OnRecovery func(Recovery)
}

// ErrRecovering is returned by a supervised cluster's calls while it
// restarts.
var ErrRecovering = errors.New("markerwave: the cluster is recovering")

// ErrClaimed is wrapped by Supervise's error (a *coord.ClaimedError
// naming the first process held and its holder's incarnation and lease)
// when a live supervisor of the cluster (the same etcd and Cluster)
// already runs, or is starting, one of its processes. A supervisor
// claims all its processes in one etcd transaction before it starts a
// node, so the refused Supervise has started none and changed nothing;
// of two started at once, one runs every process and the other gets
// ErrClaimed. Once the holder stops, or its lease expires after it died
// (LeaseTTL plus half a second), Supervise is accepted.
var ErrClaimed = coord.ErrClaimed

// ErrStopped is returned by a supervised cluster's calls once Stop was
// called.
var ErrStopped = errors.New("markerwave: the cluster is stopped")

// Supervised is a cluster that recovers on its own: when a node is found
// dead (the detector's suspicion, or its lease in etcd gone) the
// survivors stop and every node restarts from the latest complete
// snapshot of the catalog in etcd, in a new incarnation.
type Supervised struct {
	sup   *coord.Supervisor
	co    *coord.Coord
	nodes *inProcess
	done  chan error
	stop  context.CancelFunc

	stopOnce sync.Once
	stopped  chan struct{} // closed once Stop is called
	stopErr  error         // Stop's result, once stopDone is closed
	stopDone chan struct{}
}

// Supervise starts a supervised cluster: cfg.Store is required (the
// parts restarts read), the detector defaults to a 50 ms heartbeat and a
// 250 ms timeout (a node is suspected within 300 ms; shorter ones make a
// loaded machine suspect live nodes, and each suspicion is a restart). An etcd that does not answer within DialTimeout is an
// error naming it; a process another live supervisor runs is ErrClaimed.
func Supervise(ctx context.Context, cfg SuperviseConfig) (*Supervised, error) {
	if cfg.Store == "" || cfg.Topology == nil || cfg.NewApp == nil {
		return nil, errors.New("markerwave: Supervise needs Store, Topology and NewApp")
	}
	top, err := checkTopology(cfg.Topology)
	if err != nil {
		return nil, err
	}
	cfg.Topology = top
	if !cfg.Detector.Enabled() {
		cfg.Detector = DetectorConfig{Interval: 50 * time.Millisecond, Timeout: 250 * time.Millisecond}
	}
	st, err := store.Open(cfg.Store)
	if err != nil {
		return nil, fmt.Errorf("markerwave: store: %w", err)
	}
	co, err := coord.Open(ctx, coord.Config{Endpoints: cfg.Etcd.Endpoints, Cluster: cfg.Etcd.Cluster, TLS: cfg.Etcd.TLS, DialTimeout: cfg.Etcd.DialTimeout})
	if err != nil {
		return nil, fmt.Errorf("markerwave: %w", err)
	}
	s := &Supervised{co: co, nodes: &inProcess{cfg: cfg.Config, st: st}, done: make(chan error, 1),
		stopped: make(chan struct{}), stopDone: make(chan struct{})}
	s.sup, err = coord.NewSupervisor(coord.SupervisorConfig{
		Coord: co, Store: st, Topology: cfg.Topology, Procs: cfg.Topology.Procs,
		LeaseTTL: cfg.LeaseTTL, Keep: cfg.Keep, Log: cfg.Log, OnRecovery: cfg.OnRecovery, Name: "markerwave.Supervise",
	})
	if err != nil {
		co.Close()
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s, nil
}

// run starts the supervisor's loop and waits for the first incarnation.
func (s *Supervised) run() error {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.done <- s.sup.Run(ctx, s.nodes) }()
	select {
	case <-s.runningCh():
		return nil
	case err := <-s.done:
		s.co.Close()
		return err
	}
}

func (s *Supervised) runningCh() <-chan struct{} {
	_, ch := s.sup.Running()
	return ch
}

// Incarnation is the incarnation the cluster runs in (1 from the first
// start); during a restart, the one that ended.
func (s *Supervised) Incarnation() uint64 {
	inc, _ := s.sup.Running()
	return inc.N
}

// WaitRunning waits until the cluster runs in incarnation n or later (a
// recovery is over), or ctx ends.
func (s *Supervised) WaitRunning(ctx context.Context, n uint64) error {
	for {
		inc, ch := s.sup.Running()
		select {
		case <-ch:
			if inc.N >= n {
				return nil
			}
			select {
			case <-time.After(5 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		case <-ctx.Done():
			return fmt.Errorf("markerwave: incarnation %d not running: %w", n, ctx.Err())
		}
	}
}

// cluster is the running incarnation's cluster, ErrStopped once Stop
// was called, or ErrRecovering.
func (s *Supervised) cluster() (*Cluster, error) {
	select {
	case <-s.stopped:
		return nil, ErrStopped
	default:
	}
	if c := s.nodes.current(); c != nil {
		return c, nil
	}
	return nil, ErrRecovering
}

// Send is Cluster.Send on the running incarnation.
func (s *Supervised) Send(from, to ProcID, payload []byte) error {
	c, err := s.cluster()
	if err != nil {
		return err
	}
	return c.Send(from, to, payload)
}

// TakeSnapshot is Cluster.TakeSnapshot; a complete snapshot is then
// published in the catalog in etcd (a restart point). A snapshot of an
// incarnation that ended while it was taken is neither saved nor
// published (ErrRecovering): a restart point is always of the running
// incarnation or the one it started from.
func (s *Supervised) TakeSnapshot(ctx context.Context, initiator ProcID) (Snapshot, error) {
	c, err := s.cluster()
	if err != nil {
		return Snapshot{}, err
	}
	id, err := c.rt.Snapshot(initiator)
	if err != nil {
		return Snapshot{}, err
	}
	g, err := c.rt.Collect(ctx, id)
	if err != nil {
		return g, err
	}
	if err := s.nodes.saveIfCurrent(c, g); err != nil {
		return g, err
	}
	return g, s.sup.PublishNew(ctx)
}

// Quiesce is Cluster.Quiesce on the running incarnation.
func (s *Supervised) Quiesce(ctx context.Context) error {
	c, err := s.cluster()
	if err != nil {
		return err
	}
	return c.Quiesce(ctx)
}

// Crash stops p's node at once, as kill -9 would, and stops renewing its
// lease (for tests and demos): the cluster recovers on its own.
func (s *Supervised) Crash(p ProcID) error {
	c, err := s.cluster()
	if err != nil {
		return err
	}
	s.nodes.crashed(p)
	s.sup.CrashLease(p)
	return c.Crash(p)
}

// Metrics serves the supervisor's recovery metrics for Prometheus.
func (s *Supervised) Metrics() http.Handler { return s.sup.Metrics.Handler() }

// Stop stops the cluster, gives up the leases and closes the client. A
// second Stop waits for the first (or ctx) and returns its result.
func (s *Supervised) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		close(s.stopped)
		s.stop()
		go func() {
			s.stopErr = errors.Join(<-s.done, s.co.Close())
			close(s.stopDone)
		}()
	})
	select {
	case <-s.stopDone:
		return s.stopErr
	case <-ctx.Done():
		return fmt.Errorf("markerwave: stop: %w", ctx.Err())
	}
}

// inProcess runs a supervised cluster's nodes as goroutines (coord.Nodes).
type inProcess struct {
	cfg Config
	st  *store.Store

	retire sync.Mutex // held to save a snapshot, and to retire c
	mu     sync.Mutex
	c      *Cluster
	deaths chan coord.Death
	died   map[ProcID]time.Time
}

// Start starts every node, restored from snapshot inc.From of the store.
func (n *inProcess) Start(_ context.Context, inc coord.Incarnation) error {
	cfg := n.cfg
	if inc.From != 0 {
		g, err := n.st.Load(inc.From)
		if err != nil {
			return err
		}
		cfg.From = &g
	}
	deaths := make(chan coord.Death, len(cfg.Topology.Procs)*len(cfg.Topology.Procs))
	c, err := start(cfg, func(f runtime.Fault) { n.fault(deaths, f) })
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.c, n.deaths, n.died = c, deaths, map[ProcID]time.Time{}
	n.mu.Unlock()
	return nil
}

// fault reports a suspicion as a death.
func (n *inProcess) fault(deaths chan coord.Death, f runtime.Fault) {
	if f.Action != spec.Suspect {
		return
	}
	n.mu.Lock()
	died := n.died[f.Peer]
	n.mu.Unlock()
	select {
	case deaths <- coord.Death{Proc: f.Peer, Died: died, At: f.At, Why: f.String()}:
	default: // one is enough
	}
}

func (n *inProcess) crashed(p ProcID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.died[p] = time.Now()
}

// saveIfCurrent saves g, taken on c, if c still runs: under the lock
// Stop takes to retire c.
func (n *inProcess) saveIfCurrent(c *Cluster, g Snapshot) error {
	n.retire.Lock()
	defer n.retire.Unlock()
	if n.current() != c {
		return fmt.Errorf("snapshot %d: %w: its incarnation ended while it was taken; not saved", g.ID, ErrRecovering)
	}
	return c.save(g)
}

// Stop stops the nodes; what is in flight to the dead is not waited
// for (the restart rolls it back).
func (n *inProcess) Stop(ctx context.Context) error {
	n.retire.Lock()
	n.mu.Lock()
	c := n.c
	n.c = nil
	n.mu.Unlock()
	n.retire.Unlock()
	if c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	return c.Stop(ctx)
}

func (n *inProcess) Deaths() <-chan coord.Death {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.deaths
}

func (n *inProcess) current() *Cluster {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.c
}

var _ coord.Nodes = (*inProcess)(nil)
