package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// PartStore persists local parts and assembled snapshots (impl/store's
// Store is one).
type PartStore interface {
	SavePart(snapshot.Part) (string, error)
	LoadParts(t *spec.Topology, id spec.SnapID) ([]snapshot.Part, []spec.ProcID, error)
	Save(snapshot.Global) (string, error)
}

// CatalogWriter is a PartStore that keeps a catalog of the snapshots the
// cluster can recover from (impl/store's catalog file, the operator
// mode's): persist rewrites it after each complete snapshot.
type CatalogWriter interface {
	WriteCatalog(t *spec.Topology) error
}

// ProcessOptions are RunProcess's inputs besides the config.
type ProcessOptions struct {
	Store PartStore
	// From, if set, restores the node from this snapshot. New snapshot ids
	// are picked as on a fresh start (see RunProcess), so they cannot be
	// From.ID or any other id of the store.
	From *snapshot.Global
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Listener, if set, is used instead of listening on the configured
	// address (for tests).
	Listener net.Listener
	// ControlListener, if set, serves the control endpoint instead of the
	// configured control address (for tests).
	ControlListener net.Listener
	// MetricsListener, if set, serves the metrics endpoint instead of the
	// configured metrics address (for tests).
	MetricsListener net.Listener
	// RecoveryStart, if set, is when the recovery that restores this node
	// (From) began, e.g. when the failure was detected; the metric
	// markerwave_last_recovery_seconds counts from it (default: from the
	// process start).
	RecoveryStart time.Time
	// Restarter, if set, says who restarts the cluster after this node
	// stops on its own for a crashed peer (orphaned), e.g. "its
	// supervisor"; by default the operator, with markerwave recover.
	Restarter string
}

// RunProcess runs node self of a multi-process cluster until ctx ends:
// a TCP transport serving only self (listener for its incoming channels,
// dialers for its outgoing ones), the workload and snapshot schedule of
// the config, each completed local part persisted to the store, and a
// global snapshot assembled and saved by whichever node completes the
// last part. On return the node and transport are stopped; frames not
// delivered are reported in the error.
//
// Snapshot ids. Every start of an initiating node draws a random run tag
// (one the store holds no id of: 31 bits on a fresh start; on a restore,
// one of the 2^16 tags just above the restored snapshot's, since restored
// nodes retire every smaller id) and numbers its snapshots
// tag<<SnapSeqBits | (k*N + idx + 1) for its k-th snapshot, idx its index
// among the N processes. The markers carry the id, so the other nodes
// need no coordination: every part of snapshot X comes from the run that
// created X, and parts of different runs (or of a run and a restored
// one) sharing a snapshot directory are never assembled together. The
// store never overwrites a part or snapshot with a different one either.
//
// A node that crashes loses its channel state: its peers' transports
// report ErrPeerRestarted and stop those channels. Recovery means
// restarting every node from one stored snapshot (ProcessOptions.From).
//
// Failures (FileConfig.Failures). The node runs a failure detector
// (DetectorConfig): a peer silent for longer than the timeout is
// suspected and named in the log within timeout + one heartbeat; the
// snapshots waiting for it are aborted, transfers to it are refused (not
// debited) and no snapshot is started while it is suspected.
//
// Stopping. When ctx ends the node stops its workload and schedule,
// sends no more transfers (Node.Finish), and keeps delivering until every
// live in-neighbour has finished too and no snapshot is under way here,
// for at most the drain timeout; then it stops. It returns nil after a
// clean stop, and otherwise a *StopSummary naming the dead peers, the
// aborted and unfinished snapshots, the frames lost and every other
// problem.
func RunProcess(ctx context.Context, cfg *FileConfig, self spec.ProcID, opt ProcessOptions) (err error) {
	p, err := newProcess(cfg, self, opt)
	if err != nil {
		return err
	}
	// Each step that starts something defers its stop; they run in
	// reverse, and the first deferred gathers what went wrong.
	defer func() { err = p.result(err) }()
	ctx, p.stopSelf = context.WithCancel(ctx) // before the node: orphaned may call it
	defer p.stopSelf()
	if err := p.openTransport(); err != nil {
		return err
	}
	defer p.closeTransport()
	if err := p.openTrace(); err != nil {
		return err
	}
	defer p.closeTrace()
	p.startWriter()
	defer p.stopWriter()
	if err := p.startNode(); err != nil {
		return err
	}
	defer p.stopNode()
	if err := p.startMetrics(); err != nil {
		return err
	}
	defer p.stopMetrics()
	tag, err := p.runTag()
	if err != nil {
		return err
	}
	if err := p.startControl(tag); err != nil {
		return err
	}
	defer p.stopControl()
	p.startWorkload(ctx)
	p.startSchedule(ctx, tag)
	p.watchAborts(ctx)
	<-ctx.Done()
	p.stopControl() // no snapshot on demand while draining
	// The schedule ends first (no snapshot starts after the done frames),
	// then Finish, before the workload ends: a send of it waiting for
	// room on a channel whose receiver stopped reading (a frozen process
	// not yet suspected) is refused now instead of waiting for the
	// timeout, or for ever where the detector cannot suspect it.
	p.scheduling.Wait()
	finished := p.finish()
	p.workers.Wait()
	if finished {
		p.drain()
	}
	return nil
}

// process is one node of a multi-process cluster while RunProcess runs
// it.
type process struct {
	cfg  *FileConfig
	t    *spec.Topology
	self spec.ProcID
	idx  int // self's index among the processes
	opt  ProcessOptions

	outMu sync.Mutex
	out   io.Writer

	tr         *transport.TCP
	sink       *trace.Sink
	node       *Node
	hints      atomic.Pointer[Node] // node, once started, for the transport's callbacks
	jobs       chan func()          // the writer's store work: parts to persist, aborts to record
	writerDone chan struct{}
	workers    sync.WaitGroup // the workload and the abort watch
	scheduling sync.WaitGroup // the snapshot schedule

	restarted atomic.Int64 // channels stopped because a peer restarted
	nodeErrs  atomic.Int64 // errors the node reported
	refused   atomic.Int64 // transfers refused: the receiver was suspected
	held      heldBack     // transfers not made: the receiver never heard from
	final     spec.LocalState
	problems  []string // what went wrong while stopping

	faultMu  sync.Mutex
	suspects map[spec.ProcID]Fault           // suspected now, by peer
	aborted  []spec.AbortVerdict             // snapshots aborted here (by the core, or their parts missing)
	orphan   string                          // why the run stopped on its own (orphaned), "" if not
	waiting  map[spec.SnapID]bool            // parts saved, snapshot not yet assembled
	active   []spec.SnapID                   // snapshots still under way when the drain ended
	broken   []string                        // snapshots not saved: they break invariants
	lost     map[spec.ProcID][]wire.Envelope // algorithm frames to each peer never acknowledged

	stopSelf   context.CancelFunc // ends the run early: a peer crashed (orphaned)
	snaps      atomic.Uint64      // snapshots this run initiated (nextSnapID)
	control    *endpoint          // the control endpoint, nil if none
	tls        *transport.TLS     // the node's mutual TLS, nil for plain TCP
	metrics    *Metrics           // always kept; served if the config says where
	metricsSrv *endpoint          // the metrics endpoint, nil if none
	began      time.Time          // when RunProcess began
	refusals   map[string]int     // peers refused by mutual TLS, by host, certificate and reason (OnError calls are serialized)
}

func newProcess(cfg *FileConfig, self spec.ProcID, opt ProcessOptions) (*process, error) {
	t := cfg.Topology
	idx := t.ProcIndex(self)
	if idx < 0 {
		return nil, fmt.Errorf("config: --id %s is not a process of the topology (%s)", string(self), procList(t.Procs))
	}
	if opt.Store == nil {
		return nil, fmt.Errorf("runtime: RunProcess needs a store")
	}
	out := opt.Out
	if out == nil {
		out = io.Discard
	}
	tls, err := cfg.TLSFor(self)
	if err != nil {
		return nil, err
	}
	return &process{cfg: cfg, t: t, self: self, idx: idx, opt: opt, out: out, tls: tls, metrics: newMetrics(self), began: time.Now(),
		suspects: map[spec.ProcID]Fault{}, waiting: map[spec.SnapID]bool{}}, nil
}

// say writes one progress line, prefixed with the node's id.
func (p *process) say(format string, a ...any) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	fmt.Fprintf(p.out, "%s: "+format+"\n", append([]any{string(p.self)}, a...)...)
}

// sayLines writes text as progress lines, each prefixed with the node's
// id (an *InvariantError spans several).
func (p *process) sayLines(text string) {
	for _, line := range strings.Split(text, "\n") {
		p.say("%s", line)
	}
}

// openTransport starts a TCP transport serving only self: a listener for
// its incoming channels, dialers for its outgoing ones.
func (p *process) openTransport() error {
	addrs := map[spec.ProcID]string{}
	for q, n := range p.cfg.Nodes {
		addrs[q] = n.Listen
	}
	tcfg := transport.TCPConfig{Addrs: addrs, Local: []spec.ProcID{p.self}, OnError: p.transportError, TLS: p.tls}
	// The drain has waited for the peers already; frames to a dead one
	// are never acknowledged, so the transport's wait is bounded by the
	// drain timeout too.
	tcfg.DrainTimeout = min(2*time.Second, p.cfg.DrainTimeout())
	if p.opt.From != nil {
		tcfg.Restored = p.opt.From.ID // peers restored from another snapshot are refused
	}
	if p.opt.Listener != nil {
		tcfg.Listeners = map[spec.ProcID]net.Listener{p.self: p.opt.Listener}
	}
	tr, err := transport.NewTCP(p.t, tcfg)
	p.tr = tr
	return err
}

// transportError handles an error the transport reports. Dial errors
// are normal while peers start; a restarted peer is not. A refused dial
// to a peer heard from before is evidence that its process is gone: the
// detector need not wait for the timeout.
func (p *process) transportError(err error) {
	var ce *transport.ConnError
	var re *transport.TLSRefusedError
	switch {
	case errors.As(err, &re):
		p.refusedPeer(err, re)
	case errors.Is(err, transport.ErrPeerRestarted):
		p.restarted.Add(1)
		p.say("error: %v (restart every node from a snapshot: --restore ID)", err)
		p.stopOnItsOwn("a channel stopped: a peer restarted, or restored from another snapshot", "its channel cannot resume")
	case errors.As(err, &ce) && ce.Op == "dial" && ce.Chan.From == p.self && errors.Is(err, syscall.ECONNREFUSED):
		if n := p.hints.Load(); n != nil {
			n.Hint(ce.Chan.To, "its listener refuses connections")
		}
	}
}

// closeTransport closes the transport; algorithm frames it could not
// deliver are a problem, kept by receiver for the summary (the runtime's
// own heartbeats and done frames are not).
func (p *process) closeTransport() {
	err := p.tr.Close()
	var se *transport.ShutdownError
	if errors.As(err, &se) {
		lost := algorithmFrames(append(se.Undelivered, se.Unacked...))
		if len(lost) > 0 {
			p.lost = map[spec.ProcID][]wire.Envelope{}
		}
		for _, e := range lost {
			p.lost[e.Chan.To] = append(p.lost[e.Chan.To], e)
		}
	} else if err != nil {
		p.problems = append(p.problems, err.Error())
	}
}

// openTrace opens self's trace file if the config has a trace_dir.
func (p *process) openTrace() (err error) {
	if p.cfg.TraceDir != "" {
		h := p.cfg.Header()
		if p.opt.From != nil {
			h.RestoredFrom = p.opt.From.ID // a log of its own, chained to the run it was restored from
		}
		p.sink, err = OpenTrace(p.cfg.TraceDir, p.self, h)
		p.sink.FlushEach() // a node may be killed: its log must hold what it did
	}
	return err
}

func (p *process) closeTrace() {
	if err := p.sink.Close(); err != nil {
		p.problems = append(p.problems, err.Error())
	}
}

// startWriter runs the store work the node hands it, in order, off the
// node's goroutine: each completed local part persisted (the node that
// completes the last part of a snapshot assembles and saves it), each
// abort recorded.
func (p *process) startWriter() {
	p.jobs = make(chan func(), 256)
	p.writerDone = make(chan struct{})
	go func() {
		defer close(p.writerDone)
		for job := range p.jobs {
			job()
		}
	}()
}

// savePart is the writer's job for a completed part.
func (p *process) savePart(part snapshot.Part) {
	if err := p.persist(part); err != nil {
		p.metrics.failed.Inc()
		p.sayLines(fmt.Sprintf("error: snapshot %d: %v", part.Snap, err))
		p.notSaved(part.Snap, err)
	}
}

// notSaved keeps, for the summary, a snapshot not saved because it
// breaks invariants (err holds an *InvariantError).
func (p *process) notSaved(s spec.SnapID, err error) {
	var ie *InvariantError
	if !errors.As(err, &ie) {
		return
	}
	var names []string
	for _, e := range unjoin(ie.Err) {
		var one *spec.InvariantError
		if errors.As(e, &one) {
			names = append(names, one.Invariant)
		}
	}
	p.faultMu.Lock()
	defer p.faultMu.Unlock()
	p.broken = append(p.broken, fmt.Sprintf("snapshot %d not saved: it breaks %s", s, strings.Join(names, ", ")))
}

// unjoin lists the errors errors.Join joined in err (err alone if it
// joins none).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// stopWriter waits until every part the node completed is persisted
// and every abort recorded.
func (p *process) stopWriter() {
	close(p.jobs)
	<-p.writerDone
}

// persist saves part and, if every part of its snapshot is now in the
// store, assembles and saves the global snapshot.
func (p *process) persist(part snapshot.Part) error {
	st := p.opt.Store
	path, err := st.SavePart(part)
	if err != nil {
		return err
	}
	p.metrics.saved(part, path)
	ps, missing, err := st.LoadParts(p.t, part.Snap)
	if err != nil {
		return err
	}
	if p.abortedInStore(part.Snap) {
		return nil // a node aborted it: its parts are never assembled
	}
	if len(missing) > 0 {
		p.waitFor(part.Snap, missing)
		return nil
	}
	g, err := snapshot.Assemble(p.t, part.Snap, ps)
	if err != nil {
		return err
	}
	holds, err := p.checkInvariants(g)
	if err != nil {
		return fmt.Errorf("not saved, so recover never picks it: %w", err)
	}
	path, err = st.Save(g)
	if err != nil {
		return err
	}
	p.metrics.assembled.Inc()
	p.say("snapshot %d complete: total %d (%d in flight), saved %s%s", g.ID, g.Total(), g.InFlight(), path, holds)
	if c, ok := st.(CatalogWriter); ok {
		return c.WriteCatalog(p.t)
	}
	return nil
}

// checkInvariants checks g against the invariants the config's
// application declares (app.InvariantsOf), as the Collector does
// (checkGlobal): an *InvariantError naming each one broken or panicking,
// with the state that shows it, or the note for the complete line
// ("; Conservation holds").
func (p *process) checkInvariants(g snapshot.Global) (string, error) {
	invs := app.InvariantsOf(p.cfg.App.Params, p.t)
	if len(invs) == 0 {
		return "", nil
	}
	if err := checkGlobal(g, invs); err != nil {
		return "", err
	}
	names := make([]string, len(invs))
	for i, inv := range invs {
		names[i] = inv.Name
	}
	if len(names) == 1 {
		return "; " + names[0] + " holds", nil
	}
	return "; " + strings.Join(names, ", ") + " hold", nil
}

// startNode starts self's node (restored from opt.From if set) on the
// transport.
func (p *process) startNode() error {
	a, err := p.cfg.NewApp(p.self)
	if err != nil {
		return err
	}
	p.node, err = NewNode(NodeConfig{
		Topology: p.t, Self: p.self, App: a, Transport: p.tr, Trace: p.sink, From: p.opt.From,
		OnPart: func(part snapshot.Part) {
			p.metrics.partDone(part.Snap, time.Now())
			p.jobs <- func() { p.savePart(part) }
		},
		OnRecorded: func(s spec.SnapID) { p.metrics.recorded(s, time.Now()) },
		OnError: func(err error) {
			p.nodeErrs.Add(1)
			p.say("error: %v", err)
		},
		Detector: p.cfg.Detector(), Incarnation: p.tr.Incarnation(), OnFault: p.onFault, OnUnheard: p.onUnheard,
	})
	if err != nil {
		return err
	}
	p.hints.Store(p.node)
	p.say("listening on %s; %d outgoing, %d incoming channels", p.tr.Addr(p.self), len(p.t.Out(p.self)), len(p.t.In(p.self)))
	if g := p.opt.From; g != nil {
		p.metrics.restored(g.ID, p.recoveryStart(), time.Now())
		p.say("restored from snapshot %d: a new incarnation; the recorded messages are delivered first", g.ID)
	}
	return nil
}

// recoveryStart is when the recovery restoring this node began.
func (p *process) recoveryStart() time.Time {
	if !p.opt.RecoveryStart.IsZero() {
		return p.opt.RecoveryStart
	}
	return p.began
}

// stopNode records the node's final state and stops it.
func (p *process) stopNode() {
	p.final, _ = p.node.State()
	p.node.Stop()
	if u := p.node.Unsent(); len(u) > 0 {
		p.problems = append(p.problems, fmt.Sprintf("%d frames refused by the transport", len(u)))
	}
}

// runTag picks the run tag of self's snapshot ids (see RunProcess), 0 if
// self initiates none (no scheduled snapshots, no control endpoint).
func (p *process) runTag() (uint64, error) {
	if !p.initiates() {
		return 0, nil
	}
	var from spec.SnapID
	if p.opt.From != nil {
		from = p.opt.From.ID
	}
	tag, err := runTag(p.opt.Store, from)
	if err != nil {
		return 0, err
	}
	p.say("snapshot ids of this run: %d + k*%d + %d", tag<<SnapSeqBits, len(p.t.Procs), p.idx+1)
	return tag, nil
}

// initiates reports whether self may initiate snapshots: scheduled ones,
// or asked for at its control endpoint.
func (p *process) initiates() bool {
	s := p.cfg.Snapshots
	scheduled := s != nil && s.Count > 0 && slices.Contains(s.Initiators, p.self)
	return scheduled || p.cfg.Nodes[p.self].Control != "" || p.opt.ControlListener != nil
}

// startWorkload sends the config's workload: random application messages
// to random neighbours, until done or ctx ends.
func (p *process) startWorkload(ctx context.Context) {
	w := p.cfg.Workload
	if w == nil || w.Transfers <= 0 {
		return
	}
	p.workers.Add(1)
	go func() {
		defer p.workers.Done()
		p.workload(ctx, w)
	}()
}

// workload sends w's transfers, pausing between them, until done, ctx
// ends, or the node stops.
func (p *process) workload(ctx context.Context, w *Workload) {
	rng := rand.New(rand.NewPCG(w.Seed, uint64(p.idx)))
	outs := p.t.Out(p.self)
	heard := map[spec.ProcID]bool{}
	for made := 0; made < w.Transfers; {
		to := outs[rng.IntN(len(outs))].To
		msg := p.cfg.App.Params.Message(rng, p.cfg.maxAmount())
		sent, ok := p.send(to, msg, heard)
		if !ok {
			return
		}
		pause := time.Duration(w.PauseMS) * time.Millisecond
		if sent {
			made++
		} else {
			pause = max(pause, heldRetry)
		}
		if !sleep(ctx, pause) {
			return
		}
	}
}

// heldRetry is the least pause after a transfer held back: with pause_ms
// 0 the workload would otherwise spin, a core's worth of attempts, while
// its peers start.
const heldRetry = time.Millisecond

// heldBack counts, receiver by receiver, the workload's transfers held
// back because the receiver had never been heard from.
type heldBack struct {
	mu sync.Mutex
	by map[spec.ProcID]int64
}

func (h *heldBack) add(q spec.ProcID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[spec.ProcID]int64{}
	}
	h.by[q]++
}

// neverHeard is how many transfers were held back for the receivers
// never heard from when the node stopped (the dead peers with no last
// heard time: the stop suspects every peer never heard from) and those
// receivers, sorted: a transfer held back for a peer heard later was only
// tried again once it had started, which is no failure.
func (h *heldBack) neverHeard(dead []Fault) (n int64, peers []spec.ProcID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range dead {
		if c := h.by[f.Peer]; c > 0 && f.Since.IsZero() {
			n += c
			peers = append(peers, f.Peer)
		}
	}
	return n, peers
}

// send makes one workload transfer to peer to, unless to has never been
// heard from (it may not exist yet: a node started alone sends its money
// to no one; the transfer is tried again later) or is suspected; neither
// is debited. heard caches the peers heard from. It reports whether the
// transfer counts as made (sent, refused for a suspected peer, or refused
// by the application) and whether the workload goes on.
func (p *process) send(to spec.ProcID, msg []byte, heard map[spec.ProcID]bool) (made, ok bool) {
	if !heard[to] {
		if heard[to] = p.node.EverHeard(to); !heard[to] {
			p.held.add(to)
			return false, true
		}
	}
	err := p.node.SendApp(to, msg)
	switch {
	case errors.Is(err, core.ErrSuspected):
		p.refused.Add(1) // not debited; the detector's log names the peer
	case err != nil && !errors.Is(err, core.ErrApp):
		return false, false
	}
	return true, true
}

// startSchedule initiates self's snapshots of the config's schedule,
// numbered from run tag tag, until done or ctx ends.
func (p *process) startSchedule(ctx context.Context, tag uint64) {
	s := p.cfg.Snapshots
	if s == nil || tag == 0 || !slices.Contains(s.Initiators, p.self) {
		return
	}
	p.scheduling.Add(1)
	go func() {
		defer p.scheduling.Done()
		p.schedule(ctx, s, tag)
	}()
}

// schedule initiates s's snapshots, one every s.EveryMS, numbered from
// run tag tag, until done, ctx ends, or the ids run out.
func (p *process) schedule(ctx context.Context, s *Schedule, tag uint64) {
	for range s.Count {
		if !sleep(ctx, time.Duration(s.EveryMS)*time.Millisecond) {
			return
		}
		id, err := p.nextSnapID(tag)
		if err != nil {
			p.say("initiate: %v", err)
			return
		}
		if err := p.node.Initiate(id); err != nil {
			p.say("initiate %d: %v", id, err)
			continue
		}
		p.say("initiated snapshot %d", id)
	}
}

// nextSnapID is the id of the next snapshot self initiates in the run of
// tag, scheduled or asked for: unique across runs (tag) and initiators
// (idx), tag<<SnapSeqBits | (k*N + idx + 1) for its k-th.
func (p *process) nextSnapID(tag uint64) (spec.SnapID, error) {
	k := p.snaps.Add(1) - 1
	seq := k*uint64(len(p.t.Procs)) + uint64(p.idx) + 1
	if seq >= 1<<SnapSeqBits {
		return 0, fmt.Errorf("no snapshot ids left in this run (%d taken): restart the node", k)
	}
	return spec.SnapID(tag<<SnapSeqBits | seq), nil
}

// sleep waits d and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// result is RunProcess's error once everything is stopped: err if the
// process failed to start, otherwise nil after a clean stop or the
// *StopSummary of what went wrong while running and stopping.
func (p *process) result(err error) error {
	if err != nil {
		return err
	}
	p.say("stopped: balance %d, sent %d, received %d", p.final.Bal, p.final.Sent, p.final.Rcvd)
	sum := p.summary()
	if sum.empty() {
		return nil
	}
	return sum
}

// SnapSeqBits is the number of low bits of a multi-process snapshot id
// that number the snapshots of one run; the bits above are the run tag.
const SnapSeqBits = 20

const (
	// freshTags bounds the tags of a fresh start: [1, freshTags].
	freshTags = 1<<31 - 1
	// restoreWindow is how far above the restored snapshot's tag a
	// restored run's tag may lie: restored nodes retire every id up to
	// the snapshot's (core.Checkpoint.SnapFloor), so their ids must be
	// larger, and a small window leaves room for chains of restores.
	restoreWindow = 1 << 16
	// maxTag keeps ids below 2^53, exact as JSON numbers.
	maxTag = 1<<(53-SnapSeqBits) - 1
)

// idLister is implemented by stores that can list the ids they hold
// (impl/store's Used).
type idLister interface {
	Used() ([]spec.SnapID, error)
}

// runTag draws a random run tag that no id in st has: in [1, freshTags]
// on a fresh start, and just above from's tag when restoring from snapshot
// from (so that every new id is larger than from).
func runTag(st PartStore, from spec.SnapID) (uint64, error) {
	taken, err := takenTags(st)
	if err != nil {
		return 0, err
	}
	lo, n, err := tagRange(from)
	if err != nil {
		return 0, err
	}
	if !hasFreeTag(taken, lo, n) {
		return 0, fmt.Errorf("runtime: no free snapshot ids above %d: the store holds ids of all %d run tags", uint64(lo)<<SnapSeqBits, n)
	}
	for {
		if t := lo + rand.Uint64N(n); !taken[t] {
			return t, nil
		}
	}
}

// takenTags are the run tags of the ids st holds, if it can list them.
func takenTags(st PartStore) (map[uint64]bool, error) {
	taken := map[uint64]bool{}
	l, ok := st.(idLister)
	if !ok {
		return taken, nil
	}
	ids, err := l.Used()
	if err != nil {
		return nil, fmt.Errorf("runtime: pick snapshot ids: %w", err)
	}
	for _, id := range ids {
		taken[uint64(id)>>SnapSeqBits] = true
	}
	return taken, nil
}

// tagRange is the n run tags from lo a run may draw from: [1, freshTags]
// on a fresh start, the restoreWindow just above from's tag (at most up
// to maxTag) when restoring from snapshot from.
func tagRange(from spec.SnapID) (lo, n uint64, err error) {
	if from == 0 {
		return 1, freshTags, nil
	}
	lo = uint64(from)>>SnapSeqBits + 1
	if lo > maxTag {
		return 0, 0, fmt.Errorf("runtime: no snapshot ids left above the restored snapshot %d", from)
	}
	return lo, min(restoreWindow, maxTag-lo+1), nil
}

// hasFreeTag reports whether one of the n tags from lo is not taken.
func hasFreeTag(taken map[uint64]bool, lo, n uint64) bool {
	for t := lo; t < lo+n; t++ {
		if !taken[t] {
			return true
		}
	}
	return false
}
