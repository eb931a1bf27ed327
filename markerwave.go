package markerwave

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/spec"
)

// The vocabulary an embedder needs, under one import.
type (
	// App is the service's state machine: Capture, Restore, Send, Apply.
	App = core.App
	// Quantities is what an App moving a conserved quantity adds (Balance,
	// Amount), so the spec's Conservation is about it.
	Quantities = core.Quantities
	// ProcID names a process ("P1").
	ProcID = spec.ProcID
	// SnapID numbers a snapshot.
	SnapID = spec.SnapID
	// Topology is the processes and the FIFO channels between them
	// (NewTopology, Complete).
	Topology = spec.Topology
	// Channel is the FIFO channel From->To.
	Channel = spec.Channel
	// Invariant is a property of every global snapshot the service states.
	Invariant = spec.Invariant
	// AppSnapshot is a global snapshot as invariants see it: captured
	// states and in-flight payloads.
	AppSnapshot = spec.AppSnapshot
	// Snapshot is a complete, consistent global snapshot.
	Snapshot = snapshot.Global
	// Transport carries frames between nodes (memory or TCP).
	Transport = transport.Transport
	// InvariantError: a complete snapshot broke an invariant; it holds
	// the snapshot.
	InvariantError = runtime.InvariantError
	// AbortedError: a node aborted the snapshot (a peer is suspected).
	AbortedError = runtime.AbortedError
	// IncompleteError: the snapshot did not complete in time; it names
	// what is missing.
	IncompleteError = runtime.IncompleteError
	// DetectorConfig configures the failure detector (heartbeats and the
	// silence after which a peer is suspected); its Bound is the
	// detection time.
	DetectorConfig = runtime.DetectorConfig
)

// Complete is the topology of n processes P1..Pn with a channel each way
// between every two. n must be at least 1: for n < 1 it is a topology of
// no processes, which Start refuses.
func Complete(n int) *Topology {
	if n < 1 {
		return &Topology{}
	}
	return spec.Complete(n)
}

// NewTopology is the topology of procs and chans, checked as the spec
// assumes (spec.NewTopology): ids well formed and distinct, channels
// between two distinct known processes, none twice, the graph strongly
// connected. The error names what is wrong.
func NewTopology(procs []ProcID, chans []Channel) (*Topology, error) {
	return spec.NewTopology(procs, chans)
}

// checkTopology is t rebuilt by NewTopology: a Topology written as a
// literal is indexed, one with duplicate processes or unknown channel
// ends is refused, naming what is wrong, before any node starts.
func checkTopology(t *Topology) (*Topology, error) {
	if t == nil {
		return nil, errors.New("markerwave: Config.Topology is required")
	}
	u, err := spec.NewTopology(t.Procs, t.Chans)
	if err != nil {
		return nil, fmt.Errorf("markerwave: Config.Topology: %w", err)
	}
	return u, nil
}

// Config is what Start needs: the topology, the application, and
// optionally a transport, invariants and a store.
type Config struct {
	// Topology is required.
	Topology *Topology
	// NewApp returns process p's application in its initial state
	// (required).
	NewApp func(p ProcID) (App, error)
	// Transport carries the nodes' frames; nil is an in-memory transport.
	Transport Transport
	// Invariants are checked on every snapshot TakeSnapshot collects.
	Invariants []Invariant
	// Store, if set, is a directory where every complete snapshot is
	// saved (the global snapshot and each node's part), and Recover
	// finds the latest.
	Store string
	// From, if set, restores every node from this snapshot (Recover's).
	From *Snapshot
	// Detector, if its Interval is set, runs a failure detector on every
	// node: a snapshot waiting for a suspected peer is aborted (an
	// *AbortedError naming the peer) instead of waiting for ctx to end.
	Detector DetectorConfig
}

// Cluster is a running set of nodes, one per process, in this process.
type Cluster struct {
	rt    *runtime.Cluster
	store *store.Store
}

// Start checks cfg, opens its store and starts one node per process.
func Start(cfg Config) (*Cluster, error) { return start(cfg, nil) }

// start is Start, each node's suspicions and aborts reported to onFault
// (a supervised cluster's).
func start(cfg Config, onFault func(runtime.Fault)) (*Cluster, error) {
	top, err := checkTopology(cfg.Topology)
	if err != nil {
		return nil, err
	}
	cfg.Topology = top
	if cfg.NewApp == nil {
		return nil, errors.New("markerwave: Config.NewApp is required")
	}
	c := &Cluster{}
	after, err := c.openStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	tr := cfg.Transport
	if tr == nil {
		tr = transport.NewMemory(cfg.Topology, transport.MemoryConfig{})
	}
	rt, err := runtime.NewCluster(runtime.ClusterConfig{
		Topology: cfg.Topology, NewApp: cfg.NewApp, Transport: tr,
		Invariants: cfg.Invariants, From: cfg.From, After: after, Detector: cfg.Detector, OnFault: onFault,
	})
	if err != nil {
		return nil, fmt.Errorf("markerwave: %w", err)
	}
	c.rt = rt
	return c, nil
}

// openStore opens the store in dir, if any, and returns the largest
// snapshot id it has used: new snapshots are numbered after it, so a
// fresh start never collides with a saved snapshot.
func (c *Cluster) openStore(dir string) (SnapID, error) {
	if dir == "" {
		return 0, nil
	}
	st, err := store.Open(dir)
	if err != nil {
		return 0, fmt.Errorf("markerwave: store: %w", err)
	}
	used, err := st.Used()
	if err != nil {
		return 0, fmt.Errorf("markerwave: store: %w", err)
	}
	c.store = st
	var last SnapID
	for _, id := range used {
		last = max(last, id)
	}
	return last, nil
}

// Send has process from send payload to process to: from's App.Send runs
// (and may refuse), then the message travels; to's App.Apply runs when it
// arrives.
func (c *Cluster) Send(from, to ProcID, payload []byte) error { return c.rt.Send(from, to, payload) }

// TakeSnapshot starts a snapshot at initiator, without stopping the
// service, and waits (until ctx ends) for it. It returns the complete
// snapshot, saved to the store if there is one, once every invariant
// holds on it. Otherwise: an *InvariantError holding the snapshot that
// breaks one (the snapshot is returned too, and not saved), an
// *AbortedError if a node aborted it, an *IncompleteError if ctx ended
// first.
func (c *Cluster) TakeSnapshot(ctx context.Context, initiator ProcID) (Snapshot, error) {
	id, err := c.rt.Snapshot(initiator)
	if err != nil {
		return Snapshot{}, err
	}
	g, err := c.rt.Collect(ctx, id)
	if err != nil {
		return g, err
	}
	return g, c.save(g)
}

// save writes g's parts, then g itself, so that the store's catalog sees
// it complete at every node.
func (c *Cluster) save(g Snapshot) error {
	if c.store == nil {
		return nil
	}
	for _, p := range g.Topology.Procs {
		ls, _ := g.Local(p)
		if _, err := c.store.SavePart(snapshot.PartOf(ls, p == g.Initiator)); err != nil {
			return fmt.Errorf("markerwave: save snapshot %d: %w", g.ID, err)
		}
	}
	if _, err := c.store.Save(g); err != nil {
		return fmt.Errorf("markerwave: save snapshot %d: %w", g.ID, err)
	}
	return nil
}

// Quiesce waits until every message sent has been delivered, or ctx
// ends (a snapshot then records every channel empty).
func (c *Cluster) Quiesce(ctx context.Context) error { return c.rt.Quiesce(ctx) }

// Crash stops p's node at once, as kill -9 would stop its process:
// nothing more is sent or received, and peers are not told. It is for
// tests and demos of failure handling.
func (c *Cluster) Crash(p ProcID) error {
	n := c.rt.Node(p)
	if n == nil {
		return fmt.Errorf("markerwave: crash: unknown process %q", string(p))
	}
	n.Crash()
	return nil
}

// Stop delivers what is in flight (until ctx ends) and stops every node.
func (c *Cluster) Stop(ctx context.Context) error { return c.rt.Stop(ctx) }

// ErrUnrecoverable is wrapped by Recover when the store holds no
// snapshot complete at every process but does hold a damaged one or one
// of another topology: starting fresh would drop what it holds.
var ErrUnrecoverable = errors.New("no snapshot to recover from, and the store holds one it cannot use")

// Recover returns the latest snapshot in the store dir that is complete
// at every process of t, for Config.From (tla/ChandyLamportFaults.tla's
// Recover, lines 188-193: the latest complete snapshot, else the initial
// state). It is nil, with no error, if the store holds none and nothing
// else than snapshots that never completed or were aborted: start fresh,
// as the spec's Recover does. The store's directory must exist and be a
// store (nothing is created). If no snapshot is usable and one is damaged
// or of another topology, the error wraps ErrUnrecoverable and says why
// each was passed over: start fresh only if that is meant (From nil).
func Recover(dir string, t *Topology) (*Snapshot, error) {
	top, err := checkTopology(t)
	if err != nil {
		return nil, fmt.Errorf("markerwave: recover: %w", err)
	}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return nil, fmt.Errorf("markerwave: recover: %w", err)
	}
	r, err := st.LatestComplete(top)
	if err != nil {
		return nil, fmt.Errorf("markerwave: recover: %w", err)
	}
	if r.From == nil {
		return nil, unusable(dir, r.Passed)
	}
	g, err := st.Load(r.From.ID)
	if err != nil {
		return nil, fmt.Errorf("markerwave: recover snapshot %d: %w", r.From.ID, err)
	}
	return &g, nil
}

// unusable is Recover's error when no snapshot is usable: nil if each
// passed over only never completed or was aborted (the spec recovers to
// the initial state), else ErrUnrecoverable with every reason.
func unusable(dir string, passed []store.Passed) error {
	damaged := false
	var why []string
	for _, p := range passed {
		damaged = damaged || p.Entry.Problem != "" || len(p.Entry.Damaged) > 0
		why = append(why, fmt.Sprintf("snapshot %d: %s", p.Entry.ID, strings.Join(p.Why, "; ")))
	}
	if !damaged {
		return nil
	}
	return fmt.Errorf("markerwave: recover from %s: %w:\n  %s", dir, ErrUnrecoverable, strings.Join(why, "\n  "))
}
