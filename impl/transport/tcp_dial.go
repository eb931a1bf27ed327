package transport

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
)

// connect dials the receiver and exchanges hellos: it returns the
// connection, its reader and the receiver's Last.
func (o *outChan) connect() (net.Conn, *bufio.Reader, uint64, error) {
	conn, err := o.dial()
	if err != nil {
		return nil, nil, 0, err
	}
	br := bufio.NewReaderSize(conn, 4096)
	last, err := o.handshake(conn, br)
	if err != nil {
		conn.Close()
		o.mu.Lock()
		o.conn = nil
		o.mu.Unlock()
		return nil, nil, 0, err
	}
	return conn, br, last, nil
}

// dial connects to the receiver and registers the connection, so that
// Close and CutConnection reach it.
func (o *outChan) dial() (net.Conn, error) {
	tr := o.t
	d := net.Dialer{Timeout: tr.cfg.DialTimeout}
	conn, err := d.DialContext(tr.ctx, "tcp", tr.addrOf(o.ch.To))
	if err == nil {
		conn, err = o.secureDialed(conn)
	}
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if tr.stopped() {
		conn.Close()
		return nil, net.ErrClosed
	}
	o.conn, o.broken = conn, false
	return conn, nil
}

// handshake writes the hello, reads the reply and checks that the
// channel resumes: Last as the reply says.
func (o *outChan) handshake(conn net.Conn, br *bufio.Reader) (uint64, error) {
	tr := o.t
	hello, err := wire.EncodeHello(wire.Hello{From: o.ch.From, To: o.ch.To, Incarnation: tr.inc, Restored: tr.cfg.Restored})
	if err != nil {
		return 0, err
	}
	conn.SetDeadline(time.Now().Add(tr.cfg.HandshakeTimeout))
	var rep wire.HelloReply
	if _, err = conn.Write(hello); err == nil {
		rep, err = wire.ReadHelloReply(br)
	}
	if err != nil {
		return 0, err
	}
	if err := o.refused(rep); err != nil {
		return 0, err
	}
	conn.SetDeadline(time.Time{})
	return rep.Last, o.resumes(rep)
}

// refused is the error of a reply that does not accept the hello, nil
// for one that does.
func (o *outChan) refused(rep wire.HelloReply) error {
	tr := o.t
	switch {
	case rep.Stale:
		// The receiver has stopped the channel. Usually it holds the
		// channel of an earlier incarnation of this sender, and this
		// process is the restarted one. If it names this incarnation, a
		// later one of this sender's process reached it (Now unknown).
		pr := &PeerRestartedError{Chan: o.ch, At: SideSender, Restarted: SideSender, Was: rep.Known, Now: tr.inc}
		if rep.Known == tr.inc {
			pr.Now = 0
		}
		return pr
	case rep.Mismatch:
		// The ends were restored from different snapshots: the channel
		// cannot resume until both restart from one.
		return &PeerRestartedError{Chan: o.ch, At: SideSender, Mismatch: true, SenderFrom: tr.cfg.Restored, ReceiverFrom: rep.Restored}
	case !rep.Accepted && rep.Version != wire.HandshakeVersion:
		return fmt.Errorf("%w: %w: the receiver speaks handshake version %d: %s", ErrRejected, wire.ErrVersion, rep.Version, rep.Reason)
	case !rep.Accepted:
		return fmt.Errorf("%w: %s", ErrRejected, rep.Reason)
	}
	return nil
}

// resumes checks an accepting reply against the channel's history: the
// receiver incarnation first seen (another one restarted, its state
// lost), and Last within [acknowledged, sent].
func (o *outChan) resumes(rep wire.HelloReply) error {
	o.mu.Lock()
	if o.peer == 0 {
		o.peer = rep.Incarnation
	}
	peer := o.peer
	base, sent := o.base, o.sent()
	o.mu.Unlock()
	if rep.Incarnation != peer {
		return &PeerRestartedError{Chan: o.ch, At: SideSender, Restarted: SideReceiver, Was: peer, Now: rep.Incarnation, Last: rep.Last}
	}
	if rep.Last < base || rep.Last > sent {
		return &PeerRestartedError{Chan: o.ch, At: SideSender, Last: rep.Last}
	}
	return nil
}
