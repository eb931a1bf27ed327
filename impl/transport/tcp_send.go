package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

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
