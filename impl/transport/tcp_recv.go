package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

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

// accept serves each connection to local process p's listener on a
// goroutine of its own, until the listener closes.
func (tr *TCP) accept(p spec.ProcID, ln net.Listener) {
	backoff := time.Millisecond
	for {
		c, err := ln.Accept()
		if err == nil {
			backoff = time.Millisecond
			if !tr.serveAccepted(p, c) {
				return
			}
			continue
		}
		wait, ok := tr.acceptFailed(err, backoff)
		if !ok {
			return
		}
		backoff = wait
	}
}

// acceptFailed handles a failed Accept: false when the listener is done
// (closed, or the transport stopped); otherwise it waits out the backoff
// (reporting the error unless it was a timeout) and returns the next one.
func (tr *TCP) acceptFailed(err error, backoff time.Duration) (time.Duration, bool) {
	if tr.stopped() || errors.Is(err, net.ErrClosed) {
		return 0, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return backoff, true
	}
	tr.record(&ConnError{Op: "accept", Err: err}, nil)
	select {
	case <-time.After(backoff):
	case <-tr.stop:
		return 0, false
	}
	return min(2*backoff, time.Second), true
}

// serveAccepted registers c, so that Close reaches it, and serves it on a
// goroutine of its own; false when the transport stopped.
func (tr *TCP) serveAccepted(p spec.ProcID, c net.Conn) bool {
	tr.connMu.Lock()
	if tr.stopped() {
		tr.connMu.Unlock()
		c.Close()
		return false
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
	return true
}

// serveConn runs the receiving end of one connection to local process p,
// phase by phase: read the hello, check it, take the channel over (or
// refuse a stale sender), answer with Last, then receive frames until
// the connection ends.
func (tr *TCP) serveConn(p spec.ProcID, raw net.Conn) {
	c, peer, ok := tr.secureAccepted(raw)
	if !ok {
		return
	}
	a := &accepting{c: c, remote: c.RemoteAddr().String(), peer: peer}
	c.SetDeadline(time.Now().Add(tr.cfg.HandshakeTimeout))
	a.br = bufio.NewReaderSize(c, 64<<10)
	if !tr.readHello(a) || !tr.checkHello(p, a) {
		return
	}
	in := tr.in[a.ch]
	t := tr.takeOver(in, a)
	switch {
	case t.stopped:
		return
	case t.stale != nil:
		tr.refuseStale(a, t)
		return
	}
	defer in.release(c, t.done)
	if _, err := c.Write(wire.EncodeHelloReply(wire.HelloReply{Accepted: true, Incarnation: tr.inc, Last: t.last})); err != nil {
		return
	}
	tr.count(func(s *TCPStats) { s.Accepted++ })
	c.SetDeadline(time.Time{})
	tr.receive(p, in, a)
}

// accepting is a connection being accepted: its reader and, once read,
// its hello.
type accepting struct {
	c      net.Conn
	br     *bufio.Reader
	remote string
	h      wire.Hello
	ch     spec.Channel // h's channel
	peer   string       // the CommonName of the peer's certificate (TLS only)
}

// readHello reads a's hello; an unreadable one is reported and, if it
// is of another version, answered in that version if it is an old one:
// the rejection layout is the same, so the peer reads the reason.
func (tr *TCP) readHello(a *accepting) bool {
	h, err := wire.ReadHello(a.br)
	if err != nil {
		if errors.Is(err, wire.ErrVersion) {
			a.c.Write(wire.EncodeHelloReply(wire.HelloReply{Version: wire.ReplyVersion(h.Version), Reason: err.Error()}))
		}
		tr.record(&ConnError{Op: "handshake", Remote: a.remote, Err: err}, &tr.stats.Rejected)
		return false
	}
	a.h, a.ch = h, h.Chan()
	return true
}

// checkHello refuses (answering and reporting) a hello to local process
// p that names another receiver, an unknown sender or channel, or
// another snapshot than the one the local processes were restored from.
func (tr *TCP) checkHello(p spec.ProcID, a *accepting) bool {
	h := a.h
	reason := tr.refusal(p, h)
	if reason == "" {
		reason = tr.impostor(a)
	}
	if reason != "" {
		a.c.Write(wire.EncodeHelloReply(wire.HelloReply{Reason: reason}))
		tr.record(&ConnError{Op: "handshake", Chan: a.ch, Remote: a.remote, Err: fmt.Errorf("%w: %s", ErrRejected, reason)}, &tr.stats.Rejected)
		return false
	}
	if h.Restored != tr.cfg.Restored {
		mm := &PeerRestartedError{Chan: a.ch, At: SideReceiver, Mismatch: true, SenderFrom: h.Restored, ReceiverFrom: tr.cfg.Restored}
		a.c.Write(wire.EncodeHelloReply(wire.HelloReply{Mismatch: true, Restored: tr.cfg.Restored, Reason: mm.Error()}))
		tr.record(&ConnError{Op: "handshake", Chan: a.ch, Remote: a.remote, Err: mm}, &tr.stats.Rejected)
		return false
	}
	return true
}

// refusal is why a hello to local process p is refused, "" if it is not.
func (tr *TCP) refusal(p spec.ProcID, h wire.Hello) string {
	switch ch := h.Chan(); {
	case h.To != p:
		return fmt.Sprintf("this listener serves %s, not %s", string(p), string(h.To))
	case !tr.top.Has(h.From):
		return fmt.Sprintf("unknown peer %q", string(h.From))
	case !tr.top.HasChan(ch):
		return fmt.Sprintf("no channel %s in the topology", ch)
	}
	return ""
}

// takeover is the outcome of a hello on a channel: the transport
// stopped, the channel stopped for good (stale; restarted if this hello
// stopped it), or the connection now the channel's (done closed when its
// reader ends) with Last, the frames delivered.
type takeover struct {
	stopped   bool
	stale     *PeerRestartedError
	restarted *PeerRestartedError
	done      chan struct{}
	last      uint64
}

// takeOver makes a's connection the channel's: it stops the previous
// reader, then reads Last, which the reply acknowledges. A hello from
// another sender incarnation than the first one seen stops the channel
// for good, the current connection included.
func (tr *TCP) takeOver(in *inChan, a *accepting) takeover {
	in.hsMu.Lock()
	defer in.hsMu.Unlock()
	var t takeover
	var old net.Conn
	var oldDone chan struct{}
	t.restarted, t.stale, old, oldDone = in.meet(a.h)
	if old != nil {
		if testHookTakingOver != nil {
			testHookTakingOver()
		}
		old.Close()
		<-oldDone
	}
	in.mu.Lock()
	switch {
	case tr.stopped():
		t.stopped = true
	case t.stale != nil:
		if t.restarted != nil {
			t.restarted.Last = in.delivered
		}
	default:
		t.done = make(chan struct{})
		in.conn, in.done = a.c, t.done
		t.last = in.delivered
	}
	in.mu.Unlock()
	if t.done != nil {
		in.ackMu.Lock()
		in.acked = t.last // the reply's Last acknowledges them
		in.ackMu.Unlock()
		if testHookTookOver != nil {
			testHookTookOver()
		}
	}
	return t
}

// meet notes the sender incarnation of hello h: the first one seen is
// the channel's, another one stops the channel for good (restarted,
// returned the first time). It returns the channel's failure, if any,
// and its current connection, to be stopped.
func (in *inChan) meet(h wire.Hello) (restarted, stale *PeerRestartedError, old net.Conn, oldDone chan struct{}) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.peer == 0 {
		in.peer = h.Incarnation
	}
	if in.failed == nil && h.Incarnation != in.peer {
		restarted = &PeerRestartedError{Chan: h.Chan(), At: SideReceiver, Restarted: SideSender, Was: in.peer, Now: h.Incarnation}
		in.failed = restarted
	}
	return restarted, in.failed, in.conn, in.done
}

// refuseStale answers a hello on a stopped channel with a "stale" reply
// and reports the restart if this hello revealed it.
func (tr *TCP) refuseStale(a *accepting, t takeover) {
	a.c.Write(wire.EncodeHelloReply(wire.HelloReply{Stale: true, Incarnation: tr.inc, Known: t.stale.Was,
		Reason: fmt.Sprintf("channel %s stopped: it carried sender incarnation %016x, this hello has %016x", a.ch, t.stale.Was, a.h.Incarnation)}))
	if t.restarted != nil {
		tr.record(&ConnError{Op: "handshake", Chan: a.ch, Remote: a.remote, Err: t.restarted}, &tr.stats.Failed)
	}
	tr.count(func(s *TCPStats) { s.Rejected++ })
}

// release ends connection c's reign over the channel and says so (done).
func (in *inChan) release(c net.Conn, done chan struct{}) {
	c.Close()
	in.mu.Lock()
	if in.conn == c {
		in.conn, in.done = nil, nil
	}
	in.mu.Unlock()
	close(done)
}

// receive delivers the frames of a's connection to p's inbox in batches
// (the next frame, waiting for it, then every whole frame already read,
// up to maxBatch, with one lock round-trip) and acknowledges them, until
// the connection fails or breaks the protocol. The frames are decoded
// where they arrived and own copies of their slices (see frameReader).
func (tr *TCP) receive(p spec.ProcID, in *inChan, a *accepting) {
	b := tr.inboxes[p]
	var batch []wire.Envelope
	pending, _ := a.br.Peek(a.br.Buffered())
	rd := newFrameReader(a.c, pending, tr.cfg.MaxFrameSize)
	a.br = nil
	acks := &acker{in: in, c: a.c, later: in.delayedAck(a.c, tr.cfg.WriteTimeout), timeout: tr.cfg.WriteTimeout}
	defer acks.later.stop()
	for {
		var err error
		if batch, err = rd.next(batch, a.ch); err != nil {
			tr.readFailed(a, err)
			return
		}
		batch = rd.more(batch)
		if testHookBeforeDeliver != nil {
			testHookBeforeDeliver()
		}
		var n uint64
		batch, n = in.deliver(b, batch)
		if testHookBeforeAck != nil {
			testHookBeforeAck()
		}
		idle := !rd.whole()
		if err := acks.after(n, rd.read, idle); err != nil {
			return
		}
		yieldToReader(idle)
	}
}

// yieldToReader is called after a batch is delivered: with whole frames
// still to decode (not idle), the receiver yields its processor
// (runtime.Gosched). The delivery woke the inbox's reader, which the
// scheduler queued behind the receiver; a receiver that always finds
// bytes to read would otherwise run out its time slice (10 ms) first,
// and the inbox would grow by tens of thousands of envelopes for the
// reader to drain cold and the garbage collector to mark. In
// BenchmarkTCP this cut the CPU a frame took by a fifth. A receiver that
// would wait for bytes anyway does not yield: the reader runs while it
// waits.
func yieldToReader(idle bool) {
	if !idle {
		runtime.Gosched()
	}
}

// readFailed reports a read that broke the frame protocol (the end of
// a connection is no error).
func (tr *TCP) readFailed(a *accepting, err error) {
	if errors.Is(err, wire.ErrProtocol) {
		tr.record(&ConnError{Op: "read", Chan: a.ch, Remote: a.remote, Err: err}, &tr.stats.ConnErrors)
	}
}

// acker is when the receiving goroutine of connection c acknowledges:
// now when ackFrames frames or ackBytes bytes wait for an ack (bytes
// counted since its own last one), and otherwise, if nothing more is to
// be read, ackDelay later (later).
type acker struct {
	in      *inChan
	c       net.Conn
	later   *delayed
	timeout time.Duration
	readAt  uint64 // bytes read at its last ack
}

// after is called after each delivery: n frames delivered in all, read
// bytes read on c, idle if no whole frame is left to decode.
func (k *acker) after(n, read uint64, idle bool) error {
	switch {
	case n-k.in.ackedUpTo() >= ackFrames || read-k.readAt >= ackBytes:
		k.readAt = read
		return k.in.ack(k.c, k.timeout)
	case idle:
		k.later.arm()
	}
	return nil
}

// ackFrames and ackBytes bound what a receiver leaves unacknowledged
// while frames keep arriving: the sender keeps a copy of each until its
// ack. A bound of 256 frames made the acks (a write at the receiver, a
// read and the channel's lock at the sender) 5% of BenchmarkTCP's CPU.
const (
	ackFrames = 1024
	ackBytes  = 256 << 10
)

// ackDelay is how long a receiver that has nothing more to read holds
// the ack of what it delivered: the frames of a burst (a runtime's round,
// say) get one ack, not one each, and the sender's reader one wake-up.
// Acks only release the sender's copies (and Close acknowledges all it
// delivered), so the delay costs memory, not latency: in the dataflow
// pipeline over TCP (48 channels, about a frame per channel per ms) 1 ms
// made an ack write per 1.9 frames, 5 ms one per 3.4.
const ackDelay = 5 * time.Millisecond

// delayed is the pending ack of a connection: armed, it acknowledges
// everything delivered ackDelay later (once, however often it is armed
// meanwhile).
type delayed struct {
	t     *time.Timer
	armed atomic.Bool
}

// delayedAck is the delayed ack of connection c.
func (in *inChan) delayedAck(c net.Conn, timeout time.Duration) *delayed {
	d := &delayed{}
	d.t = time.AfterFunc(time.Hour, func() {
		d.armed.Store(false)
		_ = in.ack(c, timeout) // a failed write fails the connection's reader too
	})
	d.t.Stop()
	return d
}

func (d *delayed) arm() {
	if d.armed.CompareAndSwap(false, true) {
		d.t.Reset(ackDelay)
	}
}

func (d *delayed) stop() { d.t.Stop() }

// deliver queues batch in inbox b and counts it delivered; it returns an
// empty slice for the next batch and the frames delivered in all.
func (in *inChan) deliver(b *Inbox, batch []wire.Envelope) ([]wire.Envelope, uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.delivered += uint64(len(batch))
	return b.pushBatch(batch), in.delivered
}

// maxBatch bounds the frames a receiver delivers at once.
const maxBatch = 256

// testHookBeforeAck, set by tests only, runs between a frame's delivery
// and its ack: it widens the window in which Close races the ack.
var testHookBeforeAck func()

// Set by tests only, they widen the window in which a reconnect races
// the previous connection's reader: testHookBeforeDeliver runs between
// a batch's read and its delivery, testHookTakingOver when a hello is
// about to stop a channel's previous connection, and testHookTookOver
// once a hello took a channel over (its Last read).
var testHookBeforeDeliver, testHookTakingOver, testHookTookOver func()

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
