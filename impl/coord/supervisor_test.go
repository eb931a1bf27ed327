package coord_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// machine is one machine's nodes as the supervisor sees them: it
// records the incarnations it was started in (the nodes themselves are
// the runtime's, tested elsewhere; here the coordination is).
type machine struct {
	mu      sync.Mutex
	started []coord.Incarnation
	stops   int
	deaths  chan coord.Death
	onStop  func() // what the nodes leave on disk as they stop
	onStart func() // what happens as the nodes start
}

func newMachine() *machine { return &machine{deaths: make(chan coord.Death, 1)} }

func (m *machine) Start(_ context.Context, inc coord.Incarnation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = append(m.started, inc)
	if m.onStart != nil {
		m.onStart()
	}
	return nil
}

func (m *machine) Stop(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stops++
	if m.onStop != nil {
		m.onStop()
		m.onStop = nil
	}
	return nil
}

func (m *machine) Deaths() <-chan coord.Death { return m.deaths }

func (m *machine) stopped() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stops
}

func (m *machine) incarnations() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ns []uint64
	for _, inc := range m.started {
		ns = append(ns, inc.N)
	}
	return ns
}

// supervisorOf runs a supervisor of procs on its own client until the
// returned stop is called.
func supervisorOf(t *testing.T, cluster string, st *store.Store, procs ...spec.ProcID) (*coord.Supervisor, *machine, chan coord.Recovery, func()) {
	t.Helper()
	recs := make(chan coord.Recovery, 4)
	sup, err := coord.NewSupervisor(coord.SupervisorConfig{
		Coord: open(t, cluster), Store: st, Topology: spec.Complete(3), Procs: procs,
		OnRecovery: func(r coord.Recovery) { recs <- r },
	})
	require.NoError(t, err)
	m := newMachine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx, m) }()
	waitRunning(t, sup, 1)
	return sup, m, recs, func() { cancel(); require.NoError(t, <-done) }
}

func waitRunning(t *testing.T, sup *coord.Supervisor, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		inc, ch := sup.Running()
		select {
		case <-ch:
			if inc.N >= n {
				return
			}
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("incarnation %d never ran", n)
}

// TestSupervisorStoppedDuringFirstStart: the run's end coming while the
// first start is under way (the nodes started, their leases not yet
// taken: markerwave supervise --duration shorter than a loaded machine's
// start) is a stop, not a failure: Run returns nil, and the nodes it
// started are stopped, not left running after it returns.
func TestSupervisorStoppedDuringFirstStart(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	sup, err := coord.NewSupervisor(coord.SupervisorConfig{
		Coord: open(t, "firststart"), Store: st, Topology: spec.Complete(3), Procs: []spec.ProcID{"P1", "P2", "P3"},
	})
	require.NoError(t, err)
	m := newMachine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.onStart = cancel // the end comes as the nodes start
	require.NoError(t, sup.Run(ctx, m))
	assert.Equal(t, []uint64{1}, m.incarnations())
	assert.Equal(t, 1, m.stopped(), "the nodes started are stopped")
}

// TestSupervisorsPerMachine: a supervisor per machine, against one
// etcd. The second joins the first's incarnation; when the second
// machine dies (its leases expire, no one is told), the first finds P3
// dead by its lease and starts incarnation 2; a replacement supervisor
// of P3 joins incarnation 2; a death on the first machine makes it
// start 3, which the replacement follows.
func TestSupervisorsPerMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lease to expire (about 1.5 s)")
	}
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	a, ma, recA, stopA := supervisorOf(t, "machines", st, "P1", "P2")
	defer stopA()
	b, mb, _, stopB := supervisorOf(t, "machines", st, "P3")
	inc, _ := b.Running()
	assert.Equal(t, uint64(1), inc.N, "the second machine joins the running incarnation")

	b.CrashLease("P3") // the machine dies: nothing more from it
	stopB()
	var r coord.Recovery
	select {
	case r = <-recA:
	case <-time.After(10 * time.Second):
		t.Fatal("P3's lease never expired")
	}
	assert.Equal(t, spec.ProcID("P3"), r.Death.Proc)
	assert.Contains(t, r.Death.Why, "lease")
	assert.Equal(t, uint64(2), r.Incarnation.N)
	assert.Equal(t, []uint64{1, 2}, ma.incarnations())
	assert.Equal(t, []uint64{1}, mb.incarnations())

	c, mc, recC, stopC := supervisorOf(t, "machines", st, "P3")
	defer stopC()
	waitRunning(t, c, 2)
	assert.Equal(t, []uint64{2}, mc.incarnations(), "the replacement joins incarnation 2")

	ma.deaths <- coord.Death{Proc: "P2", Died: time.Now(), At: time.Now(), Why: "its process exited"}
	select {
	case r = <-recC:
	case <-time.After(10 * time.Second):
		t.Fatal("the replacement did not follow incarnation 3")
	}
	assert.Equal(t, uint64(3), r.Incarnation.N)
	assert.Equal(t, []uint64{2, 3}, mc.incarnations())
	waitRunning(t, a, 3)
	assert.Equal(t, []uint64{1, 2, 3}, ma.incarnations())
	restored, err := open(t, "machines").Restored(context.Background(), 3)
	require.NoError(t, err)
	assert.Len(t, restored, 3, "every process restored in incarnation 3")
}

// TestSupervisorFatalDeath: a node that cannot run (exit 2) stops the
// supervisor with a *FatalError instead of a restart loop.
func TestSupervisorFatalDeath(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	sup, err := coord.NewSupervisor(coord.SupervisorConfig{Coord: open(t, "fatal"), Store: st, Topology: spec.Complete(3), Procs: []spec.ProcID{"P1", "P2", "P3"}})
	require.NoError(t, err)
	m := newMachine()
	m.deaths <- coord.Death{Proc: "P2", At: time.Now(), Why: "its process exited: exit status 2", Fatal: true}
	err = sup.Run(context.Background(), m)
	var fe *coord.FatalError
	require.ErrorAs(t, err, &fe)
	assert.EqualError(t, err, "coord: P2 cannot run (its process exited: exit status 2): not restarting")
	assert.Equal(t, 1, m.stops)
}

// TestSupervisorWatchFailureIsAnError: when etcd's watch ends under a
// running supervisor (here its client closes), deaths can no longer be
// seen: Run stops the nodes and returns an error naming the watch, not
// nil as if it had been asked to stop (before the fix it stopped every
// node in silence).
func TestSupervisorWatchFailureIsAnError(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	// A short DialTimeout: the stop's Leaves wait that long on the closed
	// client (the leases expire in etcd all the same).
	co, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{server.Endpoint()}, Cluster: fmt.Sprintf("watchfail-%d-%d", runID, runOf(t)), DialTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	sup, err := coord.NewSupervisor(coord.SupervisorConfig{Coord: co, Store: st, Topology: spec.Complete(3), Procs: []spec.ProcID{"P1", "P2", "P3"}})
	require.NoError(t, err)
	m := newMachine()
	done := make(chan error, 1)
	go func() { done <- sup.Run(context.Background(), m) }()
	waitRunning(t, sup, 1)
	require.NoError(t, co.Close())
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its etcd client closed")
	}
	require.Error(t, err)
	assert.Regexp(t, `^coord: the watch of (members|the incarnation) (ended: the etcd client closed|failed: .+)$`, err.Error())
	assert.Equal(t, 1, m.stopped(), "the nodes are stopped")
}

// checkedMachine is a machine that, as each incarnation starts on it,
// records the members of earlier incarnations still in etcd (a process
// claimed, of incarnation 0, runs no node yet, and is none).
type checkedMachine struct {
	*machine
	co    *coord.Coord
	mu    sync.Mutex
	early []string
}

func (m *checkedMachine) Start(ctx context.Context, inc coord.Incarnation) error {
	ms, err := m.co.Members(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	for p, mem := range ms {
		if mem.Incarnation != 0 && mem.Incarnation < inc.N {
			m.early = append(m.early, fmt.Sprintf("%s of incarnation %d at the start of %d", p, mem.Incarnation, inc.N))
		}
	}
	m.mu.Unlock()
	return m.machine.Start(ctx, inc)
}

// TestSupervisorsOneRestartPerDeath: three supervisors, a node each;
// P2 dies. Its supervisor restarts; the other two find P2's lease
// revoked, a death too. Each must end in incarnation 2, none start a
// third (before the fix, one read incarnation 2 already advanced and
// advanced it again: every node restarted twice for one death); and no
// machine starts its node while a member of incarnation 1 is still in
// etcd (a node of the old incarnation, restored from the same snapshot,
// would pass the new one's handshake).
func TestSupervisorsOneRestartPerDeath(t *testing.T) {
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	var sups []*coord.Supervisor
	var ms []*checkedMachine
	for _, p := range []spec.ProcID{"P1", "P2", "P3"} {
		sup, err := coord.NewSupervisor(coord.SupervisorConfig{Coord: open(t, "onerestart"), Store: st, Topology: spec.Complete(3), Procs: []spec.ProcID{p}})
		require.NoError(t, err)
		m := &checkedMachine{machine: newMachine(), co: open(t, "onerestart")}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- sup.Run(ctx, m) }()
		defer func() { cancel(); require.NoError(t, <-done) }()
		waitRunning(t, sup, 1)
		sups, ms = append(sups, sup), append(ms, m)
	}
	ms[1].deaths <- coord.Death{Proc: "P2", Died: time.Now(), At: time.Now(), Why: "its process exited: signal: killed"}
	for _, sup := range sups {
		waitRunning(t, sup, 2)
	}
	time.Sleep(300 * time.Millisecond) // a second restart would have begun
	for i, m := range ms {
		assert.Equal(t, []uint64{1, 2}, m.incarnations(), "machine of P%d", i+1)
		m.mu.Lock()
		assert.Empty(t, m.early, "machine of P%d", i+1)
		m.mu.Unlock()
	}
	inc, _ := sups[0].Running()
	assert.Equal(t, uint64(2), inc.N)
}

// TestRecoveryFromTheEndedIncarnation: the survivors complete snapshot 7
// while they stop (its parts and global file saved during the drain):
// the recovery publishes it first and restarts from it, the ended
// incarnation's latest complete snapshot (Recover's LatestComplete).
// Snapshot 8, only parts when the incarnation ended, is never published,
// even once its global file appears in the new incarnation.
func TestRecoveryFromTheEndedIncarnation(t *testing.T) {
	top := spec.Complete(3)
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	saveSnap(t, st, top, 5, true)
	co := open(t, "ended")
	recs := make(chan coord.Recovery, 1)
	sup, err := coord.NewSupervisor(coord.SupervisorConfig{Coord: co, Store: st, Topology: top, Procs: top.Procs,
		OnRecovery: func(r coord.Recovery) { recs <- r }})
	require.NoError(t, err)
	require.NoError(t, sup.PublishNew(context.Background()))
	m := newMachine()
	m.onStop = func() {
		saveSnap(t, st, top, 7, true)
		saveSnap(t, st, top, 8, false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx, m) }()
	waitRunning(t, sup, 1)
	inc, _ := sup.Running()
	assert.Equal(t, spec.SnapID(5), inc.From, "the first start: the catalog's latest")

	m.deaths <- coord.Death{Proc: "P2", Died: time.Now(), At: time.Now(), Why: "its process exited"}
	r := <-recs
	assert.Equal(t, spec.SnapID(7), r.Incarnation.From)

	g8 := twoBanks(top, 8)
	_, err = st.Save(g8) // completed late, in the new incarnation's time
	require.NoError(t, err)
	require.NoError(t, sup.PublishNew(context.Background()))
	es, err := co.Catalog(context.Background())
	require.NoError(t, err)
	var ids []spec.SnapID
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []spec.SnapID{5, 7}, ids)
	cancel()
	require.NoError(t, <-done)
}
