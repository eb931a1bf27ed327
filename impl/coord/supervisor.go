package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
	// Death is the death that caused the restart; the zero Death (no
	// Proc) when this supervisor restarted its nodes to follow an
	// incarnation another supervisor of the cluster started, none of
	// its own nodes having died.
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
	// LeaseTTL is each node's lease (default 2 s; etcd's smallest is 1 s,
	// which a loaded machine's renewals, every TTL/3, can miss): a
	// node whose supervisor is gone is found dead within LeaseTTL plus
	// etcd's expiry check (0.5 s).
	LeaseTTL time.Duration
	// Name names this supervisor in the incarnation key (default: its
	// processes).
	Name string
	// Keep, if positive, keeps only the last Keep complete snapshots (the
	// catalog's entries and the store's files).
	Keep int
	// RetryFor is how long a failing restart is tried again (default
	// 30 s): etcd may be restarting.
	RetryFor time.Duration
	// Log receives one line per event; nil discards them.
	Log io.Writer
	// OnRecovery, if set, is called after every automatic restart.
	OnRecovery func(Recovery)
	// OnPublish, if set, is called for every snapshot this supervisor
	// publishes in the catalog (complete at every process).
	OnPublish func(spec.SnapID)
}

// Supervisor restarts its nodes from the latest complete snapshot,
// in a new incarnation, whenever a node of the cluster is found dead.
type Supervisor struct {
	cfg     SupervisorConfig
	Metrics *Metrics

	mu        sync.Mutex
	leases    map[spec.ProcID]*Membership
	dead      []*Membership // crashed claims given up by stop, their leases not yet ended
	inc       Incarnation
	published map[spec.SnapID]bool
	seen      map[spec.SnapID]time.Time // first seen incomplete
	running   chan struct{}             // closed while the nodes run
}

// NewSupervisor checks cfg.
func NewSupervisor(cfg SupervisorConfig) (*Supervisor, error) {
	if cfg.Coord == nil || cfg.Store == nil || cfg.Topology == nil || len(cfg.Procs) == 0 {
		return nil, errors.New("coord: a supervisor needs Coord, Store, Topology and Procs")
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 2 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "supervisor of " + procList(cfg.Procs)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = 30 * time.Second
	}
	return &Supervisor{cfg: cfg, Metrics: NewMetrics(), leases: map[spec.ProcID]*Membership{},
		published: map[spec.SnapID]bool{}, seen: map[spec.SnapID]time.Time{}, running: make(chan struct{})}, nil
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

// Run starts the nodes, in the incarnation running now if its other
// members are alive (a supervisor joining its peers), else in a new one
// from the latest complete snapshot of the catalog that the parts on
// disk agree with; it restarts them after every death, and follows
// every incarnation another supervisor starts, until ctx ends; then it
// stops them and gives up its leases. Every start first claims all its
// processes at once (Claim): while a live member holds one of them
// (another supervisor runs it, or starts it) the first start returns a
// *ClaimedError having changed nothing, no node started, the
// incarnation not advanced.
func (s *Supervisor) Run(ctx context.Context, nodes Nodes) error {
	deaths := s.cfg.Coord.WatchDepartures(ctx)
	incs := s.cfg.Coord.WatchIncarnation(ctx)
	if _, err := s.restart(ctx, nodes, event{}, true); err != nil {
		// The nodes may have started (the failure is a later step's):
		// stopped, not left running behind the returning supervisor.
		s.stop(nodes)
		if ctx.Err() != nil {
			return nil // stopped during the first start: a stop, no failure
		}
		return err
	}
	for {
		ev, err := s.next(ctx, nodes, deaths, incs)
		if errors.Is(err, errStopped) {
			return s.stop(nodes)
		}
		if err != nil {
			s.stop(nodes)
			return err
		}
		if ev.death.Fatal {
			s.stop(nodes)
			return &FatalError{Death: ev.death}
		}
		if err := s.recover(ctx, nodes, ev); err != nil {
			s.stop(nodes)
			if ctx.Err() != nil {
				return nil // stopped during a restart
			}
			return err
		}
	}
}

// event is what makes a supervisor restart: a death, or an incarnation
// another supervisor started (follow).
type event struct {
	death  Death
	follow *Incarnation
	// in is the incarnation running when the death was found.
	in uint64
}

// errStopped is next's error when ctx ends: a stop, no failure.
var errStopped = errors.New("coord: stopped")

// next waits for a death of a node of this incarnation, or a newer
// incarnation; errStopped when ctx ends, and the watch's error when a
// watch fails (a death it did not deliver would never be recovered
// from). A departure of a member of an earlier incarnation (a restart's
// Leave) is not a death.
func (s *Supervisor) next(ctx context.Context, nodes Nodes, departures *Watch[Departure], incs *Watch[Incarnation]) (event, error) {
	for {
		select {
		case <-ctx.Done():
			return event{}, errStopped
		case d := <-nodes.Deaths():
			return event{death: d, in: s.current()}, nil
		case dep, ok := <-departures.C:
			if !ok {
				return event{}, ended(departures.Err())
			}
			if !s.stale(dep) {
				return event{death: Death{Proc: dep.Proc, At: dep.At, Why: "its lease in etcd expired or was revoked"}, in: s.current()}, nil
			}
		case inc, ok := <-incs.C:
			if !ok {
				return event{}, ended(incs.Err())
			}
			if cur, _ := s.Running(); inc.N > cur.N {
				return event{follow: &inc}, nil
			}
		}
	}
}

// ended is next's error for a watch closed with err: errStopped if the
// watch ended with the context.
func ended(err error) error {
	if err == nil {
		return errStopped
	}
	return err
}

// current is the number of the incarnation running.
func (s *Supervisor) current() uint64 {
	inc, _ := s.Running()
	return inc.N
}

// stale says whether a departure is no death of this incarnation: a
// member its supervisor stopped (it restarts, and the incarnation it
// starts is followed), a member of an earlier incarnation, or one that
// is a member again.
func (s *Supervisor) stale(dep Departure) bool {
	cur, _ := s.Running()
	if dep.Leaving || dep.Incarnation < cur.N {
		return true
	}
	ms, err := s.cfg.Coord.Members(context.Background())
	if err != nil {
		return false
	}
	m, alive := ms[dep.Proc]
	return alive && m.Incarnation >= cur.N
}

// recover is one automatic restart: the survivors stop, the leases go,
// the next incarnation starts (or the one another supervisor started).
func (s *Supervisor) recover(ctx context.Context, nodes Nodes, ev event) error {
	d := ev.death
	if ev.follow != nil {
		d = Death{At: time.Now(), Why: fmt.Sprintf("%s started incarnation %d", ev.follow.By, ev.follow.N)}
		s.logf("%s: following it", d.Why)
	} else {
		s.logf("%s found dead (%s): stopping the survivors", d.Proc, d.Why)
		s.Metrics.detected(d)
	}
	s.stop(nodes)
	s.catchUp(ctx)
	r, err := s.restartRetrying(ctx, nodes, ev)
	if err != nil {
		return err
	}
	r.Restart = time.Since(d.At)
	s.Metrics.recovered(r)
	s.logf("incarnation %d runs from %s: detected in %v, restarted in %v", r.Incarnation.N, fromName(r.Incarnation.From), r.Detection, r.Restart.Round(time.Millisecond))
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

// catchUp, once the nodes have stopped, publishes what the ended
// incarnation completed, then settles every other snapshot of the store:
// the catalog's latest complete snapshot is the ended incarnation's
// (LatestComplete in Recover, tla/ChandyLamportFaults.tla), and nothing
// the old incarnation left is published later, in the new one.
func (s *Supervisor) catchUp(ctx context.Context) {
	if err := s.PublishNew(ctx); err != nil {
		s.logf("publish: %v", err)
	}
	ids, err := s.cfg.Store.Used()
	if err != nil {
		s.logf("store: %v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if !s.published[id] {
			s.seen[id] = time.Time{} // settled: incomplete in an incarnation that ended
		}
	}
}

// restartRetrying is restart, tried again every 250 ms for RetryFor
// while it fails (etcd down or restarting, a node that would not start),
// the nodes stopped between tries.
func (s *Supervisor) restartRetrying(ctx context.Context, nodes Nodes, ev event) (Recovery, error) {
	deadline := time.Now().Add(s.cfg.RetryFor)
	for {
		r, err := s.restart(ctx, nodes, ev, false)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return r, err
		}
		s.logf("restart failed: %v; trying again", err)
		s.stop(nodes)
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
}

// restart claims every process of the supervisor, chooses the
// incarnation (the one followed, the running one on a first start among
// live peers, else a new one), enters the claims in it, starts the
// nodes in it and records them restored. The claim comes first: while
// a live member holds one of the processes the restart is refused (a
// *ClaimedError) before it advances the incarnation (a supervisor of
// live processes would follow it) or starts a node.
func (s *Supervisor) restart(ctx context.Context, nodes Nodes, ev event, first bool) (Recovery, error) {
	r := Recovery{Death: ev.death}
	if !ev.death.Died.IsZero() {
		r.Detection = ev.death.At.Sub(ev.death.Died)
	}
	ms, err := s.claim(ctx)
	if err != nil {
		return r, err
	}
	inc, passed, err := s.incarnationFor(ctx, ev, first)
	if err != nil {
		return r, err
	}
	r.Incarnation, r.PassedOver = inc, passed
	for _, p := range passed {
		s.logf("passed over: %s", p)
	}
	if err := s.cfg.Coord.Enter(ctx, ms, inc.N); err != nil {
		return r, err
	}
	if err := nodes.Start(ctx, inc); err != nil {
		return r, fmt.Errorf("coord: start incarnation %d from %s: %w", inc.N, fromName(inc.From), err)
	}
	for _, p := range s.cfg.Procs {
		if err := s.cfg.Coord.MarkRestored(ctx, inc.N, p, inc.From); err != nil {
			return r, err
		}
	}
	s.mu.Lock()
	s.inc = inc
	close(s.running)
	s.mu.Unlock()
	s.Metrics.incarnation.Set(float64(inc.N))
	return r, nil
}

// incarnationFor is the incarnation a restart runs in.
func (s *Supervisor) incarnationFor(ctx context.Context, ev event, first bool) (Incarnation, []string, error) {
	if ev.follow != nil {
		return s.afterOld(ctx, *ev.follow), nil, nil
	}
	if first {
		if inc, ok, err := s.liveIncarnation(ctx); err != nil || ok {
			return inc, nil, err
		}
	}
	inc, passed, err := s.nextIncarnation(ctx, ev)
	if err != nil {
		return inc, passed, err
	}
	return s.afterOld(ctx, inc), passed, nil
}

// oldMembersWait bounds afterOld's wait: a live machine's supervisor
// stops its nodes within their drain bound and leaves; a dead one's
// leases expire within LeaseTTL + 0.5 s.
const oldMembersWait = 10 * time.Second

// afterOld waits until no member of an incarnation before inc is left
// in etcd (at most oldMembersWait), and returns inc. A node of the new
// incarnation must not meet one of the old: restored from the same
// snapshot, the old one's handshake would be accepted, and its channels
// lost when it is restarted in turn.
func (s *Supervisor) afterOld(ctx context.Context, inc Incarnation) Incarnation {
	deadline := time.Now().Add(oldMembersWait)
	for {
		left := s.oldMembers(ctx, inc.N)
		if len(left) == 0 {
			return inc
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.logf("incarnation %d: %s of an earlier incarnation still registered after %v: starting anyway", inc.N, strings.Join(left, ", "), oldMembersWait)
			return inc
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oldMembers names the members of incarnations before n; a process
// claimed whose incarnation is not chosen yet (this supervisor's own,
// during its restart) runs no node, and is none.
func (s *Supervisor) oldMembers(ctx context.Context, n uint64) []string {
	ms, err := s.cfg.Coord.Members(ctx)
	if err != nil {
		return []string{"(members unreadable: " + err.Error() + ")"}
	}
	var left []string
	for p, m := range ms {
		if m.Incarnation != 0 && m.Incarnation < n {
			left = append(left, fmt.Sprintf("%s (incarnation %d)", p, m.Incarnation))
		}
	}
	slices.Sort(left)
	return left
}

// liveIncarnation is the current incarnation if a member of another
// supervisor runs in it (this supervisor joins it).
func (s *Supervisor) liveIncarnation(ctx context.Context) (Incarnation, bool, error) {
	cur, _, err := s.cfg.Coord.Incarnation(ctx)
	if err != nil || cur.N == 0 {
		return cur, false, err
	}
	ms, err := s.cfg.Coord.Members(ctx)
	if err != nil {
		return cur, false, err
	}
	for p, m := range ms {
		if m.Incarnation == cur.N && !slices.Contains(s.cfg.Procs, p) {
			s.logf("joining incarnation %d (%s runs in it)", cur.N, p)
			return cur, true, nil
		}
	}
	return cur, false, nil
}

// nextIncarnation chooses the start point and advances the incarnation
// to start from it; if another supervisor advanced it first (before or
// after this death was found in incarnation ev.in), this one follows
// that incarnation and its start point.
func (s *Supervisor) nextIncarnation(ctx context.Context, ev event) (Incarnation, []string, error) {
	cur, rev, err := s.cfg.Coord.Incarnation(ctx)
	if err != nil {
		return Incarnation{}, nil, err
	}
	if ev.in != 0 && cur.N > ev.in {
		// Another supervisor restarted for this death (or a later one)
		// already: follow it rather than restart everyone again.
		s.logf("incarnation %d already started by %s: following it", cur.N, cur.By)
		return cur, nil, nil
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

// claim claims every process of the supervisor (Claim, its incarnation
// not chosen yet) and keeps their leases, which stop gives up. Its own
// crashed claims it ends first (endDead): it restarts those processes
// itself, and knows no node runs behind them.
func (s *Supervisor) claim(ctx context.Context) ([]*Membership, error) {
	s.endDead(ctx)
	ms, err := s.cfg.Coord.Claim(ctx, s.cfg.Procs, 0, s.cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.cfg.Procs {
		s.leases[p] = ms[i]
	}
	return ms, nil
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
	for _, m := range leases {
		if m.crashed.Load() {
			s.dead = append(s.dead, m)
		}
	}
	s.mu.Unlock()
	err := nodes.Stop(context.Background())
	if err != nil {
		s.logf("stopped: %v", err)
	}
	var wg sync.WaitGroup
	for _, m := range leases { // at once: each may wait DialTimeout for a lost etcd
		wg.Add(1)
		go func() { defer wg.Done(); m.Leave(context.Background()) }()
	}
	wg.Wait()
	return nil
}

// endDead ends the leases of the crashed claims stop gave up
// (Membership.Expire): their member keys go now, as at their expiry, so
// this supervisor's claim of those processes is not refused for a
// holder it knows dead. A lease that cannot be ended now (etcd
// unreachable) is left to expire, and the claim is refused until then.
// A supervisor that never restarts (its machine's death) ends none.
func (s *Supervisor) endDead(ctx context.Context) {
	s.mu.Lock()
	dead := s.dead
	s.dead = nil
	s.mu.Unlock()
	for _, m := range dead {
		if err := m.Expire(ctx); err != nil {
			s.logf("%s's crashed lease left to expire: %v", m.member.Proc, err)
		}
	}
}

// CrashLease stops renewing p's lease, as p's machine dying would (for
// tests and demos): the other supervisors find p dead when it expires,
// or when this supervisor, restarting p itself, ends it (endDead).
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
// (each part held by its own node), then applies Keep. A snapshot still
// incomplete settleTime after it was first seen (aborted, or a part
// lost) is not looked at again.
func (s *Supervisor) PublishNew(ctx context.Context) error {
	ids, err := s.cfg.Store.Used()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if s.settled(id) {
			continue
		}
		r, ok, err := s.cfg.Store.RecordOf(s.cfg.Topology, id)
		if err != nil || !ok {
			continue // not complete (yet), or unreadable: looked at again
		}
		if err := s.cfg.Coord.Publish(ctx, entryOf(r)); err != nil {
			return err
		}
		s.markPublished(id)
		s.logf("snapshot %d complete: in the catalog", id)
		if s.cfg.OnPublish != nil {
			s.cfg.OnPublish(id)
		}
	}
	return s.retain(ctx)
}

// settleTime is how long a snapshot may stay incomplete in the store
// before PublishNew stops looking at it.
const settleTime = 10 * time.Second

// settled says whether id is published, or incomplete for settleTime.
func (s *Supervisor) settled(id spec.SnapID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.published[id] {
		return true
	}
	first, ok := s.seen[id]
	if !ok {
		s.seen[id] = time.Now()
		return false
	}
	return time.Since(first) > settleTime
}

func (s *Supervisor) markPublished(id spec.SnapID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published[id] = true
	delete(s.seen, id)
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
