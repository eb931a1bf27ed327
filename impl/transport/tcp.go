package transport

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// TCP is a Transport with one TCP connection per directed channel.
//
// Protocol. The sender of channel P->Q dials Q's address and writes a
// wire.Hello naming P->Q. Q's listener checks that Q is served here and
// that P->Q is a channel of the topology, else it replies with a rejection
// and closes the connection. If it accepts, it replies with Last, the
// number of frames of P->Q it has delivered so far, then reads frames and
// answers with cumulative wire.Acks.
//
// Reconnect. The sender numbers the frames of each channel 1, 2, ... and
// keeps every frame until it is acknowledged. After a cut it re-dials (with
// backoff) and resends from Last+1; frames on a connection are numbered
// implicitly from there, so the receiver neither loses, duplicates nor
// reorders frames across cuts. A new connection for a channel replaces the
// old one only after the old reader has stopped, so Last is exact.
//
// Faults. A connection whose hello or frames break the protocol is closed
// and reported through Errors and Config.OnError; other connections go on.
// There is no authentication: run it on a trusted network.
//
// Restarts. The frame counts live in memory, so a channel can only be
// resumed between the same two incarnations of its ends. Each TCP draws a
// random nonzero 64-bit incarnation when it is created (Incarnation); the
// Hello carries the sender's, an accepting HelloReply the receiver's. Per
// channel, the sender remembers the first receiver incarnation it saw and
// the receiver the first sender incarnation. When a later handshake shows
// another one, that end restarted and the channel's history is gone:
//
//   - the receiver restarted: the sender fails the channel;
//   - the sender restarted: the receiver fails the channel and answers
//     this and every later hello on it with a "stale" HelloReply, on which
//     the (new) sender fails its channel too.
//
// A channel that fails stops for good: a *PeerRestartedError (matching
// ErrPeerRestarted and wire.ErrProtocol) naming the restarted end and both
// incarnations is reported once, the channel is not dialed again, later
// Sends on it fail with that error, and Close lists its unacknowledged
// frames in ShutdownError.Unacked. As a further check the sender also
// fails the channel if the receiver's Last falls outside [acknowledged,
// sent]. Crash recovery is not done by the transport: restart every node
// from one snapshot (runtime's restore).
type TCP struct {
	top   *spec.Topology
	cfg   TCPConfig
	local map[spec.ProcID]bool
	inc   uint64 // this transport's incarnation

	lns     map[spec.ProcID]net.Listener
	inboxes map[spec.ProcID]*Inbox
	in      map[spec.Channel]*inChan
	out     map[spec.Channel]*outChan
	outs    []*outChan // out by Topology.ChanIndex, nil where not served

	mu      sync.RWMutex // Send holds it shared; Close exclusively
	closing bool

	stop   chan struct{} // closed when the transport stops
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connMu sync.Mutex
	conns  map[net.Conn]struct{} // accepted connections

	errMu   sync.Mutex
	errs    []error
	stats   TCPStats
	onErrMu sync.Mutex // serializes OnError calls
}

// TCPConfig configures a TCP transport. Zero durations take defaults.
type TCPConfig struct {
	// Addrs maps processes to listen addresses ("127.0.0.1:0" picks a
	// port; see TCP.Addr). A local process listens on its address unless
	// Listeners has one; a remote process is dialed at its address.
	Addrs map[spec.ProcID]string
	// Listeners are pre-bound listeners for local processes (optional).
	// The transport closes them on Close.
	Listeners map[spec.ProcID]net.Listener
	// Local lists the processes this transport serves: it sends on their
	// outgoing channels and delivers to their inboxes. nil means all.
	Local []spec.ProcID
	// MaxFrameSize bounds a frame's length field on send and receive;
	// default and maximum wire.MaxFrameSize.
	MaxFrameSize int
	// DialTimeout bounds a dial and HandshakeTimeout the hello exchange
	// (defaults 2s). WriteTimeout bounds each write (default 5s).
	DialTimeout, HandshakeTimeout, WriteTimeout time.Duration
	// RedialMin and RedialMax bound the backoff between failed dials
	// (defaults 5ms and 250ms).
	RedialMin, RedialMax time.Duration
	// DrainTimeout is how long Close waits for outstanding frames to be
	// acknowledged before it stops (default 2s).
	DrainTimeout time.Duration
	// Restored is the snapshot the local processes were restored from (0:
	// started fresh). Every hello carries it, and a hello carrying
	// another is refused (wire.HelloReply.Mismatch): the channel fails
	// at both ends with a *PeerRestartedError naming both snapshot ids.
	Restored spec.SnapID
	// OnError, if set, is called with each connection error, from
	// transport goroutines, one call at a time. It must not block for long
	// and must not call Close.
	OnError func(error)
}

// TCPStats counts connection events.
type TCPStats struct {
	Dials      int // successful handshakes as a sender
	DialErrors int // failed dials or handshakes as a sender
	Accepted   int // accepted handshakes as a receiver
	Rejected   int // hellos rejected or unreadable, stale ones included
	ConnErrors int // connections closed for a protocol violation
	Failed     int // channels stopped for good (PeerRestartedError), either end
	Resent     int // frames sent again after a reconnect
	Cuts       int // CutConnection calls that closed something
}

// ConnError describes a failed or rejected connection.
type ConnError struct {
	Op     string       // "dial", "handshake", "accept", "read", "write", "ack"
	Chan   spec.Channel // zero if not known yet
	Remote string       // remote address, if known
	Err    error
}

func (e *ConnError) Error() string {
	s := "transport: " + e.Op
	if e.Chan != (spec.Channel{}) {
		s += " " + e.Chan.String()
	}
	if e.Remote != "" {
		s += " (" + e.Remote + ")"
	}
	return s + ": " + e.Err.Error()
}

func (e *ConnError) Unwrap() error { return e.Err }

// ErrRejected is wrapped by dial errors when the receiver refused the hello.
var ErrRejected = errors.New("transport: hello rejected")

// ErrPeerRestarted is matched by a *PeerRestartedError: a channel one of
// whose ends restarted, so that its state is lost. It wraps
// wire.ErrProtocol.
var ErrPeerRestarted = fmt.Errorf("transport: peer restarted (channel state lost): %w", wire.ErrProtocol)

// Side is one end of a channel.
type Side uint8

const (
	SideUnknown  Side = iota
	SideSender        // the channel's From
	SideReceiver      // the channel's To
)

func (s Side) String() string {
	switch s {
	case SideSender:
		return "sender"
	case SideReceiver:
		return "receiver"
	}
	return "unknown side"
}

// PeerRestartedError reports a channel stopped by a restart, seen by the
// end At. Restarted is the end that restarted: its incarnation was Was the
// first time this end saw it on the channel and is Now (0 if not known: a
// sender told by the receiver that a later incarnation of its own process
// took the channel over). Restarted is
// SideUnknown (and Was, Now 0) when the incarnations agreed but the
// receiver's Last did not fit: Last must lie in [Acked, Sent], the frames
// the sender had acknowledged and sent. Acked, Sent and Unacked are set
// when At is SideSender; Last when the receiver's count is known. Pending
// frames stay unacknowledged and are listed by Close. Mismatch is set
// (and Restarted SideUnknown) when the channel's ends were restored from
// different snapshots, SenderFrom and ReceiverFrom (0: started fresh):
// the receiver refuses the sender's hello, and the channel cannot resume
// until every node restarts from one snapshot.
type PeerRestartedError struct {
	Chan        spec.Channel
	At          Side   // the end reporting
	Restarted   Side   // the end that restarted
	Was, Now    uint64 // its incarnation: first seen, seen now
	Acked, Sent uint64 // the range Last had to lie in
	Last        uint64 // what the receiver holds
	Unacked     int    // frames kept, never to be delivered

	Mismatch                 bool
	SenderFrom, ReceiverFrom spec.SnapID
}

func (e *PeerRestartedError) Error() string {
	s := "transport: channel " + e.Chan.String() + " stopped: "
	switch {
	case e.Mismatch:
		s += fmt.Sprintf("sender %s was %s, receiver %s %s: nodes restored from different snapshots cannot resume a channel; restart every node from one snapshot",
			string(e.Chan.From), restoredFrom(e.SenderFrom), string(e.Chan.To), restoredFrom(e.ReceiverFrom))
	case e.Restarted == SideSender || e.Restarted == SideReceiver:
		p := e.Chan.From
		if e.Restarted == SideReceiver {
			p = e.Chan.To
		}
		if e.Now == 0 {
			s += fmt.Sprintf("another incarnation of %s %s (this one is %016x) reached the receiver", e.Restarted, string(p), e.Was)
		} else {
			s += fmt.Sprintf("%s %s restarted (incarnation %016x, was %016x)", e.Restarted, string(p), e.Now, e.Was)
		}
		s += ": its channel state is lost"
		if e.At == SideReceiver {
			s += fmt.Sprintf("; its hellos are refused, %d frames were delivered", e.Last)
		}
	default:
		s += fmt.Sprintf("receiver holds %d frames, expected %d..%d (%d acknowledged, %d sent): peer restarted, its channel state is lost",
			e.Last, e.Acked, e.Sent, e.Acked, e.Sent)
	}
	if e.At == SideSender {
		s += fmt.Sprintf("; %d frames kept unacknowledged", e.Unacked)
	}
	return s
}

func (e *PeerRestartedError) Unwrap() error { return ErrPeerRestarted }

// restoredFrom says what a node started from: "restored from snapshot
// N", or "started fresh" for 0.
func restoredFrom(id spec.SnapID) string {
	if id == 0 {
		return "started fresh (restored from no snapshot)"
	}
	return fmt.Sprintf("restored from snapshot %d", id)
}

const maxKeptErrors = 64

var _ Transport = (*TCP)(nil)

// NewTCP starts listening for the local processes and returns the running
// transport. Channels are dialed on their first Send.
func NewTCP(t *spec.Topology, cfg TCPConfig) (*TCP, error) {
	cfg = cfg.withDefaults()
	tr := &TCP{
		top: t, cfg: cfg, local: map[spec.ProcID]bool{}, inc: newIncarnation(),
		lns: map[spec.ProcID]net.Listener{}, inboxes: map[spec.ProcID]*Inbox{},
		in: map[spec.Channel]*inChan{}, out: map[spec.Channel]*outChan{},
		stop: make(chan struct{}), conns: map[net.Conn]struct{}{},
	}
	tr.ctx, tr.cancel = context.WithCancel(context.Background())
	local := cfg.Local
	if local == nil {
		local = t.Procs
	}
	for _, p := range local {
		if !t.Has(p) {
			return nil, fmt.Errorf("%w %q in Local", ErrUnknownProc, string(p))
		}
		tr.local[p] = true
	}
	for _, c := range t.Chans {
		if tr.local[c.From] && !tr.local[c.To] && cfg.Addrs[c.To] == "" {
			return nil, fmt.Errorf("transport: no address for %s, needed by channel %s", string(c.To), c)
		}
	}
	for _, p := range t.Procs {
		if !tr.local[p] {
			continue
		}
		ln := cfg.Listeners[p]
		if ln == nil {
			addr := cfg.Addrs[p]
			if addr == "" {
				tr.closeListeners()
				return nil, fmt.Errorf("transport: no listen address for local process %s", string(p))
			}
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				tr.closeListeners()
				return nil, fmt.Errorf("transport: listen for %s: %w", string(p), err)
			}
		}
		tr.lns[p] = ln
		tr.inboxes[p] = newInbox()
	}
	for _, c := range t.Chans {
		if tr.local[c.To] {
			tr.in[c] = &inChan{}
		}
		if tr.local[c.From] {
			o := &outChan{t: tr, ch: c}
			o.cond = sync.NewCond(&o.mu)
			tr.out[c] = o
		}
	}
	tr.outs = make([]*outChan, len(t.Chans))
	for i, c := range t.Chans {
		tr.outs[i] = tr.out[c]
	}
	for p, ln := range tr.lns {
		tr.wg.Add(1)
		go func() { defer tr.wg.Done(); tr.accept(p, ln) }()
	}
	for _, o := range tr.out {
		tr.wg.Add(1)
		go func() { defer tr.wg.Done(); o.run() }()
	}
	return tr, nil
}

// newIncarnation draws a random nonzero incarnation.
func newIncarnation() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails
		if x := binary.BigEndian.Uint64(b[:]); x != 0 {
			return x
		}
	}
}

// Incarnation is the random id this transport drew when it was created:
// its peers tell a restarted process from a reconnecting one by it.
func (tr *TCP) Incarnation() uint64 { return tr.inc }

func (c TCPConfig) withDefaults() TCPConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DialTimeout, 2*time.Second)
	def(&c.HandshakeTimeout, 2*time.Second)
	def(&c.WriteTimeout, 5*time.Second)
	def(&c.RedialMin, 5*time.Millisecond)
	def(&c.RedialMax, 250*time.Millisecond)
	def(&c.DrainTimeout, 2*time.Second)
	if c.MaxFrameSize <= 0 || c.MaxFrameSize > wire.MaxFrameSize {
		c.MaxFrameSize = wire.MaxFrameSize
	}
	return c
}

func (tr *TCP) closeListeners() {
	for _, ln := range tr.lns {
		ln.Close()
	}
}

// Addr is the address local process p listens on, or "" if p is not local.
func (tr *TCP) Addr(p spec.ProcID) string {
	if ln, ok := tr.lns[p]; ok {
		return ln.Addr().String()
	}
	return ""
}

func (tr *TCP) addrOf(p spec.ProcID) string {
	if a := tr.Addr(p); a != "" {
		return a
	}
	return tr.cfg.Addrs[p]
}

// Send implements Transport. env.Chan.From must be a local process.
func (tr *TCP) Send(env wire.Envelope) error {
	i, err := checkSend(tr.top, env)
	if err != nil {
		return err
	}
	o := tr.outs[i]
	if o == nil {
		return fmt.Errorf("transport: send on %s: %w %s: not served by this transport", env.Chan, ErrUnknownProc, string(env.Chan.From))
	}
	// Encode before taking the locks (on the stack unless the frame is
	// large); the channel's buffer takes a copy.
	var small [256]byte
	b, err := wire.AppendFrame(small[:0], env.Frame)
	if err != nil {
		return fmt.Errorf("transport: send on %s: %w", env.Chan, err)
	}
	if len(b)-4 > tr.cfg.MaxFrameSize {
		return fmt.Errorf("transport: send on %s: %w: %d bytes, max %d", env.Chan, wire.ErrTooLarge, len(b)-4, tr.cfg.MaxFrameSize)
	}
	tr.mu.RLock()
	defer tr.mu.RUnlock()
	if tr.closing {
		return ErrClosed
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed != nil {
		return fmt.Errorf("transport: send on %s: %w", env.Chan, o.failed)
	}
	o.push(b)
	if o.waiting {
		o.cond.Broadcast()
	}
	return nil
}

// Inbox implements Transport. p must be a local process.
func (tr *TCP) Inbox(p spec.ProcID) (*Inbox, error) {
	b, ok := tr.inboxes[p]
	if !ok {
		return nil, fmt.Errorf("%w %q: not served by this transport", ErrUnknownProc, string(p))
	}
	return b, nil
}

// CutConnection closes the current connections of ch at both ends served
// here, as a network fault would; the transport reconnects by itself. It
// is for tests and fault injection and reports whether it closed anything.
func (tr *TCP) CutConnection(ch spec.Channel) bool {
	cut := false
	if o := tr.out[ch]; o != nil {
		o.mu.Lock()
		if o.conn != nil {
			o.conn.Close()
			cut = true
		}
		o.mu.Unlock()
	}
	if in := tr.in[ch]; in != nil {
		in.mu.Lock()
		if in.conn != nil {
			in.conn.Close()
			cut = true
		}
		in.mu.Unlock()
	}
	if cut {
		tr.errMu.Lock()
		tr.stats.Cuts++
		tr.errMu.Unlock()
	}
	return cut
}

// Errors returns the most recent connection errors (at most 64), oldest
// first.
func (tr *TCP) Errors() []error {
	tr.errMu.Lock()
	defer tr.errMu.Unlock()
	return append([]error(nil), tr.errs...)
}

// Stats returns the connection counters.
func (tr *TCP) Stats() TCPStats {
	tr.errMu.Lock()
	defer tr.errMu.Unlock()
	return tr.stats
}

func (tr *TCP) record(err *ConnError, count *int) {
	tr.errMu.Lock()
	if count != nil {
		*count++
	}
	tr.errs = append(tr.errs, err)
	if len(tr.errs) > maxKeptErrors {
		tr.errs = tr.errs[len(tr.errs)-maxKeptErrors:]
	}
	tr.errMu.Unlock()
	if tr.cfg.OnError != nil {
		tr.onErrMu.Lock()
		tr.cfg.OnError(err)
		tr.onErrMu.Unlock()
	}
}

func (tr *TCP) count(f func(*TCPStats)) {
	tr.errMu.Lock()
	f(&tr.stats)
	tr.errMu.Unlock()
}

func (tr *TCP) stopped() bool {
	select {
	case <-tr.stop:
		return true
	default:
		return false
	}
}

// Close implements Transport. It first waits up to DrainTimeout for every
// sent frame to be acknowledged, then closes listeners and connections and
// waits for all goroutines. Frames still unacknowledged are reported in
// ShutdownError.Unacked, frames delivered here but not read from an Inbox
// in ShutdownError.Undelivered.
func (tr *TCP) Close() error {
	tr.mu.Lock()
	if tr.closing {
		tr.mu.Unlock()
		return nil
	}
	tr.closing = true
	tr.mu.Unlock()

	deadline := time.Now().Add(tr.cfg.DrainTimeout)
	for _, o := range tr.out {
		o.waitAcked(deadline)
	}

	// Acknowledge every frame delivered here before hanging up, so that
	// a peer closing at the same moment does not wait out its own drain
	// for acks the closed connections would have lost.
	for _, in := range tr.in {
		in.mu.Lock()
		c := in.conn
		in.mu.Unlock()
		if c != nil {
			_ = in.ack(c, tr.cfg.WriteTimeout)
		}
	}
	close(tr.stop)
	tr.cancel()
	tr.closeListeners()
	tr.connMu.Lock()
	for c := range tr.conns {
		c.Close()
	}
	tr.connMu.Unlock()
	for _, o := range tr.out {
		o.mu.Lock()
		if o.conn != nil {
			o.conn.Close()
		}
		o.cond.Broadcast()
		o.mu.Unlock()
	}
	tr.wg.Wait()

	se := &ShutdownError{}
	for _, p := range tr.top.Procs {
		if b := tr.inboxes[p]; b != nil {
			se.Undelivered = append(se.Undelivered, b.shut()...)
		}
	}
	for _, c := range tr.top.Chans {
		o := tr.out[c]
		if o == nil {
			continue
		}
		o.mu.Lock()
		o.each(func(b []byte) {
			if f, err := wire.Decode(b); err == nil {
				se.Unacked = append(se.Unacked, wire.Envelope{Chan: c, Frame: f})
			}
		})
		o.mu.Unlock()
	}
	if len(se.Undelivered) > 0 || len(se.Unacked) > 0 {
		return se
	}
	return nil
}

// ---- receiving side ----

// inChan is the receiving state of one channel.
type inChan struct {
	hsMu      sync.Mutex // serializes connection takeovers
	mu        sync.Mutex
	delivered uint64     // frames delivered to the inbox so far
	conn      net.Conn   // current connection, nil if none
	ackMu     sync.Mutex // serializes acks on conn
	acked     uint64     // the last ack written on conn
	done      chan struct{}
	// peer is the sender incarnation first seen, 0 before the first
	// hello; failed, once set, refuses every later hello.
	peer   uint64
	failed *PeerRestartedError
}

func (tr *TCP) accept(p spec.ProcID, ln net.Listener) {
	backoff := time.Millisecond
	for {
		c, err := ln.Accept()
		if err != nil {
			if tr.stopped() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			tr.record(&ConnError{Op: "accept", Err: err}, nil)
			select {
			case <-time.After(backoff):
			case <-tr.stop:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = time.Millisecond
		tr.connMu.Lock()
		if tr.stopped() {
			tr.connMu.Unlock()
			c.Close()
			return
		}
		tr.conns[c] = struct{}{}
		tr.wg.Add(1)
		tr.connMu.Unlock()
		go func() {
			defer tr.wg.Done()
			tr.serveConn(p, c)
			c.Close()
			tr.connMu.Lock()
			delete(tr.conns, c)
			tr.connMu.Unlock()
		}()
	}
}

// serveConn runs the receiving end of one connection to local process p.
func (tr *TCP) serveConn(p spec.ProcID, c net.Conn) {
	remote := c.RemoteAddr().String()
	c.SetDeadline(time.Now().Add(tr.cfg.HandshakeTimeout))
	br := bufio.NewReaderSize(c, 64<<10)
	h, err := wire.ReadHello(br)
	if err != nil {
		if errors.Is(err, wire.ErrVersion) {
			// Answer in the peer's version if it is an old one: the
			// rejection layout is the same, so it reads the reason.
			c.Write(wire.EncodeHelloReply(wire.HelloReply{Version: wire.ReplyVersion(h.Version), Reason: err.Error()}))
		}
		tr.record(&ConnError{Op: "handshake", Remote: remote, Err: err}, &tr.stats.Rejected)
		return
	}
	ch := h.Chan()
	var reason string
	switch {
	case h.To != p:
		reason = fmt.Sprintf("this listener serves %s, not %s", string(p), string(h.To))
	case !tr.top.Has(h.From):
		reason = fmt.Sprintf("unknown peer %q", string(h.From))
	case !tr.top.HasChan(ch):
		reason = fmt.Sprintf("no channel %s in the topology", ch)
	}
	if reason != "" {
		c.Write(wire.EncodeHelloReply(wire.HelloReply{Reason: reason}))
		tr.record(&ConnError{Op: "handshake", Chan: ch, Remote: remote, Err: fmt.Errorf("%w: %s", ErrRejected, reason)}, &tr.stats.Rejected)
		return
	}
	if h.Restored != tr.cfg.Restored {
		mm := &PeerRestartedError{Chan: ch, At: SideReceiver, Mismatch: true, SenderFrom: h.Restored, ReceiverFrom: tr.cfg.Restored}
		c.Write(wire.EncodeHelloReply(wire.HelloReply{Mismatch: true, Restored: tr.cfg.Restored, Reason: mm.Error()}))
		tr.record(&ConnError{Op: "handshake", Chan: ch, Remote: remote, Err: mm}, &tr.stats.Rejected)
		return
	}
	in := tr.in[ch]

	// Take the channel over: stop the previous reader, then read Last.
	// A hello from another sender incarnation than the first one seen
	// stops the channel for good, the current connection included.
	in.hsMu.Lock()
	in.mu.Lock()
	if in.peer == 0 {
		in.peer = h.Incarnation
	}
	var restarted *PeerRestartedError
	if in.failed == nil && h.Incarnation != in.peer {
		restarted = &PeerRestartedError{Chan: ch, At: SideReceiver, Restarted: SideSender, Was: in.peer, Now: h.Incarnation}
		in.failed = restarted
	}
	stale := in.failed
	old, oldDone := in.conn, in.done
	in.mu.Unlock()
	if old != nil {
		old.Close()
		<-oldDone
	}
	in.mu.Lock()
	if tr.stopped() {
		in.mu.Unlock()
		in.hsMu.Unlock()
		return
	}
	if stale != nil {
		if restarted != nil {
			restarted.Last = in.delivered
		}
		in.mu.Unlock()
		in.hsMu.Unlock()
		c.Write(wire.EncodeHelloReply(wire.HelloReply{Stale: true, Incarnation: tr.inc, Known: stale.Was,
			Reason: fmt.Sprintf("channel %s stopped: it carried sender incarnation %016x, this hello has %016x", ch, stale.Was, h.Incarnation)}))
		if restarted != nil {
			tr.record(&ConnError{Op: "handshake", Chan: ch, Remote: remote, Err: restarted}, &tr.stats.Failed)
		}
		tr.count(func(s *TCPStats) { s.Rejected++ })
		return
	}
	done := make(chan struct{})
	in.conn, in.done = c, done
	last := in.delivered
	in.mu.Unlock()
	in.ackMu.Lock()
	in.acked = last // the reply's Last acknowledges them
	in.ackMu.Unlock()
	in.hsMu.Unlock()
	defer func() {
		c.Close()
		in.mu.Lock()
		if in.conn == c {
			in.conn, in.done = nil, nil
		}
		in.mu.Unlock()
		close(done)
	}()

	if _, err := c.Write(wire.EncodeHelloReply(wire.HelloReply{Accepted: true, Incarnation: tr.inc, Last: last})); err != nil {
		return
	}
	tr.count(func(s *TCPStats) { s.Accepted++ })
	c.SetDeadline(time.Time{})
	// Frames are delivered in batches: the next frame (waiting for it),
	// then every whole frame already in br, up to maxBatch, with one lock
	// round-trip; then acknowledged.
	b := tr.inboxes[p]
	var batch []wire.Envelope
	var rd frameReader
	for {
		f, err := rd.read(br, tr.cfg.MaxFrameSize)
		if err != nil {
			if errors.Is(err, wire.ErrProtocol) {
				tr.record(&ConnError{Op: "read", Chan: ch, Remote: remote, Err: err}, &tr.stats.ConnErrors)
			}
			return
		}
		batch = rd.buffered(br, tr.cfg.MaxFrameSize, append(batch, wire.Envelope{Chan: ch, Frame: f}))
		in.mu.Lock()
		in.delivered += uint64(len(batch))
		n := in.delivered
		batch = b.pushBatch(batch)
		in.mu.Unlock()
		if testHookBeforeAck != nil {
			testHookBeforeAck()
		}
		if !frameBuffered(br) || n-in.ackedUpTo() >= maxBatch {
			if err := in.ack(c, tr.cfg.WriteTimeout); err != nil {
				return
			}
		}
	}
}

// frameReader reads frames from a connection. A frame that fits in the
// read buffer is decoded in place once its bytes are there and copied
// into a slab (no allocation per frame); others (larger than the buffer,
// over the size limit, or cut short) are read with wire.ReadFrame, which
// gives the same result.
type frameReader struct {
	slab slab
	vc   []uint64 // the clock decoded in place, before its copy
}

func (rd *frameReader) read(br *bufio.Reader, maxSize int) (wire.Frame, error) {
	if pre, err := br.Peek(4); err == nil {
		if n := binary.BigEndian.Uint32(pre); uint64(n) <= uint64(maxSize) && 4+int(n) <= br.Size() {
			if b, err := br.Peek(4 + int(n)); err == nil {
				if f, size, err := wire.DecodeView(b, maxSize, rd.vc); err == nil {
					if cap(f.VC) > cap(rd.vc) {
						rd.vc = f.VC[:0]
					}
					f = rd.slab.clone(f)
					br.Discard(size)
					return f, nil
				}
			}
		}
	}
	return wire.ReadFrame(br, maxSize)
}

// buffered appends to batch the frames already whole in br, decoded in
// place, up to maxBatch in all (all of batch's envelopes are on the
// channel of its first). It never blocks and stops at the first frame
// that is not whole or not valid: read reports that one.
func (rd *frameReader) buffered(br *bufio.Reader, maxSize int, batch []wire.Envelope) []wire.Envelope {
	b, _ := br.Peek(br.Buffered())
	used := 0
	for len(batch) < maxBatch && len(b)-used >= 4 {
		if n := binary.BigEndian.Uint32(b[used:]); uint64(n) > uint64(len(b)-used-4) {
			break
		}
		f, size, err := wire.DecodeView(b[used:], maxSize, rd.vc)
		if err != nil {
			break
		}
		if cap(f.VC) > cap(rd.vc) {
			rd.vc = f.VC[:0]
		}
		batch = append(batch, wire.Envelope{Chan: batch[0].Chan, Frame: rd.slab.clone(f)})
		used += size
	}
	br.Discard(used)
	return batch
}

// maxBatch bounds the frames a receiver delivers at once and the frames it
// leaves unacknowledged while more are arriving.
const maxBatch = 256

// frameBuffered reports whether br holds a whole frame (or at least a
// length prefix that the next read rejects): reading it does not block.
func frameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false // Peek would block
	}
	pre, _ := br.Peek(4)
	return uint64(br.Buffered()-4) >= uint64(binary.BigEndian.Uint32(pre))
}

// testHookBeforeAck, set by tests only, runs between a frame's delivery
// and its ack: it widens the window in which Close races the ack.
var testHookBeforeAck func()

// ackedUpTo is the last frame number acknowledged on the current
// connection.
func (in *inChan) ackedUpTo() uint64 {
	in.ackMu.Lock()
	defer in.ackMu.Unlock()
	return in.acked
}

// ack tells the sender on c, if c is still the channel's connection, that
// every frame delivered so far has arrived. Acks are cumulative and only
// grow: the receiving goroutine and Close (the final ack before hanging
// up) both call it.
func (in *inChan) ack(c net.Conn, timeout time.Duration) error {
	in.ackMu.Lock()
	defer in.ackMu.Unlock()
	in.mu.Lock()
	n, current := in.delivered, in.conn == c
	in.mu.Unlock()
	if !current || n <= in.acked {
		return nil
	}
	c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write(wire.EncodeAck(n)); err != nil {
		return err
	}
	in.acked = n
	return nil
}

// ---- sending side ----

// outChan is the sending state of one channel: the encodings of the
// frames sent and not yet acknowledged (sendBuf), which the writer hands
// to the connection as they are (one write, a writev across chunks, for
// every frame sent meanwhile, no copy). Frames up to base are acknowledged
// and dropped. The writer writes views of the buffer after releasing mu
// (sendBuf never changes bytes once appended).
type outChan struct {
	t  *TCP
	ch spec.Channel

	mu   sync.Mutex
	cond *sync.Cond
	sendBuf
	waiting bool   // the writer waits for frames (Sends wake it)
	written uint64 // highest frame handed to the current connection
	// maxWritten is the highest frame ever handed to a connection.
	maxWritten uint64
	conn       net.Conn // current connection, nil if none
	broken     bool     // the current connection failed
	peer       uint64   // the receiver incarnation first seen, 0 before
	// failed, once set, stops the channel for good: no more dials or
	// sends; frames stay unacknowledged.
	failed *PeerRestartedError
}

// maxWrite bounds the bytes of one write (unless one frame is larger), so
// that a long backlog, after a reconnect say, goes out in pieces that
// each fit WriteTimeout.
const maxWrite = 256 << 10

// drop forgets the frames up to n, acknowledged (base <= n <= sent), and
// wakes Close's drain.
func (o *outChan) drop(n uint64) {
	if n == o.base {
		return
	}
	o.sendBuf.drop(n)
	o.cond.Broadcast()
}

// waitAcked waits until every frame is acknowledged or the deadline passes.
func (o *outChan) waitAcked(deadline time.Time) {
	timer := time.AfterFunc(time.Until(deadline), func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer timer.Stop()
	o.mu.Lock()
	for o.pending() > 0 && o.failed == nil && time.Now().Before(deadline) {
		o.cond.Wait()
	}
	o.mu.Unlock()
}

// run connects when there is something to send and reconnects after cuts.
func (o *outChan) run() {
	tr := o.t
	backoff := tr.cfg.RedialMin
	for {
		o.mu.Lock()
		for o.pending() == 0 && !tr.stopped() {
			o.waiting = true
			o.cond.Wait()
		}
		o.waiting = false
		o.mu.Unlock()
		if tr.stopped() {
			return
		}
		conn, br, last, err := o.connect()
		if err != nil {
			if tr.stopped() {
				return
			}
			var pr *PeerRestartedError
			if errors.As(err, &pr) {
				o.mu.Lock()
				pr.Acked, pr.Sent = o.base, o.sent()
				pr.Unacked = o.pending()
				o.failed = pr
				o.cond.Broadcast()
				o.mu.Unlock()
				tr.record(&ConnError{Op: "handshake", Chan: o.ch, Remote: tr.addrOf(o.ch.To), Err: pr}, &tr.stats.Failed)
				return
			}
			tr.record(&ConnError{Op: "dial", Chan: o.ch, Err: err}, &tr.stats.DialErrors)
			select {
			case <-time.After(backoff):
			case <-tr.stop:
				return
			}
			backoff = min(2*backoff, tr.cfg.RedialMax)
			continue
		}
		backoff = tr.cfg.RedialMin
		o.serve(conn, br, last)
	}
}

// connect dials the receiver and exchanges hellos.
func (o *outChan) connect() (net.Conn, *bufio.Reader, uint64, error) {
	tr := o.t
	d := net.Dialer{Timeout: tr.cfg.DialTimeout}
	conn, err := d.DialContext(tr.ctx, "tcp", tr.addrOf(o.ch.To))
	if err != nil {
		return nil, nil, 0, err
	}
	// Register the connection so that Close and CutConnection reach it.
	o.mu.Lock()
	if tr.stopped() {
		o.mu.Unlock()
		conn.Close()
		return nil, nil, 0, net.ErrClosed
	}
	o.conn, o.broken = conn, false
	o.mu.Unlock()
	fail := func(err error) (net.Conn, *bufio.Reader, uint64, error) {
		conn.Close()
		o.mu.Lock()
		o.conn = nil
		o.mu.Unlock()
		return nil, nil, 0, err
	}
	hello, err := wire.EncodeHello(wire.Hello{From: o.ch.From, To: o.ch.To, Incarnation: tr.inc, Restored: tr.cfg.Restored})
	if err != nil {
		return fail(err)
	}
	conn.SetDeadline(time.Now().Add(tr.cfg.HandshakeTimeout))
	br := bufio.NewReaderSize(conn, 4096)
	var rep wire.HelloReply
	if _, err = conn.Write(hello); err == nil {
		rep, err = wire.ReadHelloReply(br)
	}
	switch {
	case err != nil:
	case rep.Stale:
		// The receiver has stopped the channel. Usually it holds the
		// channel of an earlier incarnation of this sender, and this
		// process is the restarted one. If it names this incarnation, a
		// later one of this sender's process reached it (Now unknown).
		pr := &PeerRestartedError{Chan: o.ch, At: SideSender, Restarted: SideSender, Was: rep.Known, Now: tr.inc}
		if rep.Known == tr.inc {
			pr.Now = 0
		}
		return fail(pr)
	case rep.Mismatch:
		// The ends were restored from different snapshots: the channel
		// cannot resume until both restart from one.
		return fail(&PeerRestartedError{Chan: o.ch, At: SideSender, Mismatch: true, SenderFrom: tr.cfg.Restored, ReceiverFrom: rep.Restored})
	case !rep.Accepted && rep.Version != wire.HandshakeVersion:
		err = fmt.Errorf("%w: %w: the receiver speaks handshake version %d: %s", ErrRejected, wire.ErrVersion, rep.Version, rep.Reason)
	case !rep.Accepted:
		err = fmt.Errorf("%w: %s", ErrRejected, rep.Reason)
	}
	if err != nil {
		return fail(err)
	}
	conn.SetDeadline(time.Time{})
	o.mu.Lock()
	if o.peer == 0 {
		o.peer = rep.Incarnation
	}
	peer := o.peer
	base, sent := o.base, o.sent()
	o.mu.Unlock()
	if rep.Incarnation != peer {
		return fail(&PeerRestartedError{Chan: o.ch, At: SideSender, Restarted: SideReceiver, Was: peer, Now: rep.Incarnation, Last: rep.Last})
	}
	if rep.Last < base || rep.Last > sent {
		return fail(&PeerRestartedError{Chan: o.ch, At: SideSender, Last: rep.Last})
	}
	return conn, br, rep.Last, nil
}

// ack drops frames up to n, which must lie in [base, written].
func (o *outChan) ack(n uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n < o.base || n > o.written {
		return fmt.Errorf("%w: ack %d outside [%d, %d]", wire.ErrProtocol, n, o.base, o.written)
	}
	o.drop(n)
	return nil
}

// serve writes frames from last+1 on conn until it fails or Close.
func (o *outChan) serve(conn net.Conn, br *bufio.Reader, last uint64) {
	tr := o.t
	o.mu.Lock()
	if last > o.base {
		// The receiver holds frames whose acks the cut connection lost:
		// they are acknowledged now (and Close's drain may be waiting).
		o.drop(last)
	}
	o.written = last
	next := o.locate(last + 1)
	resend := 0
	if o.maxWritten > last {
		resend = int(o.maxWritten - last)
	}
	o.mu.Unlock()
	tr.count(func(s *TCPStats) { s.Dials++; s.Resent += resend })

	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		for {
			n, err := wire.ReadAck(br)
			if err == nil {
				err = o.ack(n)
			}
			if err != nil {
				if errors.Is(err, wire.ErrProtocol) {
					tr.record(&ConnError{Op: "ack", Chan: o.ch, Err: err}, &tr.stats.ConnErrors)
				}
				o.mu.Lock()
				o.broken = true
				o.cond.Broadcast()
				o.mu.Unlock()
				conn.Close()
				return
			}
		}
	}()

	// Each round writes the frames sent since the last one (up to
	// maxWrite bytes) with one write, straight from the buffer's chunks.
	var scratch net.Buffers
	for {
		o.mu.Lock()
		for !o.broken && !tr.stopped() && next.k > o.sent() {
			o.waiting = true
			o.cond.Wait()
		}
		o.waiting = false
		if o.broken || tr.stopped() {
			o.mu.Unlock()
			break
		}
		bufs, end := o.round(next, scratch)
		// Acks may arrive as soon as the bytes leave: raise written first.
		o.written = end.k - 1
		o.maxWritten = max(o.maxWritten, o.written)
		o.mu.Unlock()

		conn.SetWriteDeadline(time.Now().Add(tr.cfg.WriteTimeout))
		scratch = bufs
		var err error
		if len(bufs) == 1 {
			_, err = conn.Write(bufs[0])
		} else {
			_, err = bufs.WriteTo(conn) // one writev
		}
		clear(scratch)
		if err != nil {
			break
		}
		next = end
	}
	conn.Close()
	<-ackDone
	o.mu.Lock()
	o.conn = nil
	o.mu.Unlock()
}
