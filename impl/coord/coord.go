package coord

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

// Config names the etcd cluster the supervised mode coordinates through
// and the cluster whose keys it uses.
type Config struct {
	// Endpoints are etcd's client URLs or host:port addresses (required).
	Endpoints []string
	// Cluster names the markerwave cluster: its keys lie under
	// /markerwave/<Cluster>/ (default "default").
	Cluster string
	// TLS, if set, is used to reach etcd (client certificate and CA).
	TLS *tls.Config
	// DialTimeout bounds how long an unreachable etcd is waited for
	// (default 3 s).
	DialTimeout time.Duration
}

// ErrUnreachable is wrapped by Open's error when etcd does not answer.
var ErrUnreachable = errors.New("etcd unreachable")

// Coord is one client's view of the cluster's coordination state in etcd.
type Coord struct {
	cli    *clientv3.Client
	prefix string
	cfg    Config
}

// Open connects to etcd and checks, within DialTimeout, that it answers
// (a read of the incarnation key). An etcd that does not answer is an
// error wrapping ErrUnreachable naming its endpoints.
func Open(ctx context.Context, cfg Config) (*Coord, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("coord: no etcd endpoint given")
	}
	if cfg.Cluster == "" {
		cfg.Cluster = "default"
	}
	if strings.Contains(cfg.Cluster, "/") {
		return nil, fmt.Errorf("coord: cluster name %q contains a slash", cfg.Cluster)
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, TLS: cfg.TLS, Logger: zap.NewNop(),
		// Reconnect within a second of etcd coming back (gRPC's default
		// backoff grows to two minutes).
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}, MinConnectTimeout: cfg.DialTimeout,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("coord: etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	c := &Coord{cli: cli, prefix: "/markerwave/" + cfg.Cluster + "/", cfg: cfg}
	if err := c.ping(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return c, nil
}

// ping reads the incarnation key within DialTimeout.
func (c *Coord) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	if _, err := c.cli.Get(ctx, c.incarnationKey()); err != nil {
		return fmt.Errorf("coord: %w: no answer from %s within %v: %v", ErrUnreachable, strings.Join(c.cfg.Endpoints, ","), c.cfg.DialTimeout, err)
	}
	return nil
}

// op bounds one operation by DialTimeout: an etcd that stops answering
// fails the call instead of blocking it (the supervisor retries).
func (c *Coord) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.DialTimeout)
}

// Close closes the client.
func (c *Coord) Close() error { return c.cli.Close() }

// Endpoints are the etcd endpoints this client talks to.
func (c *Coord) Endpoints() []string { return c.cfg.Endpoints }

// The keys, under /markerwave/<cluster>/ (docs/supervised.md):
//
//	members/<P>               one per live node, attached to its lease
//	catalog/<id, 20 digits>   a complete snapshot: id, time, parts
//	incarnation               the current incarnation and its start point
//	restored/<N, 20 digits>/<P>  node P restored in incarnation N from ...
func (c *Coord) memberKey(p spec.ProcID) string { return c.prefix + "members/" + string(p) }
func (c *Coord) membersPrefix() string          { return c.prefix + "members/" }
func (c *Coord) catalogPrefix() string          { return c.prefix + "catalog/" }
func (c *Coord) catalogKey(id spec.SnapID) string {
	return fmt.Sprintf("%s%020d", c.catalogPrefix(), uint64(id))
}
func (c *Coord) incarnationKey() string { return c.prefix + "incarnation" }
func (c *Coord) restoredPrefix(n uint64) string {
	return fmt.Sprintf("%srestored/%020d/", c.prefix, n)
}

// --- members and their leases: who is alive (detection) ---

// Member is a node's entry under members/: its incarnation and since
// when it runs. The key is attached to the node's lease, so etcd deletes
// it when the node stops renewing the lease (a killed node: suspected).
type Member struct {
	Proc spec.ProcID `json:"proc"`
	// Incarnation is 0 from its supervisor's Claim to its Enter: the
	// process is held, its node not started yet.
	Incarnation uint64    `json:"incarnation"`
	Since       time.Time `json:"since"`
	// Leaving: its supervisor stops it (a restart, or the end), so its
	// departure that follows is no death.
	Leaving bool `json:"leaving,omitempty"`
}

// Membership is a node's live lease.
type Membership struct {
	c       *Coord
	lease   clientv3.LeaseID
	cancel  context.CancelFunc
	key     string
	member  Member
	crashed atomic.Bool
}

// ErrClaimed is wrapped by Claim's error (a *ClaimedError) when a live
// member already holds one of the processes: two supervisors must never
// both run one.
var ErrClaimed = errors.New("already run by a live member")

// ClaimedError is a process a live member already holds: its member
// key, attached to a lease etcd still keeps, is the holder's.
type ClaimedError struct {
	Proc    spec.ProcID
	Cluster string
	Holder  Member
	// Lease is the holder's lease in etcd (etcdctl shows it in hex).
	Lease int64
}

func (e *ClaimedError) Error() string {
	in := fmt.Sprintf("incarnation %d", e.Holder.Incarnation)
	if e.Holder.Incarnation == 0 {
		in = "claimed, its incarnation not chosen yet"
	}
	return fmt.Sprintf("coord: %s of cluster %q is %v (%s, lease %x, since %s): another supervisor runs it; stop it, or wait for its lease to expire",
		e.Proc, e.Cluster, ErrClaimed, in, e.Lease, e.Holder.Since.Format("2006-01-02 15:04:05.000 UTC"))
}

func (e *ClaimedError) Unwrap() error { return ErrClaimed }

// claimed is the *ClaimedError of p's member key, of value v attached
// to lease.
func (c *Coord) claimed(p spec.ProcID, v []byte, lease int64) error {
	e := &ClaimedError{Proc: p, Cluster: c.cfg.Cluster, Lease: lease}
	if err := json.Unmarshal(v, &e.Holder); err != nil {
		return fmt.Errorf("coord: %s is held by member key %s (lease %x), whose value %q does not decode: %w", p, c.memberKey(p), lease, v, err)
	}
	return e
}

// Claim registers every process of procs as a live member of
// incarnation inc (0: claimed, its incarnation not chosen yet; Enter
// sets it), each with a lease of its own of ttl (rounded up to whole
// seconds, at least one), kept alive until Leave or Crash. It is one
// transaction: if no member key of procs exists (etcd deletes one with
// its lease: a holder that left, or whose lease expired, holds it no
// more), every key is put; else none is, the error is a *ClaimedError
// naming the first process of procs held and its holder, and the
// leases granted are revoked. Of two supervisors claiming processes in
// common at once, one holds them all and the other none.
func (c *Coord) Claim(ctx context.Context, procs []spec.ProcID, inc uint64, ttl time.Duration) ([]*Membership, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	if len(procs) == 0 {
		return nil, errors.New("coord: claim: no process given")
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	ms := make([]*Membership, 0, len(procs))
	revoke := func() {
		for _, m := range ms {
			c.cli.Revoke(ctx, m.lease) // unused; else it expires within ttl
		}
	}
	var ifs []clientv3.Cmp
	var puts, gets []clientv3.Op
	for _, p := range procs {
		g, err := c.cli.Grant(ctx, secs)
		if err != nil {
			revoke()
			return nil, fmt.Errorf("coord: claim %s: lease for %s: %w", procList(procs), p, err)
		}
		m := &Membership{c: c, lease: g.ID, cancel: func() {}, key: c.memberKey(p), member: Member{Proc: p, Incarnation: inc, Since: time.Now().UTC()}}
		ms = append(ms, m)
		body, _ := json.Marshal(m.member)
		ifs = append(ifs, clientv3.Compare(clientv3.CreateRevision(m.key), "=", 0))
		puts = append(puts, clientv3.OpPut(m.key, string(body), clientv3.WithLease(g.ID)))
		gets = append(gets, clientv3.OpGet(m.key))
	}
	r, err := c.cli.Txn(ctx).If(ifs...).Then(puts...).Else(gets...).Commit()
	if err != nil {
		revoke()
		return nil, fmt.Errorf("coord: claim %s: %w", procList(procs), err)
	}
	if !r.Succeeded {
		revoke()
		for i, p := range procs {
			if kvs := r.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				return nil, c.claimed(p, kvs[0].Value, kvs[0].Lease)
			}
		}
		// The transaction is atomic: its Else reads the keys its If found.
		return nil, fmt.Errorf("coord: claim %s: a member key existed, but the reads found none", procList(procs))
	}
	for _, m := range ms {
		kctx, cancel := context.WithCancel(context.Background())
		ch, err := c.cli.KeepAlive(kctx, m.lease)
		if err != nil {
			cancel()
			for _, m := range ms {
				m.Leave(ctx) // the keys put go with their leases
			}
			return nil, fmt.Errorf("coord: claim %s: keep %s's lease alive: %w", procList(procs), m.member.Proc, err)
		}
		m.cancel = cancel
		go func() {
			for range ch { // drain the renewals
			}
		}()
	}
	return ms, nil
}

// Enter makes the members ms, claimed by Claim, members of incarnation
// inc, by one transaction: only if each one's key is still attached to
// its lease. Else nothing is changed, and the error names the first
// claim lost (its lease expired, a renewal missed on a loaded machine)
// and who holds the process now, if anyone.
func (c *Coord) Enter(ctx context.Context, ms []*Membership, inc uint64) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	since := time.Now().UTC()
	var ifs []clientv3.Cmp
	var puts, gets []clientv3.Op
	var procs []spec.ProcID
	for _, m := range ms {
		in := m.member
		in.Incarnation, in.Since = inc, since
		body, _ := json.Marshal(in)
		ifs = append(ifs, clientv3.Compare(clientv3.LeaseValue(m.key), "=", m.lease))
		puts = append(puts, clientv3.OpPut(m.key, string(body), clientv3.WithLease(m.lease)))
		gets = append(gets, clientv3.OpGet(m.key))
		procs = append(procs, m.member.Proc)
	}
	r, err := c.cli.Txn(ctx).If(ifs...).Then(puts...).Else(gets...).Commit()
	if err != nil {
		return fmt.Errorf("coord: enter %s in incarnation %d: %w", procList(procs), inc, err)
	}
	if !r.Succeeded {
		for i, m := range ms {
			kvs := r.Responses[i].GetResponseRange().Kvs
			if len(kvs) == 0 {
				return fmt.Errorf("coord: enter %s in incarnation %d: its claim is lost: member key %s is gone (lease %x expired)", m.member.Proc, inc, m.key, m.lease)
			}
			if kvs[0].Lease != int64(m.lease) {
				return fmt.Errorf("coord: enter %s in incarnation %d: its claim (lease %x) is lost: %w", m.member.Proc, inc, m.lease, c.claimed(m.member.Proc, kvs[0].Value, kvs[0].Lease))
			}
		}
		return fmt.Errorf("coord: enter %s in incarnation %d: a claim was lost, but the reads found every key on its lease", procList(procs), inc)
	}
	for _, m := range ms {
		m.member.Incarnation, m.member.Since = inc, since
	}
	return nil
}

// Leave marks p's member key as leaving, then revokes the lease: the
// key goes at once, and its watchers know it for a clean stop, no death.
// A crashed membership's lease is left to expire.
func (m *Membership) Leave(ctx context.Context) error {
	m.cancel()
	if m.crashed.Load() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, m.c.cfg.DialTimeout)
	defer cancel()
	leaving := m.member
	leaving.Leaving = true
	body, _ := json.Marshal(leaving)
	if _, err := m.c.cli.Put(ctx, m.key, string(body), clientv3.WithLease(m.lease)); err != nil {
		return err
	}
	_, err := m.c.cli.Revoke(ctx, m.lease)
	return err
}

// Expire ends a crashed membership's lease now, as its expiry would:
// the member key goes without a leaving mark, so its watchers know it
// for a death. A lease already expired is no error.
func (m *Membership) Expire(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.c.cfg.DialTimeout)
	defer cancel()
	_, err := m.c.cli.Revoke(ctx, m.lease)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil
	}
	return err
}

// Crash stops renewing the lease without revoking it, as a killed
// process does: the member key goes when the lease expires.
func (m *Membership) Crash() { m.crashed.Store(true); m.cancel() }

// Members are the live members, by process.
func (c *Coord) Members(ctx context.Context) (map[spec.ProcID]Member, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	r, err := c.cli.Get(ctx, c.membersPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("coord: members: %w", err)
	}
	ms := map[spec.ProcID]Member{}
	for _, kv := range r.Kvs {
		var m Member
		if err := json.Unmarshal(kv.Value, &m); err != nil {
			return nil, fmt.Errorf("coord: member %s: %w", kv.Key, err)
		}
		ms[m.Proc] = m
	}
	return ms, nil
}

// Departure is a member key deleted: a lease expired or was revoked.
type Departure struct {
	Proc spec.ProcID
	// Incarnation is the one the member had joined, and Leaving whether
	// its supervisor stopped it (its key's last value).
	Incarnation uint64
	Leaving     bool
	At          time.Time // when this watcher saw it
}

// WatchDepartures reports every member whose key goes, until ctx ends or
// the watch fails (see Watch).
func (c *Coord) WatchDepartures(ctx context.Context) *Watch[Departure] {
	prefix := c.membersPrefix()
	return watch(ctx, c.cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithPrevKV()), "members", func(ev *clientv3.Event) (Departure, bool) {
		d := Departure{Proc: spec.ProcID(strings.TrimPrefix(string(ev.Kv.Key), prefix)), At: time.Now()}
		if ev.PrevKv != nil {
			var m Member
			if json.Unmarshal(ev.PrevKv.Value, &m) == nil {
				d.Incarnation, d.Leaving = m.Incarnation, m.Leaving
			}
		}
		return d, true
	})
}

// Watch is a stream of what an etcd watch reports: C delivers each until
// the watch's context ends or the watch itself fails; then C is closed
// and Err says which. A watch that fails loses events (a departure not
// seen is a death not recovered from), so its user must stop, not carry
// on as if nothing were lost.
type Watch[T any] struct {
	C   <-chan T
	err error // written before C is closed
}

// Err is nil while C is open and after the context ended; else what
// ended the watch (etcd cancelled it, the client closed).
func (w *Watch[T]) Err() error { return w.err }

// watch turns etcd's watch channel wch (of what) into a Watch, each event
// decoded (false: skip it).
func watch[T any](ctx context.Context, wch clientv3.WatchChan, what string, decode func(*clientv3.Event) (T, bool)) *Watch[T] {
	out := make(chan T, 16)
	w := &Watch[T]{C: out}
	go func() {
		defer close(out)
		for r := range wch {
			if err := r.Err(); err != nil {
				if ctx.Err() == nil {
					w.err = fmt.Errorf("coord: the watch of %s failed: %w", what, err)
				}
				return
			}
			for _, ev := range r.Events {
				v, ok := decode(ev)
				if !ok {
					continue
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}
		if ctx.Err() == nil {
			w.err = fmt.Errorf("coord: the watch of %s ended: the etcd client closed", what)
		}
	}()
	return w
}

// --- the catalog of complete snapshots: where to restart from ---

// Entry is the catalog's record of a complete snapshot: its id, its time
// (the snapshot's own record), each part's size and checksum, and who
// holds each part.
type Entry struct {
	store.Record
	// Holders names, for each process, the node (or machine) whose disk
	// holds its part.
	Holders map[spec.ProcID]string `json:"holders"`
}

// Publish records a complete snapshot in the catalog, once: a
// transaction creates its key if absent; an entry already there must be
// the same, else the error names both.
func (c *Coord) Publish(ctx context.Context, e Entry) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("coord: encode catalog entry %d: %w", e.ID, err)
	}
	key := c.catalogKey(e.ID)
	r, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(body))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fmt.Errorf("coord: publish snapshot %d: %w", e.ID, err)
	}
	if r.Succeeded {
		return nil
	}
	have := r.Responses[0].GetResponseRange().Kvs[0].Value
	if string(have) != string(body) {
		return fmt.Errorf("coord: snapshot %d is already in the catalog, differently: %s, not %s", e.ID, have, body)
	}
	return nil
}

// Catalog returns every complete snapshot of the catalog, oldest first
// by its own time, then id (never by when it was published).
func (c *Coord) Catalog(ctx context.Context) ([]Entry, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	r, err := c.cli.Get(ctx, c.catalogPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("coord: catalog: %w", err)
	}
	es := make([]Entry, 0, len(r.Kvs))
	for _, kv := range r.Kvs {
		var e Entry
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			return nil, fmt.Errorf("coord: catalog entry %s does not decode: %w", kv.Key, err)
		}
		es = append(es, e)
	}
	sort.SliceStable(es, func(i, j int) bool {
		if !es[i].Taken.Equal(es[j].Taken) {
			return es[i].Taken.Before(es[j].Taken)
		}
		return es[i].ID < es[j].ID
	})
	return es, nil
}

// Retain removes the catalog entries older than the last keep (the
// store's Prune removes their files).
func (c *Coord) Retain(ctx context.Context, keep int) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	es, err := c.Catalog(ctx)
	if err != nil {
		return err
	}
	for i := 0; i < len(es)-keep; i++ {
		if _, err := c.cli.Delete(ctx, c.catalogKey(es[i].ID)); err != nil {
			return fmt.Errorf("coord: retain: %w", err)
		}
	}
	return nil
}

// --- the incarnation counter: one restart at a time ---

// Incarnation is the cluster's current run: its number (1 for the first
// start), the snapshot it restarted from (0: the initial state), who
// started it and when.
type Incarnation struct {
	N    uint64      `json:"n"`
	From spec.SnapID `json:"from"`
	By   string      `json:"by"`
	At   time.Time   `json:"at"`
}

// Incarnation reads the current incarnation (N 0: none started yet) and
// the revision a compare-and-swap must see.
func (c *Coord) Incarnation(ctx context.Context) (Incarnation, int64, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	r, err := c.cli.Get(ctx, c.incarnationKey())
	if err != nil {
		return Incarnation{}, 0, fmt.Errorf("coord: incarnation: %w", err)
	}
	if len(r.Kvs) == 0 {
		return Incarnation{}, 0, nil
	}
	var inc Incarnation
	if err := json.Unmarshal(r.Kvs[0].Value, &inc); err != nil {
		return Incarnation{}, 0, fmt.Errorf("coord: incarnation %q does not decode: %w", r.Kvs[0].Value, err)
	}
	return inc, r.Kvs[0].ModRevision, nil
}

// ErrLostRace is wrapped by Advance's error when another supervisor
// advanced the incarnation first.
var ErrLostRace = errors.New("another supervisor advanced the incarnation first")

// Advance starts incarnation cur.N+1 from snapshot from, by a
// transaction that succeeds only if the incarnation key is still at
// revision rev (what Incarnation returned with cur): of two survivors
// that both saw incarnation N, exactly one starts N+1; the other gets
// ErrLostRace and the winner's incarnation.
func (c *Coord) Advance(ctx context.Context, cur Incarnation, rev int64, from spec.SnapID, by string) (Incarnation, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	next := Incarnation{N: cur.N + 1, From: from, By: by, At: time.Now().UTC()}
	body, _ := json.Marshal(next)
	key := c.incarnationKey()
	r, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, string(body))).Commit()
	if err != nil {
		return Incarnation{}, fmt.Errorf("coord: advance the incarnation past %d: %w", cur.N, err)
	}
	if r.Succeeded {
		return next, nil
	}
	won, _, err := c.Incarnation(ctx)
	if err != nil {
		return Incarnation{}, err
	}
	return won, fmt.Errorf("coord: incarnation %d: %w (by %s, from snapshot %d)", won.N, ErrLostRace, won.By, won.From)
}

// WatchIncarnation reports every incarnation started (by any
// supervisor) until ctx ends or the watch fails (see Watch).
func (c *Coord) WatchIncarnation(ctx context.Context) *Watch[Incarnation] {
	return watch(ctx, c.cli.Watch(ctx, c.incarnationKey(), clientv3.WithFilterDelete()), "the incarnation", func(ev *clientv3.Event) (Incarnation, bool) {
		var inc Incarnation
		return inc, json.Unmarshal(ev.Kv.Value, &inc) == nil
	})
}

// --- who has restored: the recovery's completion ---

// MarkRestored records that p runs in incarnation n from snapshot from
// (0: the initial state).
func (c *Coord) MarkRestored(ctx context.Context, n uint64, p spec.ProcID, from spec.SnapID) error {
	ctx, cancel := c.op(ctx)
	defer cancel()
	if _, err := c.cli.Put(ctx, c.restoredPrefix(n)+string(p), fmt.Sprint(uint64(from))); err != nil {
		return fmt.Errorf("coord: mark %s restored in incarnation %d: %w", p, n, err)
	}
	return nil
}

// Restored returns, for incarnation n, each process that has restored
// and the snapshot it restored from.
func (c *Coord) Restored(ctx context.Context, n uint64) (map[spec.ProcID]spec.SnapID, error) {
	ctx, cancel := c.op(ctx)
	defer cancel()
	r, err := c.cli.Get(ctx, c.restoredPrefix(n), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("coord: restored in incarnation %d: %w", n, err)
	}
	out := map[spec.ProcID]spec.SnapID{}
	for _, kv := range r.Kvs {
		var id uint64
		if _, err := fmt.Sscan(string(kv.Value), &id); err != nil {
			return nil, fmt.Errorf("coord: %s: %q is not a snapshot id", kv.Key, kv.Value)
		}
		out[spec.ProcID(strings.TrimPrefix(string(kv.Key), c.restoredPrefix(n)))] = spec.SnapID(id)
	}
	return out, nil
}
