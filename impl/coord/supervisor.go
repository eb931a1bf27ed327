package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// Nodes are what a supervisor runs: its machine's nodes of the cluster
// (goroutines in the embedding API, child processes in the CLI).
type Nodes interface {
	// Start starts every node of the supervisor, restored from stored
	// snapshot from (0: the initial state), in incarnation inc.
	Start(ctx context.Context, inc Incarnation) error
	// Stop stops the nodes still running: snapshots that cannot complete
	// are aborted, the rest drained, within a bound of its own.
	Stop(ctx context.Context) error
	// Deaths reports a node that died or is suspected dead (a child that
	// exited, the runtime's detector).
	Deaths() <-chan Death
}

// Death is a node found dead.
type Death struct {
	Proc spec.ProcID
	// Died is when it died, if known (a crash this process made, a child's
	// exit); else zero.
	Died time.Time
	// At is when it was detected.
	At  time.Time
	Why string
	// Fatal: the node cannot run (a bad config, say): a restart would fail
	// the same way, so the supervisor stops (a *FatalError).
	Fatal bool
}

// FatalError is Run's error after a fatal death.
type FatalError struct{ Death Death }

func (e *FatalError) Error() string {
	return fmt.Sprintf("coord: %s cannot run (%s): not restarting", e.Death.Proc, e.Death.Why)
}

// Recovery is one automatic restart: the death that caused it, the
// incarnation it started, from which snapshot, how long detection and
// the restart took, and the catalog entries passed over (each naming
// the part on disk that disagrees).
type Recovery struct {
	Death       Death
	Incarnation Incarnation
	// Detection is from the death (when known) to its detection.
	Detection time.Duration
	// Restart is from the detection to every node running again.
	Restart    time.Duration
	PassedOver []string
}

// SupervisorConfig is what a Supervisor needs.
type SupervisorConfig struct {
	Coord    *Coord
	Store    *store.Store
	Topology *spec.Topology
	// Procs are the processes whose nodes this supervisor runs and whose
	// leases it holds (a supervisor per machine holds its machine's).
	Procs []spec.ProcID
	// LeaseTTL is each node's lease (default 1 s, etcd's smallest): a
	// node whose supervisor is gone is found dead within LeaseTTL plus
	// etcd's expiry check (0.5 s).
	LeaseTTL time.Duration
	// Name names this supervisor in the incarnation key (default: its
	// processes).
	Name string
	// Keep, if positive, keeps only the last Keep complete snapshots (the
	// catalog's entries and the store's files).
	Keep int
	// Log receives one line per event; nil discards them.
	Log io.Writer
	// OnRecovery, if set, is called after every automatic restart.
	OnRecovery func(Recovery)
}

// Supervisor restarts its nodes from the latest complete snapshot,
// in a new incarnation, whenever a node of the cluster is found dead.
type Supervisor struct {
	cfg     SupervisorConfig
	Metrics *Metrics

	mu        sync.Mutex
	leases    map[spec.ProcID]*Membership
	inc       Incarnation
	published map[spec.SnapID]bool
	running   chan struct{} // closed while the nodes run
}

// NewSupervisor checks cfg.
func NewSupervisor(cfg SupervisorConfig) (*Supervisor, error) {
	if cfg.Coord == nil || cfg.Store == nil || cfg.Topology == nil || len(cfg.Procs) == 0 {
		return nil, errors.New("coord: a supervisor needs Coord, Store, Topology and Procs")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "supervisor of " + procList(cfg.Procs)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Supervisor{cfg: cfg, Metrics: NewMetrics(), leases: map[spec.ProcID]*Membership{},
		published: map[spec.SnapID]bool{}, running: make(chan struct{})}, nil
}

func procList(ps []spec.ProcID) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ",")
}

func (s *Supervisor) logf(format string, a ...any) {
	fmt.Fprintf(s.cfg.Log, "supervisor: "+format+"\n", a...)
}

// Run starts the nodes in a new incarnation, from the latest complete
// snapshot the catalog holds that the parts on disk agree with, and
// restarts them so after every death, until ctx ends; then it stops
// them and gives up its leases.
func (s *Supervisor) Run(ctx context.Context, nodes Nodes) error {
	if _, err := s.restart(ctx, nodes, Death{}); err != nil {
		return err
	}
	deaths := s.cfg.Coord.WatchDepartures(ctx)
	for {
		d, ok := s.next(ctx, nodes, deaths)
		if !ok {
			return s.stop(nodes)
		}
		if d.Fatal {
			s.stop(nodes)
			return &FatalError{Death: d}
		}
		if err := s.recover(ctx, nodes, d); err != nil {
			s.stop(nodes)
			return err
		}
	}
}

// next waits for a death of a node of this incarnation; false when ctx
// ends. A departure of a member this supervisor gave up (a restart's
// Leave) is not one.
func (s *Supervisor) next(ctx context.Context, nodes Nodes, departures <-chan Departure) (Death, bool) {
	for {
		select {
		case <-ctx.Done():
			return Death{}, false
		case d := <-nodes.Deaths():
			return d, true
		case dep, ok := <-departures:
			if !ok {
				return Death{}, false
			}
			if s.stale(dep) {
				continue
			}
			return Death{Proc: dep.Proc, At: dep.At, Why: "its lease in etcd expired or was revoked"}, true
		}
	}
}

// stale says whether a departure is no death of this incarnation: a
// member of an earlier one (a restart's Leave), or one that is a member
// again.
func (s *Supervisor) stale(dep Departure) bool {
	s.mu.Lock()
	cur := s.inc.N
	s.mu.Unlock()
	if dep.Incarnation < cur {
		return true
	}
	ms, err := s.cfg.Coord.Members(context.Background())
	if err != nil {
		return false
	}
	m, alive := ms[dep.Proc]
	return alive && m.Incarnation >= cur
}

// recover is one automatic restart after death d: the survivors stop,
// the leases go, the next incarnation starts from the latest complete
// snapshot.
func (s *Supervisor) recover(ctx context.Context, nodes Nodes, d Death) error {
	s.logf("%s found dead (%s): stopping the survivors", d.Proc, d.Why)
	s.Metrics.detected(d)
	s.stop(nodes)
	r, err := s.restart(ctx, nodes, d)
	if err != nil {
		return err
	}
	r.Restart = time.Since(d.At)
	s.Metrics.recovered(r)
	s.logf("incarnation %d runs from %s: detected in %v, restarted in %v", r.Incarnation.N, fromName(r.Incarnation.From), r.Detection.Round(time.Millisecond), r.Restart.Round(time.Millisecond))
	if s.cfg.OnRecovery != nil {
		s.cfg.OnRecovery(r)
	}
	return nil
}

func fromName(id spec.SnapID) string {
	if id == 0 {
		return "the initial state"
	}
	return fmt.Sprintf("snapshot %d", id)
}

// restart advances the incarnation, chooses where it starts, starts the
// nodes, joins them and records them restored.
func (s *Supervisor) restart(ctx context.Context, nodes Nodes, d Death) (Recovery, error) {
	r := Recovery{Death: d}
	if !d.Died.IsZero() {
		r.Detection = d.At.Sub(d.Died)
	}
	inc, passed, err := s.nextIncarnation(ctx)
	if err != nil {
		return r, err
	}
	r.Incarnation, r.PassedOver = inc, passed
	for _, p := range passed {
		s.logf("passed over: %s", p)
	}
	if err := nodes.Start(ctx, inc); err != nil {
		return r, fmt.Errorf("coord: start incarnation %d from %s: %w", inc.N, fromName(inc.From), err)
	}
	if err := s.join(ctx, inc); err != nil {
		return r, err
	}
	s.mu.Lock()
	s.inc = inc
	close(s.running)
	s.mu.Unlock()
	s.Metrics.incarnation.Set(float64(inc.N))
	return r, nil
}

// nextIncarnation chooses the start point and advances the incarnation
// to start from it; if another supervisor advanced it first, this one
// follows that incarnation and its start point.
func (s *Supervisor) nextIncarnation(ctx context.Context) (Incarnation, []string, error) {
	cur, rev, err := s.cfg.Coord.Incarnation(ctx)
	if err != nil {
		return Incarnation{}, nil, err
	}
	from, passed, err := s.cfg.Coord.Choose(ctx, s.cfg.Store, s.cfg.Topology)
	if err != nil {
		return Incarnation{}, passed, err
	}
	inc, err := s.cfg.Coord.Advance(ctx, cur, rev, from.ID, s.cfg.Name)
	if errors.Is(err, ErrLostRace) {
		s.logf("%v: following it", err)
		return inc, passed, nil
	}
	return inc, passed, err
}

// join takes a lease for every process of the supervisor and records
// each restored in inc.
func (s *Supervisor) join(ctx context.Context, inc Incarnation) error {
	for _, p := range s.cfg.Procs {
		m, err := s.cfg.Coord.Join(ctx, p, inc.N, s.cfg.LeaseTTL)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.leases[p] = m
		s.mu.Unlock()
		if err := s.cfg.Coord.MarkRestored(ctx, inc.N, p, inc.From); err != nil {
			return err
		}
	}
	return nil
}

// stop stops the nodes and gives up the leases (revoked: a clean stop).
func (s *Supervisor) stop(nodes Nodes) error {
	s.mu.Lock()
	select {
	case <-s.running:
		s.running = make(chan struct{})
	default:
	}
	leases := s.leases
	s.leases = map[spec.ProcID]*Membership{}
	s.mu.Unlock()
	err := nodes.Stop(context.Background())
	if err != nil {
		s.logf("stopped: %v", err)
	}
	for _, m := range leases {
		m.Leave(context.Background())
	}
	return nil
}

// CrashLease stops renewing p's lease, as p's machine dying would (for
// tests and demos): the other supervisors find p dead when it expires.
func (s *Supervisor) CrashLease(p spec.ProcID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.leases[p]; m != nil {
		m.Crash()
	}
}

// Running returns the current incarnation and a channel closed while
// its nodes run (open during a restart).
func (s *Supervisor) Running() (Incarnation, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inc, s.running
}

// PublishNew publishes in the catalog every snapshot of the store that
// is complete at every process and not yet published by this supervisor
// (each part held by its own node), then applies Keep.
func (s *Supervisor) PublishNew(ctx context.Context) error {
	rs, err := s.cfg.Store.Records(s.cfg.Topology)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if s.isPublished(r.ID) {
			continue
		}
		if err := s.cfg.Coord.Publish(ctx, entryOf(r)); err != nil {
			return err
		}
		s.markPublished(r.ID)
		s.logf("snapshot %d complete: in the catalog", r.ID)
	}
	return s.retain(ctx)
}

func (s *Supervisor) isPublished(id spec.SnapID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.published[id]
}

func (s *Supervisor) markPublished(id spec.SnapID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published[id] = true
}

// entryOf is the catalog entry of record r: each part held by its node.
func entryOf(r store.Record) Entry {
	e := Entry{Record: r, Holders: map[spec.ProcID]string{}}
	for _, p := range r.Parts {
		e.Holders[p.Proc] = string(p.Proc)
	}
	return e
}

// retain keeps the last Keep complete snapshots, if Keep is set.
func (s *Supervisor) retain(ctx context.Context) error {
	if s.cfg.Keep <= 0 {
		return nil
	}
	if err := s.cfg.Coord.Retain(ctx, s.cfg.Keep); err != nil {
		return err
	}
	_, err := s.cfg.Store.Prune(s.cfg.Topology, s.cfg.Keep)
	return err
}
