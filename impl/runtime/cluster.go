package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// ClusterConfig configures a Cluster.
type ClusterConfig struct {
	Topology *spec.Topology
	// NewApp returns a fresh application for process p.
	NewApp func(p spec.ProcID) (core.App, error)
	// Transport carries every node's frames, unless NodeTransports names
	// one for the node (e.g. one TCP transport per node, as separate
	// processes would have). The cluster closes them all on Stop.
	Transport      transport.Transport
	NodeTransports map[spec.ProcID]transport.Transport
	// Traces, if set, holds one sink per process (see OpenTraces).
	Traces map[spec.ProcID]*trace.Sink
	// From, if set, restores every node from this snapshot; new snapshot
	// ids then start after From.ID.
	From *snapshot.Global
	// After, if set, makes new snapshot ids start after it (and after
	// From.ID): a store's snapshots keep their ids across runs.
	After spec.SnapID
	// OnError, if set, is called with every node error (from node
	// goroutines, possibly concurrently).
	OnError func(error)
	// Detector configures every node's failure detector (off by default;
	// see DetectorConfig).
	Detector DetectorConfig
	// OnFault, if set, is called with every node's suspicions and aborts
	// (from node goroutines, possibly concurrently).
	OnFault func(Fault)
	// Invariants are the application's properties of a global snapshot,
	// checked on every snapshot Collect assembles (see Collector.Collect).
	Invariants []spec.Invariant
}

// Cluster runs one Node per process of a topology in this process.
type Cluster struct {
	topo  *spec.Topology
	nodes map[spec.ProcID]*Node
	trs   []transport.Transport
	col   *Collector
	stats *Stats

	nextSnap atomic.Uint64
	mu       sync.Mutex
	snaps    map[spec.SnapID]spec.ProcID // snapshot -> initiator
	stopped  bool
	report   *StopReport
}

// NewCluster builds and starts the nodes. On error, whatever was started
// is stopped and the transports are closed.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.Topology == nil {
		return nil, fmt.Errorf("runtime: cluster config has no topology")
	}
	if cfg.NewApp == nil {
		return nil, fmt.Errorf("runtime: cluster config has no NewApp")
	}
	c := &Cluster{
		topo: cfg.Topology, nodes: map[spec.ProcID]*Node{}, col: NewCollector(cfg.Topology, cfg.Invariants...),
		stats: &Stats{}, snaps: map[spec.SnapID]spec.ProcID{},
	}
	c.trs = distinctTransports(cfg)
	if cfg.From != nil {
		if err := cfg.From.Validate(); err != nil {
			c.closeTransports()
			return nil, fmt.Errorf("runtime: restore: %w", err)
		}
		c.nextSnap.Store(uint64(cfg.From.ID))
	}
	c.nextSnap.Store(max(c.nextSnap.Load(), uint64(cfg.After)))
	for _, p := range cfg.Topology.Procs {
		n, err := c.startNode(cfg, p)
		if err != nil {
			c.abort()
			return nil, err
		}
		c.nodes[p] = n
	}
	return c, nil
}

// distinctTransports are cfg's transports, each once: the shared one,
// then the per-node ones in topology order.
func distinctTransports(cfg ClusterConfig) []transport.Transport {
	var trs []transport.Transport
	seen := map[transport.Transport]bool{}
	for _, tr := range append([]transport.Transport{cfg.Transport}, nodeTransports(cfg)...) {
		if tr != nil && !seen[tr] {
			seen[tr] = true
			trs = append(trs, tr)
		}
	}
	return trs
}

// nodeTransports are cfg.NodeTransports in topology order (nil where a
// node has none of its own).
func nodeTransports(cfg ClusterConfig) []transport.Transport {
	trs := make([]transport.Transport, len(cfg.Topology.Procs))
	for i, p := range cfg.Topology.Procs {
		trs[i] = cfg.NodeTransports[p]
	}
	return trs
}

// startNode builds and starts p's node on its own transport, or the
// shared one, with a new application.
func (c *Cluster) startNode(cfg ClusterConfig, p spec.ProcID) (*Node, error) {
	tr := cfg.NodeTransports[p]
	if tr == nil {
		tr = cfg.Transport
	}
	if tr == nil {
		return nil, fmt.Errorf("runtime: no transport for %s", string(p))
	}
	a, err := cfg.NewApp(p)
	if err != nil {
		return nil, fmt.Errorf("runtime: application for %s: %w", string(p), err)
	}
	return NewNode(NodeConfig{
		Topology: cfg.Topology, Self: p, App: a, Transport: tr,
		Collector: c.col, Trace: cfg.Traces[p], From: cfg.From,
		OnError: cfg.OnError, Stats: c.stats,
		Detector: cfg.Detector, OnFault: cfg.OnFault,
	})
}

func (c *Cluster) abort() {
	for _, n := range c.nodes {
		n.Stop()
	}
	c.closeTransports()
}

func (c *Cluster) closeTransports() []error {
	errs := make([]error, len(c.trs))
	var wg sync.WaitGroup
	for i, tr := range c.trs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = tr.Close() }()
	}
	wg.Wait()
	return errs
}

// Topology is the cluster's topology.
func (c *Cluster) Topology() *spec.Topology { return c.topo }

// Node returns p's node, or nil.
func (c *Cluster) Node(p spec.ProcID) *Node { return c.nodes[p] }

// Collector is the cluster's collector.
func (c *Cluster) Collector() *Collector { return c.col }

// Stats are the cluster's frame counters.
func (c *Cluster) Stats() *Stats { return c.stats }

// Send sends an application message from one process to another (see
// Node.SendApp).
func (c *Cluster) Send(from, to spec.ProcID, payload []byte) error {
	n := c.nodes[from]
	if n == nil {
		return fmt.Errorf("runtime: send from unknown process %q", string(from))
	}
	return n.SendApp(to, payload)
}

// Snapshot starts a new snapshot at initiator with a fresh id and returns
// the id. Snapshots started concurrently get distinct ids.
func (c *Cluster) Snapshot(initiator spec.ProcID) (spec.SnapID, error) {
	n := c.nodes[initiator]
	if n == nil {
		return 0, fmt.Errorf("runtime: snapshot at unknown process %q", string(initiator))
	}
	s := spec.SnapID(c.nextSnap.Add(1))
	c.mu.Lock()
	c.snaps[s] = initiator
	c.mu.Unlock()
	if err := n.Initiate(s); err != nil {
		return 0, err
	}
	return s, nil
}

// Collect waits for snapshot s (see Collector.Collect).
func (c *Cluster) Collect(ctx context.Context, s spec.SnapID) (snapshot.Global, error) {
	return c.col.Collect(ctx, s)
}

// Initiators maps every snapshot started through Snapshot to its
// initiator, for a trace header.
func (c *Cluster) Initiators() map[spec.SnapID]spec.ProcID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[spec.SnapID]spec.ProcID, len(c.snaps))
	for s, p := range c.snaps {
		out[s] = p
	}
	return out
}

// Quiesce waits until every frame sent has been delivered to its node or
// ctx ends, polling the counters. Frames held on a failed channel (see
// ChannelError) are never delivered: Quiesce then fails at once, naming
// the channels.
func (c *Cluster) Quiesce(ctx context.Context) error {
	for c.stats.InFlight() > 0 {
		if err := c.failedErr(); err != nil {
			return fmt.Errorf("runtime: quiesce: %d frames still in flight: %w", c.stats.InFlight(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runtime: quiesce: %d frames still in flight: %w", c.stats.InFlight(), ctx.Err())
		case <-time.After(200 * time.Microsecond):
		}
	}
	return nil
}

// StopTheWorld is the baseline Chandy-Lamport avoids: hold every node's
// application sends, wait until no application message is in flight,
// record every node's state (channels are then empty), and resume. Senders
// block meanwhile. It returns the recorded snapshot with id s.
func (c *Cluster) StopTheWorld(ctx context.Context, s spec.SnapID) (g snapshot.Global, err error) {
	g = snapshot.Global{ID: s, Topology: c.topo}
	paused, err := c.pauseAll()
	defer func() {
		if e := resumeAll(paused); e != nil && err == nil {
			err = e
		}
	}()
	if err != nil {
		return g, err
	}
	if err := c.awaitAppDrained(ctx); err != nil {
		return g, err
	}
	for _, p := range c.topo.Procs {
		ns, err := c.nodes[p].capture()
		if err != nil {
			return g, err
		}
		g.Nodes = append(g.Nodes, ns)
	}
	g.Chans = drainedChans(c.topo, g.Nodes)
	return g, nil
}

// pauseAll holds every node's application sends, in topology order, and
// returns the nodes paused: all of them, or those before the first that
// could not be (its error).
func (c *Cluster) pauseAll() ([]*Node, error) {
	paused := make([]*Node, 0, len(c.nodes))
	for _, p := range c.topo.Procs {
		n := c.nodes[p]
		if err := n.pause(); err != nil {
			return paused, err
		}
		paused = append(paused, n)
	}
	return paused, nil
}

// resumeAll resumes the paused nodes, returning the first error.
func resumeAll(paused []*Node) error {
	var first error
	for _, n := range paused {
		if err := n.resume(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// awaitAppDrained waits, polling the counters, until every application
// message sent has been delivered, a channel fails, or ctx ends.
func (c *Cluster) awaitAppDrained(ctx context.Context) error {
	for c.stats.AppSent.Load() != c.stats.AppDelivered.Load() {
		if err := c.failedErr(); err != nil {
			return fmt.Errorf("runtime: stop-the-world: channels cannot drain: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runtime: stop-the-world: channels did not drain: %w", ctx.Err())
		default:
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

// drainedChans are the states of top's channels when every one is
// empty: each receiver expects what its sender sends next.
func drainedChans(top *spec.Topology, nodes []snapshot.NodeState) []snapshot.ChanState {
	next := map[spec.Channel]uint64{}
	for _, ns := range nodes {
		for _, cs := range ns.NextSend {
			next[cs.Chan] = cs.Next
		}
	}
	var chans []snapshot.ChanState
	for _, ch := range top.Chans {
		chans = append(chans, snapshot.ChanState{Chan: ch, NextRecv: next[ch]})
	}
	return chans
}

// Faults lists every node's suspicions, withdrawals and aborts, node by
// node in topology order.
func (c *Cluster) Faults() []Fault {
	var out []Fault
	for _, p := range c.topo.Procs {
		out = append(out, c.nodes[p].Faults()...)
	}
	return out
}

// algorithmFrames drops the runtime's own control frames (heartbeats,
// done) from envs: losing one loses nothing of the application's or the
// algorithm's.
func algorithmFrames(envs []wire.Envelope) []wire.Envelope {
	out := envs[:0:0]
	for _, e := range envs {
		if !e.Frame.Kind.Control() {
			out = append(out, e)
		}
	}
	return out
}

// FailedChannels lists the channels of every node stopped because the
// core rejected a frame, in topology order.
func (c *Cluster) FailedChannels() []*ChannelError {
	var out []*ChannelError
	for _, p := range c.topo.Procs {
		out = append(out, c.nodes[p].FailedChannels()...)
	}
	return out
}

// failedErr is nil, or an error naming the failed channels.
func (c *Cluster) failedErr() error {
	fs := c.FailedChannels()
	if len(fs) == 0 {
		return nil
	}
	errs := make([]error, len(fs))
	for i, f := range fs {
		errs[i] = f
	}
	return errors.Join(errs...)
}

// StopReport is what Stop found: frames that were accepted but never
// delivered, frames the transports refused, failed channels and node
// errors. It is an error when any of those lists is non-empty.
type StopReport struct {
	// Undelivered reached a transport but no node took them, including
	// the frames held on failed channels.
	Undelivered []wire.Envelope
	// Failed are the channels stopped by a rejected frame (their frames
	// from that one on are in Undelivered).
	Failed     []*ChannelError
	Unacked    []wire.Envelope // sent on TCP, receipt unknown
	Unsent     []wire.Envelope // a transport refused them
	NodeErrors []error         // the first errors of each node
	Errors     int             // total node errors
	Hung       []spec.ProcID   // nodes that did not stop in time
	Other      []error         // other transport close errors
}

func (r *StopReport) Error() string {
	parts := framesNote(nil, r.Undelivered, "undelivered")
	for _, f := range r.Failed {
		parts = append(parts, f.Error())
	}
	parts = framesNote(parts, r.Unacked, "unacknowledged")
	parts = framesNote(parts, r.Unsent, "refused by the transport")
	if r.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d node errors, first: %v", r.Errors, r.NodeErrors[0]))
	}
	if len(r.Hung) > 0 {
		parts = append(parts, fmt.Sprintf("nodes did not stop: %v", r.Hung))
	}
	for _, e := range r.Other {
		parts = append(parts, e.Error())
	}
	return "runtime: stopped with " + strings.Join(parts, "; ")
}

// framesNote appends to parts, if there are any envs, how many frames
// are what, by channel.
func framesNote(parts []string, envs []wire.Envelope, what string) []string {
	if len(envs) == 0 {
		return parts
	}
	return append(parts, fmt.Sprintf("%d frames %s (%s)", len(envs), what, wire.CountByChan(envs)))
}

func (r *StopReport) empty() bool {
	return len(r.Undelivered)+len(r.Failed)+len(r.Unacked)+len(r.Unsent)+r.Errors+len(r.Hung)+len(r.Other) == 0
}

// Stop first waits (until ctx ends) for frames in flight to be delivered,
// then stops every node and closes the transports. Each wait is bounded:
// by ctx, and the node stops by one second more. It returns nil or a
// *StopReport listing the frames that were not delivered and the node
// errors. Later calls return the first call's result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		if c.report == nil {
			return nil
		}
		return c.report
	}
	c.stopped = true
	_ = c.Quiesce(ctx)
	rep := &StopReport{Hung: c.stopNodes()}
	for _, err := range c.closeTransports() {
		rep.addCloseError(err)
	}
	for _, p := range c.topo.Procs {
		rep.addNode(c.nodes[p])
	}
	if rep.empty() {
		return nil
	}
	c.report = rep
	return rep
}

// stopNodes stops every node at once and returns those that did not
// stop within a second, in topology order.
func (c *Cluster) stopNodes() []spec.ProcID {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.Stop() }()
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-time.After(time.Second):
	}
	var hung []spec.ProcID
	for _, p := range c.topo.Procs {
		select {
		case <-c.nodes[p].Done():
		default:
			hung = append(hung, p)
		}
	}
	return hung
}

// addCloseError adds what a transport's Close returned: the algorithm's
// frames it did not deliver or have acknowledged, or another error.
func (r *StopReport) addCloseError(err error) {
	var se *transport.ShutdownError
	switch {
	case err == nil:
	case errors.As(err, &se):
		r.Undelivered = append(r.Undelivered, algorithmFrames(se.Undelivered)...)
		r.Unacked = append(r.Unacked, algorithmFrames(se.Unacked)...)
	default:
		r.Other = append(r.Other, err)
	}
}

// addNode adds what stopped node n holds: frames held on its failed
// channels, those channels, frames its transport refused, its errors.
func (r *StopReport) addNode(n *Node) {
	r.Undelivered = append(r.Undelivered, n.Held()...)
	r.Failed = append(r.Failed, n.FailedChannels()...)
	r.Unsent = append(r.Unsent, n.Unsent()...)
	errs, k := n.Errors()
	r.NodeErrors = append(r.NodeErrors, errs...)
	r.Errors += k
}
