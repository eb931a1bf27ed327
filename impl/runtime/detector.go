package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// DetectorConfig configures a node's failure detector: the spec's Detect
// (tla/ChandyLamportFaults.tla lines 110-115), built from heartbeats.
//
// Every Interval the node ticks: it sends a heartbeat (wire.KindHeartbeat)
// on each outgoing channel it sent nothing on since the previous tick,
// and counts, per incoming channel, the ticks in a row that heard nothing
// (no frame of any kind) from the peer: after ceil(Timeout/Interval) of
// them, Timeout at least, the peer is suspected; a suspected peer heard
// again is trusted again at the next tick. A live peer's channel carries
// a frame at least every 2*Interval, so with Timeout >= 3*Interval it is
// not suspected; a peer that crashes (or becomes unreachable) is
// suspected at least Timeout and at most Bound (Timeout + Interval when
// Timeout is a multiple of Interval) after the last frame that reached us
// from it, as long as the node's ticks run on time (a node starved of CPU
// ticks late and suspects later, never sooner).
//
// A node hears only its in-neighbours, so it suspects only them: in a
// topology where q sends nothing to p, p never suspects q (a complete
// graph, as the shipped configs use, has no such pair). Those are also
// the only processes whose markers p waits for; a snapshot the spec
// aborts for a process p does not hear (its part missing, as the
// Collector reports) stays under way at p if the marker p waits for
// never comes (docs/failures.md, the runtime against the faults spec).
type DetectorConfig struct {
	// Interval is the heartbeat and check period; 0 turns the detector off.
	Interval time.Duration
	// Timeout is how long a silent peer is trusted; at least 3*Interval
	// (Check), so that a live peer's heartbeats cannot fall that far
	// apart on an idle machine.
	Timeout time.Duration
	// Startup is how long a peer never heard from is trusted, counted
	// from the node's start (processes of a cluster started by hand come
	// up seconds apart); 0 means Timeout, and less than Timeout counts
	// as Timeout.
	Startup time.Duration
}

// Enabled reports whether the detector runs.
func (c DetectorConfig) Enabled() bool { return c.Interval > 0 }

// Bound is the detection time: a peer that stops is suspected at most
// this long after the last frame it sent arrived: (ceil(Timeout/Interval)
// + 1) intervals, Timeout + Interval when Timeout is a multiple of
// Interval.
func (c DetectorConfig) Bound() time.Duration { return (c.silentTicks(true) + 1) * c.Interval }

// silentTicks is how many ticks in a row that hear nothing make a peer
// suspected: ceil(Timeout/Interval), or for a peer never heard from
// ceil(max(Startup, Timeout)/Interval).
func (c DetectorConfig) silentTicks(heard bool) time.Duration {
	d := c.Timeout
	if !heard {
		d = max(c.Startup, c.Timeout)
	}
	return (d + c.Interval - 1) / c.Interval
}

// Check reports a config the detector cannot honour.
func (c DetectorConfig) Check() error {
	switch {
	case c.Interval < 0 || c.Timeout < 0 || c.Startup < 0:
		return fmt.Errorf("interval %v, timeout %v and startup %v must not be negative", c.Interval, c.Timeout, c.Startup)
	case c.Interval > 0 && c.Timeout < 3*c.Interval:
		return fmt.Errorf("timeout %v is below 3 heartbeat intervals (%v): live peers would be suspected", c.Timeout, 3*c.Interval)
	}
	return nil
}

// Fault is one act of a node's failure handling: a suspicion, its
// withdrawal, or an abort, as reported to NodeConfig.OnFault and by
// Node.Faults.
type Fault struct {
	// Action is spec.Suspect, spec.Unsuspect or spec.Abort.
	Action spec.Action
	Node   spec.ProcID // the node that acted
	Peer   spec.ProcID // the peer suspected, trusted again, or the abort's cause
	// Incarnation is Peer's incarnation as its last heartbeat said, 0 if
	// none arrived.
	Incarnation uint64
	// Since is when Peer was last heard from (Suspect, Abort; zero if
	// never), or when it was suspected (Unsuspect).
	Since time.Time
	At    time.Time   // when the node acted
	Snap  spec.SnapID // Abort: the snapshot aborted
	// Initiator is, for an Abort, the snapshot's initiator if known (this
	// node, if it initiated it), else "".
	Initiator spec.ProcID
	// Finished: Peer had said it sends no more transfers (KindDone, a
	// graceful stop), so its silence may be its orderly exit.
	Finished bool
	// Why is the evidence for a suspicion other than silence (Hint), or
	// "".
	Why string
}

func (f Fault) String() string {
	peer := string(f.Peer)
	if f.Incarnation != 0 {
		peer = fmt.Sprintf("%s (incarnation %x)", peer, f.Incarnation)
	}
	since := heardSince(f.Since)
	switch f.Action {
	case spec.Suspect:
		return f.suspicion(peer, since)
	case spec.Unsuspect:
		return fmt.Sprintf("trust %s again: heard from it (suspected since %s)", peer, since)
	case spec.Abort:
		v := spec.AbortVerdict{Snap: f.Snap, Cause: f.Peer, Initiator: f.Initiator}
		return fmt.Sprintf("%v: it waits for %s, nothing heard since %s", v, peer, since)
	}
	return fmt.Sprintf("%s %s", f.Action, peer)
}

// suspicion renders a Suspect fault of peer, last heard from at since:
// its evidence (silence for how long, or Why), or, for a peer that
// finished, its graceful stop.
func (f Fault) suspicion(peer, since string) string {
	why := f.Why
	if why == "" {
		why = "nothing heard since " + since
	}
	switch {
	case f.Finished:
		return fmt.Sprintf("%s has stopped after saying it was done (a graceful stop): %s", peer, why)
	case f.Why != "":
		return fmt.Sprintf("suspect %s: %s (nothing heard since %s)", peer, f.Why, since)
	case !f.Since.IsZero():
		return fmt.Sprintf("suspect %s: nothing heard since %s (%v)", peer, since, f.At.Sub(f.Since).Round(time.Millisecond))
	}
	return fmt.Sprintf("suspect %s: nothing heard since %s", peer, since)
}

// heardSince renders a last-heard time: "12:00:01.250", or "it started"
// for a peer never heard from.
func heardSince(t time.Time) string {
	if t.IsZero() {
		return "this node started (never heard from)"
	}
	return t.Format("15:04:05.000")
}

// detector is a node's failure detector state (under the node's core
// lock).
type detector struct {
	cfg    DetectorConfig
	inc    uint64 // this node's incarnation, in its heartbeats
	ticker *time.Ticker

	out    []spec.Channel      // outgoing channels, topology order
	sent   []bool              // by outgoing index: a frame sent since the last tick
	outIdx map[spec.ProcID]int // receiver -> outgoing index (every frame sent: no scan of out)
	inIdx  map[spec.ProcID]int // sender -> incoming index (every frame heard)

	peers     []spec.ProcID // senders of the incoming channels, topology order
	heard     []bool        // by incoming index: a frame arrived since the last tick
	silent    []int         // by incoming index: ticks in a row that heard nothing
	last      []time.Time   // by incoming index: last tick at which one had
	peerInc   []uint64      // by incoming index: the peer's incarnation
	suspected []time.Time   // by incoming index: when suspected (zero: not)
	done      []bool        // by incoming index: KindDone arrived
	ever      []bool        // by incoming index: heard from at least once

	hints chan hint // Hint's evidence, for the node goroutine
}

// hint is evidence that a peer is gone, besides silence.
type hint struct {
	peer spec.ProcID
	why  string
}

func newDetector(cfg DetectorConfig, inc uint64, t *spec.Topology, self spec.ProcID, now time.Time) *detector {
	d := &detector{cfg: cfg, inc: inc, out: t.Out(self)}
	d.sent = make([]bool, len(d.out))
	d.outIdx, d.inIdx = make(map[spec.ProcID]int, len(d.out)), map[spec.ProcID]int{}
	for j, c := range d.out {
		d.outIdx[c.To] = j
	}
	for i, c := range t.In(self) {
		d.peers = append(d.peers, c.From)
		d.inIdx[c.From] = i
	}
	k := len(d.peers)
	d.heard, d.last, d.peerInc, d.suspected, d.done = make([]bool, k), make([]time.Time, k), make([]uint64, k), make([]time.Time, k), make([]bool, k)
	d.ever, d.silent = make([]bool, k), make([]int, k)
	d.hints = make(chan hint, 16)
	for i := range d.last {
		d.last[i] = now
	}
	if cfg.Enabled() {
		d.ticker = time.NewTicker(cfg.Interval)
	}
	return d
}

// lastHeard is when the peer of incoming index i was last heard from
// (the tick that saw it), zero if never.
func (d *detector) lastHeard(i int) time.Time {
	if !d.ever[i] {
		return time.Time{}
	}
	return d.last[i]
}

// tick is the ticker's channel, nil without a detector.
func (d *detector) tick() <-chan time.Time {
	if d == nil || d.ticker == nil {
		return nil
	}
	return d.ticker.C
}

func (d *detector) stop() {
	if d != nil && d.ticker != nil {
		d.ticker.Stop()
	}
}

// in returns the incoming index of the channel from q, or -1.
func (d *detector) in(q spec.ProcID) int {
	if i, ok := d.inIdx[q]; ok {
		return i
	}
	return -1
}

// heardOn notes a frame from q.
func (d *detector) heardOn(q spec.ProcID) {
	if i := d.in(q); i >= 0 {
		d.heard[i] = true
	}
}

// sentOn notes a frame sent on c.
func (d *detector) sentOn(c spec.Channel) {
	if j, ok := d.outIdx[c.To]; ok && d.out[j] == c {
		d.sent[j] = true
	}
}

// control takes a heartbeat or done frame from q.
func (d *detector) control(q spec.ProcID, f wire.Frame) {
	i := d.in(q)
	if i < 0 {
		return
	}
	d.heard[i] = true
	d.peerInc[i] = f.Seq
	if f.Kind == wire.KindDone {
		d.done[i] = true
	}
}

// idle returns the outgoing channels nothing was sent on since the last
// tick (they get a heartbeat) and resets the marks.
func (d *detector) idle() []spec.Channel {
	var out []spec.Channel
	for j, c := range d.out {
		if !d.sent[j] {
			out = append(out, c)
		}
		d.sent[j] = false
	}
	return out
}

// unheard returns the peers never heard from whose silence since the
// node started has just reached the ticks that would make a heard peer
// suspected, while the startup grace still holds (once per peer).
func (d *detector) unheard() []int {
	var out []int
	heard, grace := d.cfg.silentTicks(true), d.cfg.silentTicks(false)
	for i := range d.peers {
		if !d.ever[i] && d.suspected[i].IsZero() && time.Duration(d.silent[i]) == heard && heard < grace {
			out = append(out, i)
		}
	}
	return out
}

// check is one tick at now: it returns the peers to suspect (silent for
// ceil(Timeout/Interval) ticks in a row, not suspected) and to trust
// again (suspected, heard since the last tick).
func (d *detector) check(now time.Time) (suspect, trust []int) {
	for i := range d.peers {
		if d.heard[i] {
			d.last[i] = now
			d.heard[i] = false
			d.ever[i] = true
			d.silent[i] = 0
			if !d.suspected[i].IsZero() {
				trust = append(trust, i)
			}
			continue
		}
		d.silent[i]++
		if d.suspected[i].IsZero() && time.Duration(d.silent[i]) >= d.cfg.silentTicks(d.ever[i]) {
			suspect = append(suspect, i)
		}
	}
	return suspect, trust
}

var (
	// ErrPeerSuspected: Initiate refused while the node suspects a peer.
	ErrPeerSuspected = errors.New("a peer is suspected")
	// ErrFinished: SendApp after Finish.
	ErrFinished = errors.New("node finished: no more transfers")
)

// greet sends a first heartbeat on every outgoing channel, so that every
// peer learns this node's incarnation even if the channel is never idle.
func (n *Node) greet() {
	if n.det.cfg.Enabled() {
		n.heartbeats(n.det.out)
	}
}

// heartbeats sends a heartbeat on each of cs. A heartbeat is not an
// algorithm frame: not counted, not traced.
func (n *Node) heartbeats(cs []spec.Channel) {
	for _, c := range cs {
		if err := n.transmit(wire.Envelope{Chan: c, Frame: wire.Frame{Kind: wire.KindHeartbeat, Seq: n.det.inc}}); err != nil && !errors.Is(err, transport.ErrClosed) {
			n.fail(fmt.Errorf("runtime %s: heartbeat on %s: %w", string(n.self), c, err))
		}
	}
}

// detect is one tick of the failure detector at now: heartbeats on idle
// outgoing channels, then suspicions and their withdrawals, each
// suspicion followed by the aborts it causes.
func (n *Node) detect(now time.Time) {
	d := n.det
	n.heartbeats(d.idle())
	suspect, trust := d.check(now)
	n.trust(trust, now)
	for _, i := range suspect {
		n.suspect(i, now, "")
	}
	if n.cfg.OnUnheard != nil {
		for _, i := range d.unheard() {
			n.cfg.OnUnheard(d.peers[i], time.Duration(d.silent[i])*d.cfg.Interval)
		}
	}
}

// trust withdraws the suspicions of the peers of incoming indexes is.
func (n *Node) trust(is []int, now time.Time) {
	d := n.det
	for _, i := range is {
		q := d.peers[i]
		if st, err := n.core.Unsuspect(q); err != nil {
			n.fail(err)
		} else {
			n.after(st)
		}
		n.fault(Fault{Action: spec.Unsuspect, Node: n.self, Peer: q, Incarnation: d.peerInc[i], Since: d.suspected[i], At: now})
		d.suspected[i] = time.Time{}
	}
}

// suspect suspects the peer of incoming index i (core.Suspect), for why
// ("" for silence), and aborts the snapshots waiting for it.
func (n *Node) suspect(i int, now time.Time, why string) {
	d := n.det
	q := d.peers[i]
	st, err := n.core.Suspect(q)
	if err != nil {
		n.fail(err)
		return
	}
	d.suspected[i] = now
	n.after(st)
	n.fault(Fault{Action: spec.Suspect, Node: n.self, Peer: q, Incarnation: d.peerInc[i], Since: d.lastHeard(i), At: now, Finished: d.done[i], Why: why})
	for _, s := range n.core.WaitingOn(q) {
		n.abort(s, i, now)
	}
}

// ErrNotInNeighbour: Suspect names a process the node does not hear
// from (not the sender of one of its incoming channels).
var ErrNotInNeighbour = errors.New("not an in-neighbour: a node hears, and suspects, only the senders of its incoming channels")

// Suspect has the node suspect its in-neighbour q now, as its detector
// does once q's silence passes the timeout: the node's share of Detect(q)
// or FalseSuspect(q) (tla/ChandyLamportFaults.tla lines 110-124), then
// Abort(s, q) (lines 132-138) for every snapshot whose marker from q it
// waits for, each a Fault (OnFault, the Collector), as detect does. It is
// the detector's suspicion source for a caller that decides suspicions
// itself: conformance's runtime lockstep schedules them, with Interval 0
// so that no timer suspects or trusts on its own; an external membership
// service could too. why is the evidence (Fault.Why). It refuses a q
// that is not an in-neighbour (ErrNotInNeighbour) or is suspected
// already (core.ErrAlreadySuspected).
func (n *Node) Suspect(q spec.ProcID, why string) error {
	var err error
	if e := n.exec(false, func() { err = n.suspectNow(q, why) }); e != nil {
		return e
	}
	return err
}

// suspectNow is Suspect's step, under cmu.
func (n *Node) suspectNow(q spec.ProcID, why string) error {
	i := n.det.in(q)
	switch {
	case i < 0:
		return fmt.Errorf("runtime %s: suspect %s: %w", string(n.self), string(q), ErrNotInNeighbour)
	case !n.det.suspected[i].IsZero():
		return fmt.Errorf("runtime %s: suspect %s: %w", string(n.self), string(q), core.ErrAlreadySuspected)
	}
	n.suspect(i, time.Now(), why)
	return nil
}

// Hint gives the failure detector evidence that peer q is gone besides
// its silence, e.g. that its listener refuses connections: q is then
// suspected at once instead of after the timeout, if the node has heard
// from q before (a peer not started yet refuses connections too) and
// has heard nothing from it since the last tick. Hint never blocks (it is
// safe from a transport's callbacks); evidence that finds the queue full
// is dropped, and the timeout still applies.
func (n *Node) Hint(q spec.ProcID, why string) {
	select {
	case n.det.hints <- hint{peer: q, why: why}:
	default:
	}
}

// hinted acts on Hint's evidence.
func (n *Node) hinted(h hint, now time.Time) {
	d := n.det
	i := d.in(h.peer)
	if i < 0 || !d.ever[i] || d.heard[i] || !d.suspected[i].IsZero() || !d.cfg.Enabled() {
		return
	}
	n.suspect(i, now, h.why)
}

// abortIfWaiting aborts snapshot s, just recorded here, if it waits for
// a marker from a suspected peer: Abort(s, q) is enabled at once.
func (n *Node) abortIfWaiting(s spec.SnapID) {
	d := n.det
	for i, q := range d.peers {
		if !d.suspected[i].IsZero() && n.core.Suspected(q) {
			for _, w := range n.core.WaitingOn(q) {
				if w == s {
					n.abort(s, i, time.Now())
					return
				}
			}
		}
	}
}

// abort aborts s, the peer of incoming index i the cause (core.Abort), and
// reports it to the collector and OnFault.
func (n *Node) abort(s spec.SnapID, i int, now time.Time) {
	d := n.det
	q := d.peers[i]
	st, err := n.core.Abort(s, q)
	if err != nil {
		n.fail(err)
		return
	}
	f := Fault{Action: spec.Abort, Node: n.self, Peer: q, Incarnation: d.peerInc[i], Since: d.lastHeard(i), At: now, Snap: s}
	if n.initiated[s] {
		f.Initiator = n.self
	}
	delete(n.initiated, s)
	n.after(st)
	if n.col != nil {
		n.col.Aborted(f)
	}
	n.fault(f)
}

// fault records f and hands it to the Collector (suspicions) and
// OnFault.
func (n *Node) fault(f Fault) {
	n.mu.Lock()
	n.faults = append(n.faults, f)
	n.mu.Unlock()
	if n.col != nil && f.Action != spec.Abort {
		n.col.Suspected(f)
	}
	if n.cfg.OnFault != nil {
		n.cfg.OnFault(f)
	}
}

// anySuspected returns a peer the node suspects and when it was last
// heard from.
func (n *Node) anySuspected() (spec.ProcID, time.Time, bool) {
	for i, q := range n.det.peers {
		if !n.det.suspected[i].IsZero() {
			return q, n.det.lastHeard(i), true
		}
	}
	return "", time.Time{}, false
}

// EverHeard reports whether the node has heard from q (any frame) since
// it started: false for an in-neighbour never heard from, which may not
// exist yet (a node started alone); true for a process the node does not
// hear, or without a detector (no evidence either way).
func (n *Node) EverHeard(q spec.ProcID) bool {
	heard := true
	_ = n.exec(false, func() {
		if i := n.det.in(q); i >= 0 && n.det.cfg.Enabled() {
			heard = n.det.ever[i] || n.det.heard[i]
		}
	})
	return heard
}

// Faults returns every suspicion, withdrawal and abort of the node so
// far, in order.
func (n *Node) Faults() []Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Fault(nil), n.faults...)
}

// Finish is the first half of a graceful stop: the node makes no more
// application sends (SendApp returns ErrFinished) and tells each
// out-neighbour so with a KindDone frame, behind everything it sent
// before (FIFO). Markers still flow, so snapshots under way complete.
func (n *Node) Finish() error {
	return n.exec(false, func() {
		if n.finished {
			return
		}
		n.finished = true
		for _, c := range n.det.out {
			if err := n.transmit(wire.Envelope{Chan: c, Frame: wire.Frame{Kind: wire.KindDone, Seq: n.det.inc}}); err != nil {
				n.fail(fmt.Errorf("runtime %s: done on %s: %w", string(n.self), c, err))
			}
		}
	})
}

// Drain is what a graceful stop still waits for at this node: the
// in-neighbours heard from that have neither said they are done (Finish)
// nor are suspected, and the snapshots recorded here that are not
// complete. Unheard are those of Peers never heard from (in their
// startup grace): a process's stop suspects them rather than wait.
type Drain struct {
	Peers   []spec.ProcID
	Snaps   []spec.SnapID
	Unheard []spec.ProcID
}

// Empty reports whether nothing is left to wait for.
func (d Drain) Empty() bool { return len(d.Peers) == 0 && len(d.Snaps) == 0 }

// Draining reports what a graceful stop still waits for (see Drain).
func (n *Node) Draining() (Drain, error) {
	var dr Drain
	err := n.exec(false, func() {
		d := n.det
		for i, q := range d.peers {
			if !d.done[i] && d.suspected[i].IsZero() {
				dr.Peers = append(dr.Peers, q)
				if !d.ever[i] {
					dr.Unheard = append(dr.Unheard, q)
				}
			}
		}
		dr.Snaps = n.core.Active()
	})
	return dr, err
}

// Crash stops the node as a crash would: its goroutine ends, nothing more
// is sent (heartbeats included), and no one is told (the collector is
// not notified). For tests of failure handling; peers find out through
// their failure detectors.
func (n *Node) Crash() {
	n.crashed.Store(true)
	n.Stop()
}
