package transport

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
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
	serving    bool     // a writer serves conn (from resume to its end)
	peer       uint64   // the receiver incarnation first seen, 0 before
	// failed, once set, stops the channel for good: no more dials or
	// sends; frames stay unacknowledged.
	failed *PeerRestartedError
	// unreached: the receiver was never reached and its listener refused
	// the last dial (not started, or down): Close does not wait for it.
	unreached bool
}

// sendWindow is the flow control of a channel: a Send waits while the
// frames not acknowledged take sendWindow bytes or more and a connection
// is being served (the receiver is reading: its acks will come), so a
// sender cannot run ahead of its receiver by more than a window and a
// frame. The receiver acknowledges once ackBytes (or ackFrames frames)
// arrived, at the latest ackDelay after it has read everything, so a
// window of 4 ackBytes is never waited out: acks arrive while the
// sender still has room. A Send does not wait while the channel has no
// connection (the frames queue until the redial) nor once Close began.
const sendWindow = 4 * ackBytes

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

// noteRefused records whether the failed dial err was refused by a
// receiver never reached (unreached).
func (o *outChan) noteRefused(err error) {
	o.mu.Lock()
	o.unreached = o.peer == 0 && errors.Is(err, syscall.ECONNREFUSED)
	o.mu.Unlock()
}

// waitAcked waits until every frame is acknowledged or the deadline
// passes; not at all for a receiver never reached whose listener refuses
// connections (unreached): nothing of it can be acknowledged, and its
// frames are reported unacknowledged at once.
func (o *outChan) waitAcked(deadline time.Time) {
	o.mu.Lock()
	unreached := o.unreached
	o.mu.Unlock()
	if unreached {
		return
	}
	defer o.wakeAt(deadline).Stop()
	o.mu.Lock()
	for o.pending() > 0 && o.failed == nil && time.Now().Before(deadline) {
		o.cond.Wait()
	}
	o.mu.Unlock()
}

// wakeAt wakes the channel's waiters at deadline, so that a wait bounded
// by it (on o.cond, which the events it waits for broadcast) ends then.
func (o *outChan) wakeAt(deadline time.Time) *time.Timer {
	return time.AfterFunc(time.Until(deadline), func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
}

// run connects when there is something to send and reconnects after cuts.
func (o *outChan) run() {
	tr := o.t
	backoff := tr.cfg.RedialMin
	for o.awaitPending() {
		conn, br, last, err := o.connect()
		if err == nil {
			backoff = tr.cfg.RedialMin
			o.serve(conn, br, last)
			continue
		}
		if tr.stopped() || o.failOnRestart(err) {
			return
		}
		o.noteRefused(err)
		tr.record(&ConnError{Op: "dial", Chan: o.ch, Err: err}, &tr.stats.DialErrors)
		select {
		case <-time.After(backoff):
		case <-tr.stop:
			return
		}
		backoff = min(2*backoff, tr.cfg.RedialMax)
	}
}

// awaitPending waits until a frame waits to be sent; false when the
// transport stopped.
func (o *outChan) awaitPending() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.pending() == 0 && !o.t.stopped() {
		o.waiting = true
		o.cond.Wait()
	}
	o.waiting = false
	return !o.t.stopped()
}

// failOnRestart stops the channel for good if err is a
// *PeerRestartedError, and reports it.
func (o *outChan) failOnRestart(err error) bool {
	var pr *PeerRestartedError
	if !errors.As(err, &pr) {
		return false
	}
	o.mu.Lock()
	pr.Acked, pr.Sent = o.base, o.sent()
	pr.Unacked = o.pending()
	o.failed = pr
	o.cond.Broadcast()
	o.mu.Unlock()
	o.t.record(&ConnError{Op: "handshake", Chan: o.ch, Remote: o.t.addrOf(o.ch.To), Err: pr}, &o.t.stats.Failed)
	return true
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

// serve writes frames from last+1 on conn until it fails or Close, while
// a second goroutine reads the acks.
func (o *outChan) serve(conn net.Conn, br *bufio.Reader, last uint64) {
	next := o.resume(last)
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		o.readAcks(conn, br)
	}()
	o.write(conn, next)
	conn.Close()
	<-ackDone
	o.mu.Lock()
	o.conn, o.serving = nil, false
	o.release()
	o.cond.Broadcast() // Sends waiting on the window go on
	o.mu.Unlock()
}

// resume takes the receiver's Last as acknowledged (the cut connection
// may have lost the acks of frames it holds; Close's drain may be
// waiting for them) and returns the cursor of the first frame to send,
// last+1.
func (o *outChan) resume(last uint64) cursor {
	o.mu.Lock()
	if last > o.base {
		o.drop(last)
	}
	o.written, o.serving = last, true
	next := o.locate(last + 1)
	resend := 0
	if o.maxWritten > last {
		resend = int(o.maxWritten - last)
	}
	o.mu.Unlock()
	o.t.count(func(s *TCPStats) { s.Dials++; s.Resent += resend })
	return next
}

// readAcks reads the receiver's acks off br until conn fails or an ack
// breaks the protocol; it then marks the connection broken.
func (o *outChan) readAcks(conn net.Conn, br *bufio.Reader) {
	for {
		n, err := wire.ReadAck(br)
		if err == nil {
			err = o.ack(n)
		}
		if err != nil {
			if errors.Is(err, wire.ErrProtocol) {
				o.t.record(&ConnError{Op: "ack", Chan: o.ch, Err: err}, &o.t.stats.ConnErrors)
			}
			o.mu.Lock()
			o.broken = true
			o.cond.Broadcast()
			o.mu.Unlock()
			conn.Close()
			return
		}
	}
}

// write sends the frames from next on: each round writes the frames
// sent since the last one (up to maxWrite bytes) with one write, straight
// from the buffer's chunks, until the connection breaks or Close.
func (o *outChan) write(conn net.Conn, next cursor) {
	var scratch net.Buffers
	for {
		bufs, end, ok := o.nextRound(next, scratch)
		if !ok {
			return
		}
		conn.SetWriteDeadline(time.Now().Add(o.t.cfg.WriteTimeout))
		scratch = bufs
		var err error
		if len(bufs) == 1 {
			_, err = conn.Write(bufs[0])
		} else {
			_, err = bufs.WriteTo(conn) // one writev
		}
		clear(scratch)
		if err != nil {
			return
		}
		next = end
	}
}

// nextRound waits for frames from next on and returns views of them (see
// sendBuf.round), held until the next call (or serve's end) releases
// them; false when the connection broke or the transport stopped.
func (o *outChan) nextRound(next cursor, scratch net.Buffers) (net.Buffers, cursor, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.release()
	for !o.broken && !o.t.stopped() && next.k > o.sent() {
		o.waiting = true
		o.cond.Wait()
	}
	o.waiting = false
	if o.broken || o.t.stopped() {
		return nil, next, false
	}
	bufs, end := o.round(next, scratch)
	o.hold(next.k)
	// Acks may arrive as soon as the bytes leave: raise written first.
	o.written = end.k - 1
	o.maxWritten = max(o.maxWritten, o.written)
	return bufs, end, true
}

// unacked appends the channel's frames not acknowledged, in order.
func (o *outChan) unacked(envs []wire.Envelope) []wire.Envelope {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.each(func(b []byte) {
		if f, err := wire.Decode(b); err == nil {
			envs = append(envs, wire.Envelope{Chan: o.ch, Frame: f})
		}
	})
	return envs
}
