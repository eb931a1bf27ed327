package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// Errors a step can return, for errors.Is; the messages name the details.
var (
	ErrUnknownChannel  = errors.New("unknown channel")
	ErrBadFrame        = errors.New("malformed frame")
	ErrSeq             = errors.New("out-of-order message")
	ErrBadSnap         = errors.New("invalid snapshot id")
	ErrDuplicateSnap   = errors.New("duplicate snapshot id")
	ErrDuplicateMarker = errors.New("duplicate marker")
	ErrReleased        = errors.New("snapshot already completed and released")
	ErrApp             = errors.New("application error")
	// ErrSuspected: the peer a transfer is for is suspected (SendAppF).
	ErrSuspected = errors.New("receiver suspected")
	// ErrAborted: the snapshot was aborted here.
	ErrAborted = errors.New("snapshot aborted")
	// ErrNotSuspected: Abort names a cause this node does not suspect, or
	// Unsuspect a peer it does not suspect.
	ErrNotSuspected = errors.New("peer not suspected")
	// ErrAlreadySuspected: Suspect names a peer already suspected.
	ErrAlreadySuspected = errors.New("peer already suspected")
)

// Error is why a node refused a step or a checkpoint: the node, the
// operation ("new", "send", "initiate", "deliver", "restore"), the channel
// and the application message's seq when they are known, and the cause. The cause is one of the errors above, or wraps
// one, with the details; errors.Is and errors.As see through an Error.
type Error struct {
	Node spec.ProcID
	Op   string
	Chan spec.Channel // zero if the operation is on no channel
	Seq  uint64       // 0 if unknown
	Err  error
}

// Error reads "core P1: deliver on P2->P1, seq 3: <cause>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("core")
	if e.Node != "" {
		b.WriteString(" " + string(e.Node))
	}
	b.WriteString(": " + e.Op)
	if e.Chan != (spec.Channel{}) {
		b.WriteString(" on " + e.Chan.String())
	}
	if e.Seq != 0 {
		fmt.Fprintf(&b, ", seq %d", e.Seq)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// errorf is the Error of op on channel c (zero: none) with the cause
// fmt.Errorf(format, args...).
func (n *Node) errorf(op string, c spec.Channel, format string, args ...any) error {
	return &Error{Node: n.self, Op: op, Chan: c, Err: fmt.Errorf(format, args...)}
}

// Config names the node's process, its topology and its application.
type Config struct {
	Topology *spec.Topology
	Self     spec.ProcID
	App      App
	// NoClocks turns the vector clock off, for a caller that records no
	// trace: frames then carry no clock (the wire allows an empty one),
	// Step.Event has no VC and no Payload, and a step allocates nothing
	// for either. The algorithm and the rest of the event are unchanged.
	NoClocks bool
}

// Step is the outcome of one step: the event performed and the frames to
// send, ordered by destination channel as in spec.Topology. The frames and
// the event share one vector clock slice; treat it as read-only. Out is a
// buffer of the node's, valid until its next step: copy what you keep.
type Step struct {
	Event spec.Event
	Out   []wire.Envelope
	// Completed is the snapshot whose local part this step completed, or 0.
	// The LocalSnapshot waits in the node until TakeCompleted.
	Completed spec.SnapID
}

// Node is one process of the Chandy-Lamport algorithm.
type Node struct {
	topo   *spec.Topology
	self   spec.ProcID
	idx    int
	app    App
	in     []spec.Channel // incoming channels, topology order
	out    []spec.Channel // outgoing channels, topology order
	inIdx  map[spec.ProcID]int
	outIdx map[spec.ProcID]int

	sendSeq []uint64 // next seq per outgoing channel
	recvSeq []uint64 // next expected seq per incoming channel
	sent    int
	rcvd    int
	steps   uint64
	clocks  bool             // !Config.NoClocks
	vc      spec.VectorClock // replaced, never mutated in place; nil without clocks
	outBuf  []wire.Envelope  // Step.Out, reused by every step
	arena   []byte           // copies of recorded payloads, see keep

	snaps     map[spec.SnapID]*snapState // recorded, not released
	active    []*snapState               // recorded, not complete, by id
	completed []LocalSnapshot            // complete, not yet taken
	released  idSet
	nDone     uint64 // local snapshots completed so far

	// suspected is this node's failure detector output, by process index
	// (the spec's suspected, as this node sees it); nSusp counts it.
	suspected []bool
	nSusp     int
	aborted   idSet // snapshots aborted here: their markers are dropped
}

// New returns a node in its initial state: the application as given, all
// counters zero, seqs starting at 1.
func New(cfg Config) (*Node, error) {
	if cfg.Topology == nil {
		return nil, &Error{Node: cfg.Self, Op: "new", Err: errors.New("config has no topology")}
	}
	if cfg.App == nil {
		return nil, &Error{Node: cfg.Self, Op: "new", Err: errors.New("config has no application")}
	}
	idx := cfg.Topology.ProcIndex(cfg.Self)
	if idx < 0 {
		return nil, &Error{Node: cfg.Self, Op: "new", Err: fmt.Errorf("process %q is not in the topology", string(cfg.Self))}
	}
	n := &Node{
		topo:   cfg.Topology,
		self:   cfg.Self,
		idx:    idx,
		app:    cfg.App,
		in:     cfg.Topology.In(cfg.Self),
		out:    cfg.Topology.Out(cfg.Self),
		inIdx:  make(map[spec.ProcID]int),
		outIdx: make(map[spec.ProcID]int),
		clocks: !cfg.NoClocks,
		snaps:  make(map[spec.SnapID]*snapState),

		suspected: make([]bool, len(cfg.Topology.Procs)),
	}
	if n.clocks {
		n.vc = make(spec.VectorClock, len(cfg.Topology.Procs))
	}
	n.indexChans()
	return n, nil
}

// indexChans indexes the node's channels by peer, every seq starting
// at 1.
func (n *Node) indexChans() {
	n.sendSeq = make([]uint64, len(n.out))
	n.recvSeq = make([]uint64, len(n.in))
	for i, c := range n.in {
		n.inIdx[c.From] = i
		n.recvSeq[i] = 1
	}
	for j, c := range n.out {
		n.outIdx[c.To] = j
		n.sendSeq[j] = 1
	}
}

// Checkpoint is a persisted local state to restart a node from: the
// application's state, the spec abstraction with the core's counters, the
// per-channel seqs, and the snapshot ids to treat as released.
type Checkpoint struct {
	App   []byte
	State spec.LocalState
	// NextSend and NextRecv give the next seq per outgoing / incoming
	// channel; a channel left out starts at 1.
	NextSend map[spec.Channel]uint64
	NextRecv map[spec.Channel]uint64
	// SnapFloor retires ids 1..SnapFloor: they count as released.
	SnapFloor spec.SnapID
}

// Restore builds a node from a checkpoint (LocalSnapshot.Checkpoint gives
// one). The restored node starts a new event log: Seq from 1, clock zero.
// The application's abstraction of the restored state must match
// cp.State.Bal. On error the application is left as it was.
func Restore(cfg Config, cp Checkpoint) (*Node, error) {
	n, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if cp.State.Sent < 0 || cp.State.Rcvd < 0 {
		return nil, n.errorf("restore", spec.Channel{}, "negative counters sent=%d rcvd=%d", cp.State.Sent, cp.State.Rcvd)
	}
	if err := n.restoreSeqs(cp); err != nil {
		return nil, err
	}
	if err := n.restoreApp(cp); err != nil {
		return nil, err
	}
	n.sent, n.rcvd = cp.State.Sent, cp.State.Rcvd
	if cp.SnapFloor > 0 {
		n.released.add(1, cp.SnapFloor)
	}
	return n, nil
}

// restoreSeqs sets the next seq of each channel cp names: one of the
// node's outgoing (NextSend) or incoming (NextRecv) channels, from 1.
func (n *Node) restoreSeqs(cp Checkpoint) error {
	if err := n.setSeqs(cp.NextSend, true); err != nil {
		return err
	}
	return n.setSeqs(cp.NextRecv, false)
}

// setSeqs sets the next send (out) or receive seq of each channel next
// names, which must be one of the node's outgoing (out) or incoming
// channels.
func (n *Node) setSeqs(next map[spec.Channel]uint64, out bool) error {
	dir, op, idx, seqs := "an incoming", "receive", n.inIdx, n.recvSeq
	if out {
		dir, op, idx, seqs = "an outgoing", "send", n.outIdx, n.sendSeq
	}
	for c, s := range next {
		self, peer := c.To, c.From
		if out {
			self, peer = c.From, c.To
		}
		i, ok := idx[peer]
		if self != n.self || !ok {
			return n.errorf("restore", spec.Channel{}, "%w: %s is not %s channel", ErrUnknownChannel, c, dir)
		}
		if s == 0 {
			return n.errorf("restore", spec.Channel{}, "next %s seq on %s is 0, seqs start at 1", op, c)
		}
		seqs[i] = s
	}
	return nil
}

// restoreApp restores the application's state from cp.App, whose
// balance must be cp.State.Bal; on error the application is left as it
// was.
func (n *Node) restoreApp(cp Checkpoint) error {
	prev, err := n.app.Capture()
	if err != nil {
		return n.errorf("restore", spec.Channel{}, "%w: capture: %w", ErrApp, err)
	}
	if err := n.app.Restore(cp.App); err != nil {
		return n.errorf("restore", spec.Channel{}, "%w: %w", ErrApp, err)
	}
	if b := restoredBalance(n.app, cp.State); b != cp.State.Bal {
		_ = n.app.Restore(prev)
		return n.errorf("restore", spec.Channel{}, "application state has balance %d, checkpoint says %d", b, cp.State.Bal)
	}
	return nil
}

// restoredBalance is the bal a node restored to st with application a
// has: a's Balance, or the message count abstraction at st's counters.
func restoredBalance(a App, st spec.LocalState) int64 {
	if q, ok := a.(Quantities); ok {
		return q.Balance()
	}
	return OpaqueBalance + int64(st.Rcvd) - int64(st.Sent)
}

// SendApp sends payload to peer to. It mirrors SendApp(p, q, a) in
// tla/ChandyLamport.tla: the application's local effect of the send (which
// may refuse), sent+1, and one app frame numbered with the channel's next
// seq. Snapshots being recorded are not affected. A send to a peer this
// node suspects is refused before the application sees it (ErrSuspected),
// as SendAppF(p, q, a) requires q \notin suspected
// (tla/ChandyLamportFaults.tla line 66): nothing is debited.
func (n *Node) SendApp(to spec.ProcID, payload []byte) (Step, error) {
	j, err := n.sendChan(to)
	if err != nil {
		return Step{}, err
	}
	c := n.out[j]
	amt, err := n.amount(payload)
	if err != nil {
		return Step{}, &Error{Node: n.self, Op: "send", Chan: c, Err: err}
	}
	if err := n.app.Send(to, payload); err != nil {
		return Step{}, n.errorf("send", c, "%w: refused: %w", ErrApp, err)
	}
	seq := n.sendSeq[j]
	n.sendSeq[j]++
	n.sent++
	n.tick(nil)
	ev := n.event(spec.SendApp)
	ev.From, ev.To, ev.Amount, ev.Msg = n.self, to, amt, seq
	if n.clocks {
		ev.Payload = jsonPayload(payload)
	}
	n.outBuf = append(n.outBuf[:0], wire.Envelope{Chan: c, Frame: wire.Frame{Kind: wire.KindApp, Seq: seq, Payload: payload, VC: n.vc}})
	return Step{Event: ev, Out: n.outBuf[:1:1]}, nil
}

// sendChan is the index of the outgoing channel to peer to, which must
// not be suspected (ErrSuspected).
func (n *Node) sendChan(to spec.ProcID) (int, error) {
	j, ok := n.outIdx[to]
	if !ok {
		return 0, n.errorf("send", spec.Channel{}, "%w: no channel %s->%s", ErrUnknownChannel, string(n.self), string(to))
	}
	if n.nSusp > 0 && n.suspected[n.topo.ProcIndex(to)] {
		return 0, n.errorf("send", n.out[j], "%w: %s is suspected, the transfer was not made", ErrSuspected, string(to))
	}
	return j, nil
}

// Initiate starts snapshot s here. It mirrors Initiate(s) in
// tla/ChandyLamport.tla (the Initiator Rule): record the local state, send a
// marker on every outgoing channel, record every incoming channel.
func (n *Node) Initiate(s spec.SnapID) (Step, error) {
	if err := n.newSnap(s); err != nil {
		return Step{}, err
	}
	appState, err := n.app.Capture()
	if err != nil {
		return Step{}, n.errorf("initiate", spec.Channel{}, "%w: capture for snapshot %d: %w", ErrApp, s, err)
	}
	st := n.record(s, appState)
	n.tick(nil)
	step := Step{Out: n.markers(s)}
	if st.pending == 0 {
		step.Completed = n.complete(st)
	}
	step.Event = n.event(spec.Initiate)
	step.Event.Snap = s
	return step, nil
}

// newSnap checks that s may name a snapshot initiated here: not 0, and
// one this node does not know (recording, released or aborted).
func (n *Node) newSnap(s spec.SnapID) error {
	if s == 0 {
		return n.errorf("initiate", spec.Channel{}, "%w: 0", ErrBadSnap)
	}
	if n.snaps[s] != nil || n.released.has(s) || n.aborted.has(s) {
		return n.errorf("initiate", spec.Channel{}, "%w: %s already knows snapshot %d", ErrDuplicateSnap, string(n.self), s)
	}
	return nil
}

// Deliver takes a frame arriving on incoming channel env.Chan. An app frame
// mirrors RecvApp(p, q), a marker RecvMarker(p, q) in tla/ChandyLamport.tla.
// On error the node is unchanged.
func (n *Node) Deliver(env wire.Envelope) (Step, error) {
	c := env.Chan
	i, err := n.inChan(c)
	if err != nil {
		return Step{}, err
	}
	f := &env.Frame
	if np := len(n.topo.Procs); len(f.VC) != 0 && len(f.VC) != np {
		return Step{}, n.errorf("deliver", c, "%w: vector clock has %d entries, want %d", ErrBadFrame, len(f.VC), np)
	}
	switch f.Kind {
	case wire.KindApp:
		return n.recvApp(i, f)
	case wire.KindMarker:
		return n.recvMarker(i, f)
	}
	return Step{}, n.errorf("deliver", c, "%w: unknown frame kind %d", ErrBadFrame, f.Kind)
}

// inChan is the index of incoming channel c, which must end here.
func (n *Node) inChan(c spec.Channel) (int, error) {
	if c.To != n.self {
		return 0, n.errorf("deliver", c, "%w: the frame is addressed to %s", ErrUnknownChannel, string(c.To))
	}
	i, ok := n.inIdx[c.From]
	if !ok {
		return 0, n.errorf("deliver", c, "%w: not an incoming channel (unknown peer %q)", ErrUnknownChannel, string(c.From))
	}
	return i, nil
}

// recvApp mirrors RecvApp(p, q): apply, rcvd+1, and append the message to
// every snapshot recording the channel.
func (n *Node) recvApp(i int, f *wire.Frame) (Step, error) {
	c := n.in[i]
	if err := n.checkApp(i, f); err != nil {
		return Step{}, err
	}
	amt, err := n.amount(f.Payload)
	if err != nil {
		return Step{}, &Error{Node: n.self, Op: "deliver", Chan: c, Seq: f.Seq, Err: err}
	}
	if err := n.app.Apply(c.From, f.Payload); err != nil {
		return Step{}, &Error{Node: n.self, Op: "deliver", Chan: c, Seq: f.Seq, Err: fmt.Errorf("%w: %w", ErrApp, err)}
	}
	n.recvSeq[i]++
	n.rcvd++
	var saved []byte
	for _, st := range n.active {
		if st.status[i] == Recording {
			if saved == nil {
				saved = n.keep(f.Payload)
			}
			st.recs[i] = append(st.recs[i], RecordedMsg{Seq: f.Seq, Amt: amt, Payload: saved})
		}
	}
	n.tick(f.VC)
	ev := n.event(spec.RecvApp)
	ev.From, ev.To, ev.Amount, ev.Msg = c.From, c.To, amt, f.Seq
	if n.clocks {
		ev.Payload = jsonPayload(f.Payload)
	}
	return Step{Event: ev}, nil
}

// checkApp checks app frame f arriving on the i-th incoming channel: no
// snapshot id, and the seq the channel expects next (FIFO, exactly once).
func (n *Node) checkApp(i int, f *wire.Frame) error {
	c := n.in[i]
	if f.Snap != 0 {
		return n.errorf("deliver", c, "%w: app frame carries snapshot id %d", ErrBadFrame, f.Snap)
	}
	if f.Seq != n.recvSeq[i] {
		return n.errorf("deliver", c, "%w: expected seq %d, got %d", ErrSeq, n.recvSeq[i], f.Seq)
	}
	return nil
}

// recvMarker mirrors RecvMarker(p, q) (the Receiving Rule). Case 1, the
// first marker of the snapshot here: record the local state, the channel is
// empty, send markers on every outgoing channel, record the other incoming
// channels. Case 2: the channel's recording stops and becomes its state.
func (n *Node) recvMarker(i int, f *wire.Frame) (Step, error) {
	c, s := n.in[i], f.Snap
	if err := n.checkMarker(c, f); err != nil {
		return Step{}, err
	}
	if n.aborted.has(s) {
		return n.dropMarker(c, s, f.VC), nil
	}
	st := n.snaps[s]
	first := st == nil
	if !first && st.status[i] == Done {
		return Step{}, n.errorf("deliver", c, "%w: second marker of snapshot %d on this channel", ErrDuplicateMarker, s)
	}
	if first {
		appState, err := n.app.Capture()
		if err != nil {
			return Step{}, n.errorf("deliver", c, "%w: capture for snapshot %d: %w", ErrApp, s, err)
		}
		st = n.record(s, appState)
	}
	st.status[i] = Done
	st.pending--
	n.tick(f.VC)
	var step Step
	if first {
		step.Out = n.markers(s)
	}
	if st.pending == 0 {
		step.Completed = n.complete(st)
	}
	step.Event = n.event(spec.RecvMarker)
	step.Event.From, step.Event.To, step.Event.Snap, step.Event.First = c.From, c.To, s, first
	return step, nil
}

// checkMarker checks marker f arriving on c: a snapshot id, no seq or
// payload, and not of a snapshot released here.
func (n *Node) checkMarker(c spec.Channel, f *wire.Frame) error {
	switch s := f.Snap; {
	case s == 0:
		return n.errorf("deliver", c, "%w: marker with snapshot id 0", ErrBadSnap)
	case f.Seq != 0 || len(f.Payload) != 0:
		return n.errorf("deliver", c, "%w: marker %d carries seq %d and %d payload bytes", ErrBadFrame, s, f.Seq, len(f.Payload))
	case n.released.has(s):
		return n.errorf("deliver", c, "%w: marker for snapshot %d", ErrReleased, s)
	}
	return nil
}

// record records the local state for s and starts recording every incoming
// channel.
func (n *Node) record(s spec.SnapID, appState []byte) *snapState {
	st := &snapState{
		id:      s,
		app:     appState,
		state:   n.State(),
		status:  make([]ChanStatus, len(n.in)),
		recs:    make([][]RecordedMsg, len(n.in)),
		recvAt:  append([]uint64(nil), n.recvSeq...),
		sendAt:  append([]uint64(nil), n.sendSeq...),
		pending: len(n.in),
	}
	for i := range st.status {
		st.status[i] = Recording
	}
	n.snaps[s] = st
	k := len(n.active)
	for k > 0 && n.active[k-1].id > s {
		k--
	}
	n.active = append(n.active, nil)
	copy(n.active[k+1:], n.active[k:])
	n.active[k] = st
	return st
}

// markers returns one marker for s per outgoing channel, carrying the
// current clock, in the node's Out buffer.
func (n *Node) markers(s spec.SnapID) []wire.Envelope {
	out := n.outBuf[:0]
	for _, c := range n.out {
		out = append(out, wire.Envelope{Chan: c, Frame: wire.Frame{Kind: wire.KindMarker, Snap: s, VC: n.vc}})
	}
	n.outBuf = out
	return out[:len(out):len(out)]
}

// tick advances the clock for a local step (received nil) or a receive of
// a frame carrying received; without clocks it does nothing. The clock is
// replaced, not changed in place: earlier frames and events share it.
func (n *Node) tick(received spec.VectorClock) {
	if !n.clocks {
		return
	}
	if received == nil {
		n.vc = n.vc.Tick(n.idx)
		return
	}
	n.vc = n.vc.Merge(received, n.idx)
}

// arenaMax bounds the chunks keep allocates: one allocation per this many
// recorded payload bytes in steady state.
const arenaMax = 64 << 10

// keep copies a payload recorded as channel state into the node's arena,
// a chunk of memory the copies are carved from: a new chunk (doubling, up
// to arenaMax) only when the current one is full. Each copy's capacity
// ends at its length, so appending to one never touches another; a full
// chunk stays alive while copies in it do.
func (n *Node) keep(p []byte) []byte {
	if cap(n.arena)-len(n.arena) < len(p) || n.arena == nil {
		size := min(max(2*cap(n.arena), 256), arenaMax)
		n.arena = make([]byte, 0, max(size, len(p)))
	}
	k := len(n.arena)
	n.arena = append(n.arena, p...)
	return n.arena[k:len(n.arena):len(n.arena)]
}

// complete queues st's local snapshot and takes st off the active list.
func (n *Node) complete(st *snapState) spec.SnapID {
	for k, a := range n.active {
		if a == st {
			n.active = append(n.active[:k], n.active[k+1:]...)
			break
		}
	}
	n.completed = append(n.completed, n.view(st))
	n.nDone++
	return st.id
}

// view renders st as a LocalSnapshot sharing its (immutable) recordings.
func (n *Node) view(st *snapState) LocalSnapshot {
	_, quantities := n.app.(Quantities)
	ls := LocalSnapshot{
		Opaque:   !quantities,
		Snap:     st.id,
		Proc:     n.self,
		App:      st.app,
		State:    st.state,
		Chans:    make([]ChanRecording, len(n.in)),
		NextSend: make([]ChanSeq, len(n.out)),
	}
	for i, c := range n.in {
		r := st.recs[i]
		ls.Chans[i] = ChanRecording{Chan: c, Status: st.status[i], NextRecv: st.recvAt[i], Msgs: r[:len(r):len(r)]}
	}
	for j, c := range n.out {
		ls.NextSend[j] = ChanSeq{Chan: c, Next: st.sendAt[j]}
	}
	return ls
}

func (n *Node) event(a spec.Action) spec.Event {
	n.steps++
	return spec.Event{Proc: n.self, Seq: n.steps, Action: a, After: n.State(), VC: n.vc}
}

func (n *Node) amount(payload []byte) (int64, error) { return AmountOf(n.app, payload) }

// jsonPayload is the payload as an event's Payload, or nil when it is not
// JSON (events must stay encodable).
func jsonPayload(p []byte) json.RawMessage {
	if len(p) == 0 || !json.Valid(p) {
		return nil
	}
	return p
}

// TakeCompleted hands out the local snapshots completed since the last
// call, in completion order, and releases them: the node then remembers
// only their ids, and markers for them are errors.
func (n *Node) TakeCompleted() []LocalSnapshot {
	out := n.completed
	n.completed = nil
	for _, ls := range out {
		delete(n.snaps, ls.Snap)
		n.released.add(ls.Snap, ls.Snap)
	}
	return out
}

// Topology is the node's topology.
func (n *Node) Topology() *spec.Topology { return n.topo }

// State is the abstraction of the node's current state (TLA+ LocalState).
func (n *Node) State() spec.LocalState {
	return spec.LocalState{Bal: n.balance(), Sent: n.sent, Rcvd: n.rcvd}
}

// NextSendSeq is the seq the next message to peer to gets.
func (n *Node) NextSendSeq(to spec.ProcID) (uint64, bool) {
	j, ok := n.outIdx[to]
	if !ok {
		return 0, false
	}
	return n.sendSeq[j], true
}

// NextRecvSeq is the seq expected next from peer from.
func (n *Node) NextRecvSeq(from spec.ProcID) (uint64, bool) {
	i, ok := n.inIdx[from]
	if !ok {
		return 0, false
	}
	return n.recvSeq[i], true
}

// Phase says where snapshot s stands at this node.
func (n *Node) Phase(s spec.SnapID) Phase {
	if n.aborted.has(s) {
		return Aborted
	}
	if st := n.snaps[s]; st != nil {
		if st.pending == 0 {
			return Complete
		}
		return Active
	}
	if n.released.has(s) {
		return Released
	}
	return Unknown
}

// Snapshot returns this node's part of snapshot s as recorded so far, if
// it has recorded its state for s and not released it. Channel statuses
// and messages are as of now.
func (n *Node) Snapshot(s spec.SnapID) (LocalSnapshot, bool) {
	st := n.snaps[s]
	if st == nil {
		return LocalSnapshot{}, false
	}
	return n.view(st), true
}
