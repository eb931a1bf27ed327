package coord_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/coord/etcdembed"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/impl/transport/tlstest"
	"github.com/markerwave/markerwave/spec"
)

// server is one real etcd for the package's tests; each test uses a
// cluster name of its own.
var server *etcdembed.Server

// runs numbers each test run (-count runs a test more than once).
var runs struct {
	sync.Mutex
	of map[*testing.T]int
}

func runOf(t *testing.T) int {
	runs.Lock()
	defer runs.Unlock()
	if runs.of == nil {
		runs.of = map[*testing.T]int{}
	}
	if _, ok := runs.of[t]; !ok {
		runs.of[t] = len(runs.of)
	}
	return runs.of[t]
}

func TestMain(m *testing.M) {
	var err error
	server, err = etcdembed.Start(etcdembed.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// runID keeps a test's keys apart from an earlier run's (-count).
var runID = time.Now().UnixNano()

func open(t *testing.T, cluster string) *coord.Coord {
	t.Helper()
	c, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{server.Endpoint()}, Cluster: fmt.Sprintf("%s-%d-%d", cluster, runID, runOf(t))})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAdvanceOneWinner: eight survivors that all saw incarnation N try
// to start N+1 at once: exactly one does; the others get ErrLostRace
// and the winner's incarnation.
func TestAdvanceOneWinner(t *testing.T) {
	ctx := context.Background()
	c := open(t, "advance")
	cur, rev, err := c.Incarnation(ctx)
	require.NoError(t, err)
	assert.Zero(t, cur.N)
	first, err := c.Advance(ctx, cur, rev, 0, "first")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), first.N)
	cur, rev, err = c.Incarnation(ctx)
	require.NoError(t, err)

	var wg sync.WaitGroup
	got := make([]coord.Incarnation, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = c.Advance(ctx, cur, rev, spec.SnapID(100+i), fmt.Sprint("survivor ", i))
		}()
	}
	wg.Wait()
	winners := 0
	for i := range 8 {
		if errs[i] == nil {
			winners++
			continue
		}
		assert.ErrorIs(t, errs[i], coord.ErrLostRace)
	}
	assert.Equal(t, 1, winners)
	now, _, err := c.Incarnation(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), now.N)
	for i := range 8 {
		assert.Equal(t, now, got[i], "every survivor follows the winner")
	}
}

// TestPublishOnce: a catalog entry is created once; the same entry
// again is a no-op, a different one is refused naming both; the catalog
// is ordered by the snapshot's own time, not by publication.
func TestPublishOnce(t *testing.T) {
	ctx := context.Background()
	c := open(t, "publish")
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	late := coord.Entry{Record: store.Record{ID: 5, Taken: t0.Add(time.Second), Parts: []store.PartFile{{Proc: "P1", Size: 10, SHA256: "aa"}}}}
	early := coord.Entry{Record: store.Record{ID: 9, Taken: t0, Parts: []store.PartFile{{Proc: "P1", Size: 11, SHA256: "bb"}}}}
	require.NoError(t, c.Publish(ctx, late))
	require.NoError(t, c.Publish(ctx, early))
	require.NoError(t, c.Publish(ctx, late))
	other := late
	other.Parts = []store.PartFile{{Proc: "P1", Size: 12, SHA256: "cc"}}
	err := c.Publish(ctx, other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "snapshot 5 is already in the catalog, differently")
	es, err := c.Catalog(ctx)
	require.NoError(t, err)
	require.Len(t, es, 2)
	assert.Equal(t, []spec.SnapID{9, 5}, []spec.SnapID{es[0].ID, es[1].ID}, "oldest first by the snapshot's own time")
	require.NoError(t, c.Retain(ctx, 1))
	es, err = c.Catalog(ctx)
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, spec.SnapID(5), es[0].ID)
}

// TestLeaseExpiryIsDeparture: a member whose lease is no longer renewed
// (its machine died) departs when the lease expires, within TTL + 0.5 s;
// a member that leaves departs at once.
func TestLeaseExpiryIsDeparture(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lease to expire (about 1.5 s)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := open(t, "lease")
	deps := c.WatchDepartures(ctx).C
	claims, err := c.Claim(ctx, []spec.ProcID{"P1", "P2"}, 3, time.Second)
	require.NoError(t, err)
	m1, m2 := claims[0], claims[1]
	ms, err := c.Members(ctx)
	require.NoError(t, err)
	assert.Len(t, ms, 2)
	assert.Equal(t, uint64(3), ms["P1"].Incarnation)

	require.NoError(t, m2.Leave(ctx))
	d := <-deps
	assert.Equal(t, spec.ProcID("P2"), d.Proc)
	assert.Equal(t, uint64(3), d.Incarnation)
	assert.True(t, d.Leaving, "a clean stop is marked as one")

	crashed := time.Now()
	m1.Crash()
	select {
	case d = <-deps:
	case <-ctx.Done():
		t.Fatal("P1's lease never expired")
	}
	assert.Equal(t, spec.ProcID("P1"), d.Proc)
	assert.False(t, d.Leaving, "an expired lease is a death")
	took := d.At.Sub(crashed)
	t.Logf("lease expiry seen %v after the last renewal stopped", took)
	assert.Less(t, took, 1600*time.Millisecond+500*time.Millisecond, "TTL 1 s + the lessor's 0.5 s check (+ the renewal's head start)")
}

// TestRestored records who restored in which incarnation.
func TestRestored(t *testing.T) {
	ctx := context.Background()
	c := open(t, "restored")
	require.NoError(t, c.MarkRestored(ctx, 2, "P1", 7))
	require.NoError(t, c.MarkRestored(ctx, 2, "P2", 7))
	require.NoError(t, c.MarkRestored(ctx, 3, "P1", 0))
	r, err := c.Restored(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, map[spec.ProcID]spec.SnapID{"P1": 7, "P2": 7}, r)
}

// storeWith saves snapshots ids of the two-process topology complete in
// a new store and returns the store and its records.
func storeWith(t *testing.T, ids ...spec.SnapID) (*store.Store, []store.Record) {
	t.Helper()
	top := spec.Complete(2)
	st, err := store.Open(t.TempDir())
	require.NoError(t, err)
	for _, id := range ids {
		saveSnap(t, st, top, id, true)
	}
	rs, err := st.Records(top)
	require.NoError(t, err)
	return st, rs
}

// saveSnap saves every part of snapshot id of top, and if global the
// global snapshot too (it is then complete).
func saveSnap(t *testing.T, st *store.Store, top *spec.Topology, id spec.SnapID, global bool) {
	t.Helper()
	g := twoBanks(top, id)
	for _, p := range top.Procs {
		ls, _ := g.Local(p)
		_, err := st.SavePart(snapshot.PartOf(ls, p == g.Initiator))
		require.NoError(t, err)
	}
	if global {
		_, err := st.Save(g)
		require.NoError(t, err)
	}
}

// twoBanks is a snapshot of two banks of 100 with every channel empty.
func twoBanks(top *spec.Topology, id spec.SnapID) snapshot.Global {
	g := snapshot.Global{ID: id, Initiator: "P1", Topology: top}
	for _, p := range top.Procs {
		n := snapshot.NodeState{Proc: p, App: []byte(`{"bal":100}`), State: spec.LocalState{Bal: 100}}
		for _, c := range top.Out(p) {
			n.NextSend = append(n.NextSend, snapshot.ChanSeq{Chan: c, Next: 1})
		}
		g.Nodes = append(g.Nodes, n)
	}
	for _, c := range top.Chans {
		g.Chans = append(g.Chans, snapshot.ChanState{Chan: c, NextRecv: 1})
	}
	return g
}

// TestChooseVerifiesParts: the latest entry whose parts on disk agree;
// a part of another checksum in the catalog, or damaged on disk, is
// named and passed over; none usable is an error naming etcd.
func TestChooseVerifiesParts(t *testing.T) {
	ctx := context.Background()
	c := open(t, "choose")
	top := spec.Complete(2)
	st, rs := storeWith(t, 3, 4)
	require.Len(t, rs, 2)
	e, passed, err := c.Choose(ctx, st, top)
	require.NoError(t, err)
	assert.Zero(t, e.ID, "an empty catalog: the initial state")
	assert.Empty(t, passed)

	for _, r := range rs {
		require.NoError(t, c.Publish(ctx, coord.Entry{Record: r}))
	}
	e, _, err = c.Choose(ctx, st, top)
	require.NoError(t, err)
	assert.Equal(t, spec.SnapID(4), e.ID)

	part := filepath.Join(st.Dir(), "parts", "4", "P2.json")
	require.NoError(t, os.WriteFile(part, []byte("{}"), 0o644))
	e, passed, err = c.Choose(ctx, st, top)
	require.NoError(t, err)
	assert.Equal(t, spec.SnapID(3), e.ID)
	require.Len(t, passed, 1)
	assert.Contains(t, passed[0], "snapshot 4 is recorded as complete but is not complete on disk")
	assert.Contains(t, passed[0], "P2's part is damaged")
	assert.Contains(t, passed[0], "intact: the parts of P1")

	// Snapshot 3's record in etcd names another checksum than its part's.
	c2 := open(t, "choose-checksum")
	bad := rs[0]
	bad.Parts = append([]store.PartFile(nil), bad.Parts...)
	bad.Parts[0].SHA256 = "0000"
	require.NoError(t, c2.Publish(ctx, coord.Entry{Record: bad}))
	_, passed, err = c2.Choose(ctx, st, top)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no snapshot of the catalog in etcd at "+server.Endpoint()+" is usable")
	assert.Contains(t, err.Error(), "snapshot 3: P1's part is")
	assert.Contains(t, err.Error(), "the catalog records")
	assert.Len(t, passed, 1)
}

// TestOpenUnreachable: nothing answers at the address: an error naming
// it, wrapping ErrUnreachable, within the dial timeout.
func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: 200 * time.Millisecond})
	require.Error(t, err)
	assert.True(t, errors.Is(err, coord.ErrUnreachable))
	assert.Contains(t, err.Error(), "127.0.0.1:1")
	assert.Less(t, time.Since(start), 2*time.Second)
	_, err = coord.Open(context.Background(), coord.Config{})
	assert.EqualError(t, err, "coord: no etcd endpoint given")
	_, err = coord.Open(context.Background(), coord.Config{Endpoints: []string{"x"}, Cluster: "a/b"})
	assert.EqualError(t, err, `coord: cluster name "a/b" contains a slash`)
}

// TestEtcdOverTLS: an etcd serving mutual TLS is reached with a client
// certificate of its CA; without one, or with one of another CA, the
// client is refused, within the dial timeout, naming the address.
func TestEtcdOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("etcd")
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueLoopback("etcd-server")
	require.NoError(t, err)
	caFile, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	require.NoError(t, os.WriteFile(caFile, ca.PEM, 0o600))
	require.NoError(t, os.WriteFile(cert, certPEM, 0o600))
	require.NoError(t, os.WriteFile(key, keyPEM, 0o600))
	srv, err := etcdembed.Start(etcdembed.Config{TLS: &etcdembed.TLS{CA: caFile, Cert: cert, Key: key}})
	require.NoError(t, err)
	defer srv.Stop()
	assert.Regexp(t, `^https://127\.0\.0\.1:\d+$`, srv.Endpoint())

	clientCert, err := ca.Cert("supervisor", "")
	require.NoError(t, err)
	good := &tls.Config{Certificates: []tls.Certificate{clientCert}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	c, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{srv.Endpoint()}, TLS: good, DialTimeout: 2 * time.Second})
	require.NoError(t, err)
	_, err = c.Advance(context.Background(), coord.Incarnation{}, 0, 0, "tls")
	require.NoError(t, err)
	c.Close()

	other, err := tlstest.NewCA("other")
	require.NoError(t, err)
	otherCert, err := other.Cert("intruder", "")
	require.NoError(t, err)
	for name, tc := range map[string]*tls.Config{
		"no certificate":   {RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		"another CA's one": {Certificates: []tls.Certificate{otherCert}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
	} {
		_, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{srv.Endpoint()}, TLS: tc, DialTimeout: 500 * time.Millisecond})
		require.Error(t, err, name)
		assert.ErrorIs(t, err, coord.ErrUnreachable, name)
		assert.Contains(t, err.Error(), srv.Endpoint(), name)
	}
}

// claim1 claims p alone, in incarnation inc.
func claim1(ctx context.Context, c *coord.Coord, p spec.ProcID, inc uint64) (*coord.Membership, error) {
	ms, err := c.Claim(ctx, []spec.ProcID{p}, inc, time.Second)
	if err != nil {
		return nil, err
	}
	return ms[0], nil
}

// TestClaimRefusesALiveClaim: a process a live member holds cannot be
// claimed again (two supervisors would both run it): the error names
// the first process held and the holder's incarnation and lease, and
// none of the processes claimed with it is put, even for a moment. Of eight claims at once
// of two processes, four naming them in each order, one holds both and
// seven none. Once the holder leaves, the process can be claimed again.
func TestClaimRefusesALiveClaim(t *testing.T) {
	ctx := context.Background()
	c, other := open(t, "claim"), open(t, "claim")
	m, err := claim1(ctx, c, "P1", 3)
	require.NoError(t, err)
	_, err = claim1(ctx, other, "P1", 4)
	require.ErrorIs(t, err, coord.ErrClaimed)
	var ce *coord.ClaimedError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, spec.ProcID("P1"), ce.Proc)
	assert.Equal(t, uint64(3), ce.Holder.Incarnation)
	assert.NotZero(t, ce.Lease)
	assert.Regexp(t, fmt.Sprintf(`^coord: P1 of cluster "claim-\d+-\d+" is already run by a live member \(incarnation 3, lease %x, since \d{4}-\d\d-\d\d [0-9:.]+ UTC\): another supervisor runs it; stop it, or wait for its lease to expire$`, ce.Lease), err.Error())
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	deps := other.WatchDepartures(wctx).C
	_, err2 := other.Claim(ctx, []spec.ProcID{"P2", "P1", "P3"}, 4, time.Second)
	require.Error(t, err2)
	assert.Equal(t, err.Error(), err2.Error(), "the first process held, P1, named with its holder")
	ms, err := other.Members(ctx)
	require.NoError(t, err)
	assert.Equal(t, []spec.ProcID{"P1"}, slices.Collect(maps.Keys(ms)), "nothing put: P2 and P3 unclaimed")
	mark, err := claim1(ctx, other, "P9", 4)
	require.NoError(t, err)
	require.NoError(t, mark.Leave(ctx))
	assert.Equal(t, spec.ProcID("P9"), (<-deps).Proc, "the first key gone is P9's: the refused claim put P2 not even for a moment")

	var wg sync.WaitGroup
	var mu sync.Mutex
	var won [][]*coord.Membership
	var refused int
	for i := range 8 {
		procs := []spec.ProcID{"P2", "P3"}
		if i%2 == 1 {
			procs = []spec.ProcID{"P3", "P2"}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms, err := open(t, "claim").Claim(ctx, procs, 3, time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, ms)
			} else if errors.Is(err, coord.ErrClaimed) {
				refused++
			} else {
				t.Errorf("claim %v: %v", procs, err)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, won, 1, "one of eight claims at once holds P2 and P3")
	assert.Equal(t, 7, refused)

	require.NoError(t, m.Leave(ctx))
	m, err = claim1(ctx, other, "P1", 4)
	require.NoError(t, err, "a process left is free again")
	require.NoError(t, m.Leave(ctx))
	for _, w := range won {
		for _, m := range w {
			require.NoError(t, m.Leave(ctx))
		}
	}
}

// TestEnter: processes claimed before their incarnation is chosen are
// members of incarnation 0 (a second claim names them so), and Enter
// puts them in one; once one claim is lost (its lease revoked, or the
// process claimed by another) Enter changes nothing and names it.
func TestEnter(t *testing.T) {
	ctx := context.Background()
	c := open(t, "enter")
	claims, err := c.Claim(ctx, []spec.ProcID{"P1", "P2"}, 0, time.Second)
	require.NoError(t, err)
	_, err = claim1(ctx, c, "P2", 0)
	require.ErrorIs(t, err, coord.ErrClaimed)
	assert.Contains(t, err.Error(), "P2 of cluster")
	assert.Contains(t, err.Error(), "(claimed, its incarnation not chosen yet, lease ")
	require.NoError(t, c.Enter(ctx, claims, 5))
	ms, err := c.Members(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), ms["P1"].Incarnation)
	assert.Equal(t, uint64(5), ms["P2"].Incarnation)

	require.NoError(t, claims[1].Leave(ctx))
	err = c.Enter(ctx, claims, 6)
	require.Error(t, err)
	assert.Regexp(t, `^coord: enter P2 in incarnation 6: its claim is lost: member key /markerwave/enter-\d+-\d+/members/P2 is gone \(lease [0-9a-f]+ expired\)$`, err.Error())
	other, err := claim1(ctx, c, "P2", 7)
	require.NoError(t, err)
	err = c.Enter(ctx, claims, 6)
	require.ErrorIs(t, err, coord.ErrClaimed)
	assert.Regexp(t, `^coord: enter P2 in incarnation 6: its claim \(lease [0-9a-f]+\) is lost: coord: P2 of cluster "enter-\d+-\d+" is already run by a live member \(incarnation 7, `, err.Error())
	ms, err = c.Members(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), ms["P1"].Incarnation, "nothing changed")
	require.NoError(t, claims[0].Leave(ctx))
	require.NoError(t, other.Leave(ctx))
}

// TestClaimAfterTheHolderDied: a holder that stopped renewing its lease
// (killed) holds the process until the lease expires, then no more.
func TestClaimAfterTheHolderDied(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a lease to expire (about 1.5 s)")
	}
	ctx := context.Background()
	c := open(t, "claimdied")
	m, err := claim1(ctx, c, "P1", 1)
	require.NoError(t, err)
	m.Crash()
	_, err = claim1(ctx, c, "P1", 2)
	require.ErrorIs(t, err, coord.ErrClaimed, "its lease has not expired yet")
	require.Eventually(t, func() bool {
		m, err = claim1(ctx, c, "P1", 2)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "P1 never free after its holder's lease expired: %v", err)
	require.NoError(t, m.Leave(ctx))
}
