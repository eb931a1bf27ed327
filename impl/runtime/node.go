package runtime

import (
	"errors"
	"fmt"
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

// ErrStopped is wrapped by the commands of a stopped node, which name it
// ("runtime: node stopped: P2").
var ErrStopped = errors.New("runtime: node stopped")

// stopped is ErrStopped naming n.
func (n *Node) stopped() error { return fmt.Errorf("%w: %s", ErrStopped, string(n.self)) }

// NodeConfig configures a Node.
type NodeConfig struct {
	Topology  *spec.Topology
	Self      spec.ProcID
	App       core.App
	Transport transport.Transport // must serve Self's inbox and outgoing channels
	// Collector, if set, receives the node's progress and completed parts.
	Collector *Collector
	// OnPart, if set, is called on the node goroutine with each completed
	// part (after the Collector); it must not block for long.
	OnPart func(snapshot.Part)
	// OnRecorded, if set, is called on the node goroutine when the node
	// records its state for a snapshot (it initiates, or a first marker
	// arrives); it must not block for long.
	OnRecorded func(spec.SnapID)
	// Trace, if set, receives every event; frames then carry vector
	// clocks. Without it the core runs with core.Config.NoClocks: frames
	// carry no clock and steps build none, which is cheaper.
	Trace *trace.Sink
	// From, if set, restores the node from this snapshot: its recorded
	// state, then its incoming channels' recorded messages delivered first,
	// in order, before anything from the transport.
	From *snapshot.Global
	// OnError, if set, is called with each error a step or a send met,
	// under the node's core lock (on the node goroutine, or on SendApp's
	// caller for a send), so it must not call the node; the node goes on. A frame the core rejects fails
	// its channel (see ChannelError): reported once, then held.
	OnError func(error)
	// Stats, if set, is where the node counts frames (shared by a cluster).
	Stats *Stats
	// Detector configures the failure detector (off if its Interval is
	// 0): see DetectorConfig.
	Detector DetectorConfig
	// Incarnation is this node's incarnation (e.g. its TCP transport's),
	// carried by its heartbeats so that peers can name it; 0 if none.
	Incarnation uint64
	// OnFault, if set, is called on the node goroutine with each
	// suspicion, withdrawal and abort (after the Collector hears of it);
	// it must not block for long.
	OnFault func(Fault)
	// OnUnheard, if set, is called on the node goroutine, once per peer,
	// when an in-neighbour never heard from has been silent since the
	// node started for the detection bound (Detector.Bound) while its
	// startup grace (Detector.Startup) still holds off suspecting it:
	// the node says so then, not only when the grace ends.
	OnUnheard func(peer spec.ProcID, silent time.Duration)
}

// Stats counts frames; all fields are updated atomically.
type Stats struct {
	AppSent, AppDelivered         atomic.Uint64
	MarkersSent, MarkersDelivered atomic.Uint64
	// Recorded counts application messages recorded as channel state.
	Recorded atomic.Uint64
	// ControlDelivered counts the control frames (heartbeats, done)
	// taken from the inbox: with the other two delivered counts, every
	// frame a node has handled, so a caller that feeds frames one at a
	// time knows when each was.
	ControlDelivered atomic.Uint64
}

// InFlight is the number of frames sent and not yet delivered.
func (s *Stats) InFlight() uint64 {
	sent := s.AppSent.Load() + s.MarkersSent.Load()
	del := s.AppDelivered.Load() + s.MarkersDelivered.Load()
	if del > sent {
		return 0
	}
	return sent - del
}

// Node runs one core.Node in its own goroutine. Its methods may be called
// from any goroutine; they run on the node goroutine (SendApp, while the
// node is not paused, on the caller's), always under the node's core lock,
// so the core is stepped by one goroutine at a time.
type Node struct {
	self  spec.ProcID
	core  *core.Node
	tr    transport.Transport
	fc    transport.FlowControl // tr's flow control, if it has one (TCP)
	inbox *transport.Inbox
	col   *Collector
	sink  *trace.Sink
	cfg   NodeConfig
	stats *Stats

	cmds     chan *command
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	// cmu is the core lock: every step of the core and every use of the
	// fields below it happens under it, on the node goroutine or, for an
	// application send while the node is not paused, on SendApp's caller
	// (no hand-off to the node goroutine on the hot path). NewNode takes
	// it and the node goroutine releases it once the restore is replayed.
	cmu       sync.Mutex
	exited    bool // the node goroutine has left its loop: commands fail
	replay    []wire.Envelope
	initiated map[spec.SnapID]bool
	paused    bool
	deferred  []*command
	det       *detector
	finished  bool // Finish: no more application sends

	crashed atomic.Bool // Crash: stop as a crash does, telling no one

	mu     sync.Mutex
	errs   []error
	nErrs  int
	unsent []wire.Envelope
	faults []Fault // every suspicion, withdrawal and abort, in order
	// failed and held (written on the node goroutine, under mu): the
	// incoming channels stopped, and their frames from the rejected one on.
	failed map[spec.Channel]*ChannelError
	held   map[spec.Channel][]wire.Envelope
}

// ErrChannelFailed is matched by a *ChannelError.
var ErrChannelFailed = errors.New("channel failed")

// ChannelError reports an incoming channel stopped because the core
// rejected one of its frames (e.g. the application refused it, or its
// sequence number or clock was wrong). The rejected frame's effects were
// not applied, so every later frame of the channel would be out of order:
// the node holds the rejected frame and all later ones instead of
// delivering them. They are listed by Held, by the cluster's StopReport
// (Undelivered), and a snapshot whose marker is held is reported
// incomplete naming the channel.
type ChannelError struct {
	Chan  spec.Channel
	Frame wire.Frame // the rejected frame
	Err   error      // the core's reason
}

func (e *ChannelError) Error() string {
	return fmt.Sprintf("runtime: channel %s failed at %s, it and later frames held undelivered: %v", e.Chan, e.at(), e.Err)
}

// at names the rejected frame.
func (e *ChannelError) at() string {
	if e.Frame.Kind == wire.KindMarker {
		return fmt.Sprintf("the marker of snapshot %d", e.Frame.Snap)
	}
	return fmt.Sprintf("seq %d", e.Frame.Seq)
}

func (e *ChannelError) Is(target error) bool { return target == ErrChannelFailed }

func (e *ChannelError) Unwrap() error { return e.Err }

type command struct {
	run  func()
	send bool // an application send: held while the node is paused
	done chan struct{}
}

const maxKeptErrors = 100

// NewNode builds the node (restoring it if cfg.From is set) and starts its
// goroutine.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.Transport == nil {
		return nil, fmt.Errorf("runtime: node %s: no transport", string(cfg.Self))
	}
	cn, replay, err := newCore(cfg)
	if err != nil {
		return nil, err
	}
	inbox, err := cfg.Transport.Inbox(cfg.Self)
	if err != nil {
		return nil, fmt.Errorf("runtime: node %s: %w", string(cfg.Self), err)
	}
	st := cfg.Stats
	if st == nil {
		st = &Stats{}
	}
	n := &Node{
		self: cfg.Self, core: cn, tr: cfg.Transport, inbox: inbox,
		col: cfg.Collector, sink: cfg.Trace, cfg: cfg, stats: st,
		cmds: make(chan *command), stop: make(chan struct{}), done: make(chan struct{}),
		replay: replay, initiated: map[spec.SnapID]bool{},
	}
	if err := cfg.Detector.Check(); err != nil {
		return nil, fmt.Errorf("runtime: node %s: failure detector: %w", string(cfg.Self), err)
	}
	n.fc, _ = cfg.Transport.(transport.FlowControl)
	if err := inbox.Claim(); err != nil { // released by run when it ends
		return nil, fmt.Errorf("runtime: node %s: its transport's inbox: %w (a transport carries one running node per process: a stopped cluster's transport is closed, and two clusters cannot share one)", string(cfg.Self), err)
	}
	n.det = newDetector(cfg.Detector, cfg.Incarnation, cfg.Topology, cfg.Self, time.Now())
	n.cmu.Lock() // released by run once the restore is replayed
	go n.run()
	return n, nil
}

// newCore is the node's core: new, or restored from cfg.From with the
// recorded messages of its incoming channels to replay.
func newCore(cfg NodeConfig) (*core.Node, []wire.Envelope, error) {
	ccfg := core.Config{Topology: cfg.Topology, Self: cfg.Self, App: cfg.App, NoClocks: !cfg.Trace.Enabled()}
	if cfg.From == nil {
		cn, err := core.New(ccfg)
		if err != nil {
			return nil, nil, fmt.Errorf("runtime: %w", err)
		}
		return cn, nil, nil
	}
	ls, ok := cfg.From.Local(cfg.Self)
	if !ok {
		return nil, nil, fmt.Errorf("runtime: restore %s: snapshot %d has no state for it", string(cfg.Self), cfg.From.ID)
	}
	cn, err := core.Restore(ccfg, ls.Checkpoint())
	if err != nil {
		return nil, nil, fmt.Errorf("runtime: restore from snapshot %d: %w", cfg.From.ID, err)
	}
	return cn, replayOf(ls), nil
}

// replayOf is the recorded state of ls's incoming channels as the app
// frames to deliver again, channel by channel, in seq order.
func replayOf(ls core.LocalSnapshot) []wire.Envelope {
	var replay []wire.Envelope
	for _, r := range ls.Chans {
		for _, m := range r.Msgs {
			replay = append(replay, wire.Envelope{Chan: r.Chan, Frame: wire.Frame{Kind: wire.KindApp, Seq: m.Seq, Payload: m.Payload}})
		}
	}
	return replay
}

// ID is the node's process id.
func (n *Node) ID() spec.ProcID { return n.self }

func (n *Node) run() {
	defer close(n.done)
	defer n.inbox.Release()
	defer n.det.stop()
	defer func() {
		if n.col != nil && !n.crashed.Load() {
			n.col.NodeStopped(n.self)
		}
	}()
	n.greet() // under cmu, taken by NewNode
	for _, env := range n.replay {
		n.deliver(env)
	}
	n.replay = nil
	n.cmu.Unlock()
	inbox := n.inbox.Ready()
	var batch []wire.Envelope
	for {
		select {
		case <-n.stop:
			n.cmu.Lock()
			n.exited = true
			n.cmu.Unlock()
			return
		case c := <-n.cmds:
			n.command(c)
		case now := <-n.det.tick():
			n.cmu.Lock()
			n.detect(now)
			n.cmu.Unlock()
		case h := <-n.det.hints:
			n.cmu.Lock()
			n.hinted(h, time.Now())
			n.cmu.Unlock()
		case <-inbox:
			var open bool
			if batch, open = n.receiveBatch(batch); !open {
				inbox = nil
			}
		}
	}
}

// command runs command c under cmu, or holds it if it is an application
// send and the node is paused.
func (n *Node) command(c *command) {
	n.cmu.Lock()
	if c.send && n.paused {
		n.deferred = append(n.deferred, c)
		n.cmu.Unlock()
		return
	}
	c.run()
	n.cmu.Unlock()
	close(c.done)
}

// receiveBatch takes up to inboxBatch envelopes from the inbox, in batch's
// storage, and receives them under cmu; open is false once the inbox is
// closed.
func (n *Node) receiveBatch(batch []wire.Envelope) (_ []wire.Envelope, open bool) {
	n.cmu.Lock()
	defer n.cmu.Unlock()
	batch, open = n.inbox.Take(batch, inboxBatch)
	for _, env := range batch {
		n.receive(env)
	}
	return batch, open
}

// inboxBatch is the most envelopes the node takes from its inbox and
// receives at once (under one lock, between two looks at its commands).
const inboxBatch = 64

// receive takes one envelope from the inbox: a control frame goes to the
// failure detector, any other frame to the core. Called under cmu.
func (n *Node) receive(env wire.Envelope) {
	if env.Frame.Kind.Control() {
		n.det.control(env.Chan.From, env.Frame)
		n.stats.ControlDelivered.Add(1)
		return
	}
	n.det.heardOn(env.Chan.From)
	if n.deliver(env) {
		if env.Frame.Kind == wire.KindMarker {
			n.stats.MarkersDelivered.Add(1)
		} else {
			n.stats.AppDelivered.Add(1)
		}
	}
}

// exec runs f on the node goroutine and waits for it.
func (n *Node) exec(send bool, f func()) error {
	c := &command{run: f, send: send, done: make(chan struct{})}
	select {
	case n.cmds <- c:
	case <-n.done:
		return n.stopped()
	}
	select {
	case <-c.done:
		return nil
	case <-n.done:
		select {
		case <-c.done:
			return nil
		default:
			return n.stopped()
		}
	}
}

// deliver hands env to the core and reports whether it took it. A frame
// on a failed channel is held; a frame the core rejects fails its channel.
func (n *Node) deliver(env wire.Envelope) bool {
	if n.hold(env) {
		return false
	}
	step, err := n.core.Deliver(env)
	if err != nil {
		n.rejected(env, err)
		return false
	}
	n.after(step)
	if step.Event.Action == spec.RecvMarker && step.Event.First {
		n.abortIfWaiting(step.Event.Snap)
	}
	return true
}

// hold keeps a copy of env if its channel has failed, and reports
// whether it did.
func (n *Node) hold(env wire.Envelope) bool {
	if n.failed == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	h, ok := n.held[env.Chan]
	if ok {
		n.held[env.Chan] = append(h, wire.Envelope{Chan: env.Chan, Frame: env.Frame.Clone()})
	}
	return ok
}

// rejected handles env, which the core rejected with err: on one of the
// node's incoming channels it fails that channel, holding env and what
// follows it; else it is only an error.
func (n *Node) rejected(env wire.Envelope, err error) {
	if env.Chan.To != n.self || !n.core.Topology().HasChan(env.Chan) {
		n.fail(err) // not one of our channels: nothing to stop
		return
	}
	ce := &ChannelError{Chan: env.Chan, Frame: env.Frame.Clone(), Err: err}
	n.mu.Lock()
	if n.failed == nil {
		n.failed = map[spec.Channel]*ChannelError{}
		n.held = map[spec.Channel][]wire.Envelope{}
	}
	n.failed[env.Chan] = ce
	n.held[env.Chan] = []wire.Envelope{{Chan: env.Chan, Frame: ce.Frame}}
	n.mu.Unlock()
	if n.col != nil {
		n.col.ChannelFailed(ce)
	}
	n.fail(ce)
}

// after sends a step's frames, traces its event and reports progress.
func (n *Node) after(step core.Step) {
	for _, env := range step.Out { // step.Out is the core's buffer: Send copies the envelope
		n.send(env)
	}
	ev := step.Event
	if err := n.sink.Emit(ev); err != nil {
		n.fail(err)
	}
	if n.col != nil {
		n.reportRecording(ev)
	}
	if n.cfg.OnRecorded != nil && recordsState(ev) {
		n.cfg.OnRecorded(ev.Snap)
	}
	if step.Completed != 0 {
		for _, ls := range n.core.TakeCompleted() {
			n.completed(ls)
		}
	}
}

// send hands env to the transport, keeping a copy of it as unsent if the
// transport refuses it.
func (n *Node) send(env wire.Envelope) {
	if err := n.transmit(env); err != nil {
		n.mu.Lock()
		n.unsent = append(n.unsent, wire.Envelope{Chan: env.Chan, Frame: env.Frame.Clone()})
		n.mu.Unlock()
		n.fail(fmt.Errorf("runtime %s: send %s: %w", string(n.self), env, err))
		return
	}
	n.det.sentOn(env.Chan)
	if env.Frame.Kind == wire.KindMarker {
		n.stats.MarkersSent.Add(1)
	} else {
		n.stats.AppSent.Add(1)
	}
}

// transmit hands env to the transport without waiting for its flow
// control (SendNow), as every send under cmu must: a wait there would
// stop the node receiving and its detector suspecting the very peer
// that does not read (see waitRoom).
func (n *Node) transmit(env wire.Envelope) error {
	if n.fc != nil {
		return n.fc.SendNow(env)
	}
	return n.tr.Send(env)
}

// reportRecording tells the collector that event ev recorded the node's
// state (an Initiate, a first marker) or closed a channel's recording (a
// marker).
func (n *Node) reportRecording(ev spec.Event) {
	if recordsState(ev) {
		n.col.Recorded(ev.Snap, n.self)
	}
	if ev.Action == spec.RecvMarker {
		n.col.Closed(ev.Snap, ev.Chan())
	}
}

// recordsState reports whether ev records the node's state: an
// Initiate, or the receipt of a snapshot's first marker.
func recordsState(ev spec.Event) bool {
	return ev.Action == spec.Initiate || ev.Action == spec.RecvMarker && ev.First
}

// completed hands the node's completed part of snapshot ls.Snap to the
// collector and to OnPart, counting the messages it recorded.
func (n *Node) completed(ls core.LocalSnapshot) {
	part := snapshot.PartOf(ls, n.initiated[ls.Snap])
	delete(n.initiated, ls.Snap)
	var rec uint64
	for _, cs := range part.In {
		rec += uint64(len(cs.Msgs))
	}
	n.stats.Recorded.Add(rec)
	if n.col != nil {
		n.col.Add(part)
	}
	if n.cfg.OnPart != nil {
		n.cfg.OnPart(part)
	}
}

func (n *Node) fail(err error) {
	n.mu.Lock()
	n.nErrs++
	if len(n.errs) < maxKeptErrors {
		n.errs = append(n.errs, err)
	}
	n.mu.Unlock()
	if n.cfg.OnError != nil {
		n.cfg.OnError(err)
	}
}

// SendApp sends payload to peer to (the application's local effect
// first, which may refuse). The payload is copied. A send to a peer the
// node suspects is refused with an error matching core.ErrSuspected and
// naming the peer; a send after Finish with ErrFinished. Neither debits
// the application.
//
// While the node is not paused the send runs on the caller's goroutine
// under the node's core lock, serialized with everything the node
// goroutine does; while it is paused (stop-the-world) it waits on the
// node goroutine until resume, as every command does.
func (n *Node) SendApp(to spec.ProcID, payload []byte) error {
	payload = append([]byte(nil), payload...)
	n.waitRoom(to)
	n.cmu.Lock()
	if n.exited {
		n.cmu.Unlock()
		return n.stopped()
	}
	if !n.paused {
		err := n.sendApp(to, payload)
		n.cmu.Unlock()
		return err
	}
	n.cmu.Unlock()
	var err error
	if e := n.exec(true, func() { err = n.sendApp(to, payload) }); e != nil {
		return e
	}
	return err
}

// waitRoom is SendApp's flow control, before it takes the core lock: it
// waits while the transport's window on the channel to peer to is full,
// so that no one waits on the network under the lock (the node goroutine
// goes on receiving, and the detector on suspecting a peer that stopped
// reading: a frozen process). It ends once there is room, the node
// suspects to (the send is then refused, naming it), finished, or
// stopped; a closed or failed channel is left for the send to report.
// Under the lock the send then never waits (SendNow).
func (n *Node) waitRoom(to spec.ProcID) {
	if n.fc == nil {
		return
	}
	ch := spec.Channel{From: n.self, To: to}
	// The first look does not wait: a send to a peer already suspected
	// (or after Finish) is refused at once, not a roomPoll later.
	for wait := time.Duration(0); ; wait = roomPoll {
		if err := n.fc.WaitRoom(ch, wait); !errors.Is(err, transport.ErrNoRoom) {
			return
		}
		n.cmu.Lock()
		over := n.exited || n.finished || n.core.Suspected(to) // what sendApp's step refuses
		n.cmu.Unlock()
		if over {
			return
		}
	}
}

// roomPoll is how long waitRoom waits for room before it looks again
// whether the node still sends (suspected, finished, stopped).
const roomPoll = 50 * time.Millisecond

// sendApp is SendApp's step. Called under cmu.
func (n *Node) sendApp(to spec.ProcID, payload []byte) error {
	if n.finished {
		return fmt.Errorf("runtime %s: send to %s: %w", string(n.self), string(to), ErrFinished)
	}
	step, err := n.core.SendApp(to, payload)
	if err == nil {
		n.after(step)
	}
	return err
}

// Initiate starts snapshot s at this node (the Initiator Rule). While the
// node suspects a peer it refuses (ErrPeerSuspected, naming the peer): the
// snapshot could not complete. It starts again once the suspicion is
// withdrawn.
func (n *Node) Initiate(s spec.SnapID) error {
	var err error
	if e := n.exec(false, func() {
		if q, since, ok := n.anySuspected(); ok {
			err = fmt.Errorf("runtime %s: snapshot %d not started: %w: %s, nothing heard since %s", string(n.self), s, ErrPeerSuspected, string(q), heardSince(since))
			return
		}
		var step core.Step
		n.initiated[s] = true
		if step, err = n.core.Initiate(s); err != nil {
			delete(n.initiated, s)
			return
		}
		n.after(step)
	}); e != nil {
		return e
	}
	return err
}

// State is the abstraction of the node's current state.
func (n *Node) State() (spec.LocalState, error) {
	var st spec.LocalState
	err := n.exec(false, func() { st = n.core.State() })
	return st, err
}

// Inspect runs f with the core on the node goroutine; f must not keep it.
func (n *Node) Inspect(f func(*core.Node)) error {
	return n.exec(false, func() { f(n.core) })
}

// pause holds application sends until resume; other work goes on.
func (n *Node) pause() error { return n.exec(false, func() { n.paused = true }) }

// resume runs the held sends, in order, and accepts new ones.
func (n *Node) resume() error {
	return n.exec(false, func() {
		n.paused = false
		for _, c := range n.deferred {
			c.run()
			close(c.done)
		}
		n.deferred = nil
	})
}

// capture records the node's state directly (for stop-the-world).
func (n *Node) capture() (snapshot.NodeState, error) {
	var (
		ns  snapshot.NodeState
		err error
	)
	if e := n.exec(false, func() {
		ns.Proc, ns.State = n.self, n.core.State()
		ns.App, err = n.cfg.App.Capture()
		for _, ch := range n.core.Topology().Out(n.self) {
			next, _ := n.core.NextSendSeq(ch.To)
			ns.NextSend = append(ns.NextSend, snapshot.ChanSeq{Chan: ch, Next: next})
		}
	}); e != nil {
		return ns, e
	}
	return ns, err
}

// Errors returns the errors the node met (the first 100) and their count.
func (n *Node) Errors() ([]error, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]error(nil), n.errs...), n.nErrs
}

// FailedChannels returns the incoming channels stopped because the core
// rejected a frame, in topology order.
func (n *Node) FailedChannels() []*ChannelError {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*ChannelError
	for _, ch := range n.core.Topology().In(n.self) {
		if ce := n.failed[ch]; ce != nil {
			out = append(out, ce)
		}
	}
	return out
}

// Held returns the frames held on failed channels (each channel's
// rejected frame and every later one), in topology then arrival order.
func (n *Node) Held() []wire.Envelope {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []wire.Envelope
	for _, ch := range n.core.Topology().In(n.self) {
		out = append(out, n.held[ch]...)
	}
	return out
}

// Unsent returns the frames the transport refused (e.g. after it closed).
func (n *Node) Unsent() []wire.Envelope {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]wire.Envelope(nil), n.unsent...)
}

// Stop stops the node goroutine and waits for it. Held sends fail with
// ErrStopped; frames left in the inbox stay with the transport, which
// reports them when it closes.
func (n *Node) Stop() {
	n.stopOnce.Do(func() { close(n.stop) })
	<-n.done
}

// Done is closed when the node goroutine has stopped.
func (n *Node) Done() <-chan struct{} { return n.done }
