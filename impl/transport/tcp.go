package transport

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
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
// answers with cumulative wire.Acks: one once 1024 frames or 256 KiB wait
// for it, else one ackDelay (5 ms) after it has read all that had
// arrived, so a burst
// of frames costs one ack (and Close acknowledges everything delivered
// before it hangs up).
//
// Flow control. A Send waits while the channel's unacknowledged frames
// take sendWindow (1 MiB) or more and a connection is served, so a
// sender that only Sends runs at most a window and a frame ahead of its
// receiver and its memory stays bounded; the ack thresholds above are a
// quarter of the window, so a receiver that reads is never waited out.
// A caller that must not wait under a lock of its own uses FlowControl
// instead: WaitRoom before the lock, SendNow under it; it then runs
// ahead by a window plus one frame for each of its concurrent senders,
// plus what it sends under the lock without waiting first (the
// runtime's markers, heartbeats and done frames). The receiving
// transport acknowledges what it read off the connection, not what the
// receiving process took from its Inbox: a slow reader never holds a
// sender back. Without a connection (the receiver down or unreachable),
// Sends do not wait and the frames queue until the redial.
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
// Without TCPConfig.TLS there is no authentication: plain TCP is for a
// trusted network (loopback, one machine). With it, every connection is
// mutual TLS and a hello must come from the node its certificate names
// (see TLS, tcp_tls.go).
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
	hint    chanHint   // finds a Send's channel in outs

	closing atomic.Bool // set when Close begins: Sends fail from then on

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
	// TLS, if set, makes every connection mutual TLS (see TLS); nil is
	// plain TCP, for trusted networks only.
	TLS *TLS
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

const maxKeptErrors = 64

var (
	_ Transport   = (*TCP)(nil)
	_ FlowControl = (*TCP)(nil)
)

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
	if err := tr.serveLocal(); err != nil {
		return nil, err
	}
	if err := tr.checkTLS(); err != nil {
		return nil, err
	}
	if err := tr.listen(); err != nil {
		tr.closeListeners()
		return nil, err
	}
	tr.makeChans()
	tr.ctx, tr.cancel = context.WithCancel(context.Background())
	tr.start()
	return tr, nil
}

// serveLocal notes the processes served here (Config.Local, nil: all)
// and checks that every remote process a local one sends to has an
// address.
func (tr *TCP) serveLocal() error {
	local := tr.cfg.Local
	if local == nil {
		local = tr.top.Procs
	}
	for _, p := range local {
		if !tr.top.Has(p) {
			return fmt.Errorf("%w %q in Local", ErrUnknownProc, string(p))
		}
		tr.local[p] = true
	}
	return tr.checkRemotes()
}

// checkRemotes checks that every remote process a local one sends to
// has an address, and that every address (and listener) is of a process
// of the topology: one for a process it lacks is a mistake in the
// config (a typo, another cluster's), not an address to ignore.
func (tr *TCP) checkRemotes() error {
	for _, p := range slices.Sorted(maps.Keys(tr.cfg.Addrs)) {
		if !tr.top.Has(p) {
			return fmt.Errorf("%w %q in Addrs", ErrUnknownProc, string(p))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(tr.cfg.Listeners)) {
		if !tr.top.Has(p) {
			return fmt.Errorf("%w %q in Listeners", ErrUnknownProc, string(p))
		}
	}
	for _, c := range tr.top.Chans {
		if tr.local[c.From] && !tr.local[c.To] && tr.cfg.Addrs[c.To] == "" {
			return fmt.Errorf("transport: no address for %s, needed by channel %s", string(c.To), c)
		}
	}
	return nil
}

// listen opens (or adopts, Config.Listeners) a listener and an inbox for
// each local process.
func (tr *TCP) listen() error {
	for _, p := range tr.top.Procs {
		if !tr.local[p] {
			continue
		}
		ln := tr.cfg.Listeners[p]
		if ln == nil {
			addr := tr.cfg.Addrs[p]
			if addr == "" {
				return fmt.Errorf("transport: no listen address for local process %s", string(p))
			}
			var err error
			if ln, err = net.Listen("tcp", addr); err != nil {
				return fmt.Errorf("transport: listen for %s: %w", string(p), err)
			}
		}
		tr.lns[p] = ln
		tr.inboxes[p] = newInbox()
	}
	return nil
}

// makeChans makes the receiving state of the channels into local
// processes and the sending state of those out of them.
func (tr *TCP) makeChans() {
	tr.outs = make([]*outChan, len(tr.top.Chans))
	for i, c := range tr.top.Chans {
		if tr.local[c.To] {
			tr.in[c] = &inChan{}
		}
		if tr.local[c.From] {
			o := &outChan{t: tr, ch: c}
			o.cond = sync.NewCond(&o.mu)
			tr.out[c], tr.outs[i] = o, o
		}
	}
}

// start runs an acceptor per listener and a sender per outgoing channel.
func (tr *TCP) start() {
	for p, ln := range tr.lns {
		tr.wg.Add(1)
		go func() { defer tr.wg.Done(); tr.accept(p, ln) }()
	}
	for _, o := range tr.out {
		tr.wg.Add(1)
		go func() { defer tr.wg.Done(); o.run() }()
	}
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

// Send implements Transport. env.Chan.From must be a local process. It
// waits while the channel's window is full (see sendWindow).
func (tr *TCP) Send(env wire.Envelope) error { return tr.send(env, true) }

// SendNow implements FlowControl: Send without the window's wait.
func (tr *TCP) SendNow(env wire.Envelope) error { return tr.send(env, false) }

// send is Send, waiting for the window or not.
func (tr *TCP) send(env wire.Envelope, wait bool) error {
	o, err := tr.outOf(env.Chan) // encode validates the frame (checkSend's second half)
	if err != nil {
		return err
	}
	// Encode before taking the lock (on the stack unless the frame is
	// large); the channel's buffer takes a copy.
	var small [256]byte
	b, err := tr.encode(small[:0], env)
	if err != nil {
		return err
	}
	return o.enqueue(b, wait)
}

// outOf is the sending state of channel ch, an error naming ch if this
// transport does not send on it.
func (tr *TCP) outOf(ch spec.Channel) (*outChan, error) {
	i, err := chanIndex(tr.top, &tr.hint, ch)
	if err != nil {
		return nil, err
	}
	o := tr.outs[i]
	if o == nil {
		return nil, fmt.Errorf("transport: send on %s: %w %s: not served by this transport", ch, ErrUnknownProc, string(ch.From))
	}
	return o, nil
}

// WaitRoom implements FlowControl: it waits at most timeout while the
// window of ch is full; ErrNoRoom (naming ch and the bytes waiting) if
// it is still full then, ErrClosed after Close began, the channel's
// failure if it failed, nil once a Send would not wait.
func (tr *TCP) WaitRoom(ch spec.Channel, timeout time.Duration) error {
	o, err := tr.outOf(ch)
	if err != nil {
		return err
	}
	return o.waitRoom(timeout)
}

// encode appends env's frame to dst, refusing one over MaxFrameSize.
func (tr *TCP) encode(dst []byte, env wire.Envelope) ([]byte, error) {
	b, err := wire.AppendFrame(dst, env.Frame)
	if err != nil {
		return nil, fmt.Errorf("transport: send on %s: %w", env.Chan, err)
	}
	if len(b)-4 > tr.cfg.MaxFrameSize {
		return nil, fmt.Errorf("transport: send on %s: %w: %d bytes, max %d", env.Chan, wire.ErrTooLarge, len(b)-4, tr.cfg.MaxFrameSize)
	}
	return b, nil
}

// enqueue takes a copy of frame b into the channel's buffer and wakes
// its writer, first waiting while the window is full (see sendWindow) if
// wait; it refuses after Close began (checked under the channel's lock,
// which Close's drain takes after it set closing, so a frame is either
// queued before the drain looks or refused) or on a failed channel.
func (o *outChan) enqueue(b []byte, wait bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var err error
	if wait {
		err = o.awaitRoom(time.Time{})
	} else {
		err = o.refusal()
	}
	if err != nil {
		return err
	}
	o.push(b)
	if o.waiting {
		o.cond.Broadcast()
	}
	return nil
}

// awaitRoom waits while the window is full, until deadline (none if
// zero): the refusal if the channel refuses, nil once there is room or
// the deadline passed (the caller looks at full again). Called under
// o.mu.
func (o *outChan) awaitRoom(deadline time.Time) error {
	for {
		if err := o.refusal(); err != nil || !o.full() {
			return err
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil
		}
		o.cond.Wait()
	}
}

// refusal is why a Send on the channel is refused, nil if it is not:
// Close began (ErrClosed), or the channel failed. Called under o.mu.
func (o *outChan) refusal() error {
	if o.t.closing.Load() {
		return ErrClosed
	}
	if o.failed != nil {
		return fmt.Errorf("transport: send on %s: %w", o.ch, o.failed)
	}
	return nil
}

// waitRoom is WaitRoom's wait on the channel: enqueue's, bounded by
// timeout (a timer wakes it, only if it waits at all).
func (o *outChan) waitRoom(timeout time.Duration) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.refusal(); err != nil || !o.full() {
		return err
	}
	if timeout > 0 {
		deadline := time.Now().Add(timeout)
		defer o.wakeAt(deadline).Stop()
		if err := o.awaitRoom(deadline); err != nil {
			return err
		}
	}
	if o.full() {
		return o.noRoom(timeout)
	}
	return nil
}

// noRoom is WaitRoom's error for a window that stayed full for timeout.
func (o *outChan) noRoom(timeout time.Duration) error {
	return fmt.Errorf("%w on %s: %d bytes unacknowledged for %v", ErrNoRoom, o.ch, o.size, timeout)
}

// full reports whether a Send must wait for acknowledgements: the
// window is used up and a writer serves a connection that has not
// failed. Called under o.mu; whatever ends the wait (an ack, the
// connection's failure or end, Close, the channel failing) broadcasts
// o.cond.
func (o *outChan) full() bool {
	return o.size >= sendWindow && o.serving && !o.broken && !o.t.stopped()
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
	if !tr.closing.CompareAndSwap(false, true) {
		return nil
	}
	for _, o := range tr.out { // Sends waiting on a window refuse now
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	}
	tr.drain()
	tr.halt()
	return tr.leftOver()
}

// drain waits up to DrainTimeout for every frame sent to be
// acknowledged, then acknowledges every frame delivered here before
// hanging up, so that a peer closing at the same moment does not wait
// out its own drain for acks the closed connections would have lost.
func (tr *TCP) drain() {
	deadline := time.Now().Add(tr.cfg.DrainTimeout)
	for _, o := range tr.out {
		o.waitAcked(deadline)
	}
	for _, in := range tr.in {
		in.mu.Lock()
		c := in.conn
		in.mu.Unlock()
		if c != nil {
			_ = in.ack(c, tr.cfg.WriteTimeout)
		}
	}
}

// halt stops every goroutine: it closes the listeners and connections,
// wakes the senders and waits for all of them.
func (tr *TCP) halt() {
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
}

// leftOver closes the inboxes and reports what they held and what the
// receivers never acknowledged, nil if nothing.
func (tr *TCP) leftOver() error {
	se := &ShutdownError{}
	for _, p := range tr.top.Procs {
		if b := tr.inboxes[p]; b != nil {
			se.Undelivered = append(se.Undelivered, b.shut()...)
		}
	}
	for _, o := range tr.outs {
		if o != nil {
			se.Unacked = o.unacked(se.Unacked)
		}
	}
	if len(se.Undelivered) > 0 || len(se.Unacked) > 0 {
		return se
	}
	return nil
}
