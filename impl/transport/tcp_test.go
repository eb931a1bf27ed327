package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// loopback gives every process of top the address 127.0.0.1:0.
func loopback(top *spec.Topology) map[spec.ProcID]string {
	m := map[spec.ProcID]string{}
	for _, p := range top.Procs {
		m[p] = "127.0.0.1:0"
	}
	return m
}

func newTCP(t *testing.T, top *spec.Topology, cfg TCPConfig) *TCP {
	t.Helper()
	if cfg.Addrs == nil {
		cfg.Addrs = loopback(top)
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = time.Second
	}
	tr, err := NewTCP(top, cfg)
	require.NoError(t, err)
	return tr
}

func TestTCP(t *testing.T) {
	suite(t, func(t *testing.T, top *spec.Topology) Transport { return newTCP(t, top, TCPConfig{}) })
}

// rawDial opens a connection to p's listener, as a foreign peer would.
func rawDial(t *testing.T, tr *TCP, p spec.ProcID) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", tr.Addr(p), 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	return c
}

// waitClosed fails t unless the peer closes c.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, syscall.ECONNRESET) {
		return // closed with unread data: a reset, also a close
	}
	require.NoError(t, err, "want the transport to close the connection (EOF)")
}

// hasErr reports whether tr recorded an error matching target.
func hasErr(tr *TCP, target error) bool {
	for _, e := range tr.Errors() {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// traffic sends n frames on ch and checks they arrive, in order.
func traffic(t *testing.T, tr *TCP, ch spec.Channel, from, n int) {
	t.Helper()
	in, err := tr.Inbox(ch.To)
	require.NoError(t, err)
	for i := from; i < from+n; i++ {
		require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, uint64(i))}))
	}
	for i := from; i < from+n; i++ {
		select {
		case env := <-in:
			require.Equal(t, ch, env.Chan)
			require.True(t, appFrame(ch, uint64(i)).Equal(env.Frame), "got %v want #%d", env.Frame, i)
		case <-time.After(5 * time.Second):
			t.Fatalf("frame %d on %s not delivered", i, ch)
		}
	}
}

func TestTCPHandshakeRejections(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(3) // P1->P2, P2->P3, P3->P1
	var mu sync.Mutex
	var reported []error
	tr := newTCP(t, top, TCPConfig{OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }})
	defer func() { require.NoError(t, closeBounded(t, tr, 5*time.Second)) }()
	ch := spec.Channel{From: "P1", To: "P2"}
	traffic(t, tr, ch, 1, 10)
	next := 11
	for _, h := range []wire.Hello{
		{From: "P9", To: "P2"}, // unknown peer
		{From: "P3", To: "P2"}, // not a channel
		{From: "P1", To: "P3"}, // P2's listener, wrong receiver
	} {
		c := rawDial(t, tr, "P2")
		b, err := wire.EncodeHello(h)
		require.NoError(t, err)
		_, err = c.Write(b)
		require.NoError(t, err)
		rep, err := wire.ReadHelloReply(bufio.NewReader(c))
		require.NoError(t, err)
		assert.False(t, rep.Accepted, "%+v", h)
		assert.NotEmpty(t, rep.Reason)
		waitClosed(t, c)
		c.Close()
		traffic(t, tr, ch, next, 5) // others keep working
		next += 5
	}
	// Version mismatch.
	c := rawDial(t, tr, "P2")
	b, _ := wire.EncodeHello(wire.Hello{Version: 9, From: "P1", To: "P2"})
	_, _ = c.Write(b)
	rep, err := wire.ReadHelloReply(bufio.NewReader(c))
	require.NoError(t, err)
	assert.False(t, rep.Accepted)
	waitClosed(t, c)
	c.Close()

	assert.Equal(t, 4, tr.Stats().Rejected)
	assert.True(t, hasErr(tr, ErrRejected))
	assert.True(t, hasErr(tr, wire.ErrVersion))
	mu.Lock()
	assert.Len(t, reported, 4)
	mu.Unlock()
	traffic(t, tr, ch, next, 20)
}

func TestTCPGarbageClosesOnlyThatConnection(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(3)
	tr := newTCP(t, top, TCPConfig{})
	defer func() { require.NoError(t, closeBounded(t, tr, 5*time.Second)) }()
	ch := spec.Channel{From: "P1", To: "P2"}
	other := spec.Channel{From: "P2", To: "P3"}
	traffic(t, tr, ch, 1, 10)
	traffic(t, tr, other, 1, 10)

	// Garbage instead of a hello.
	c := rawDial(t, tr, "P2")
	_, _ = c.Write([]byte("\x00\x00\x00\x05\x01\xee\xee\xee\xee"))
	waitClosed(t, c)
	c.Close()
	eventually(t, func() bool { return hasErr(tr, wire.ErrKind) }, "the garbage hello to be reported")

	// A valid hello for P1->P2 followed by garbage: the impostor takes the
	// channel over, is cut off, and the real sender resumes without loss.
	c = rawDial(t, tr, "P2")
	b, _ := wire.EncodeHello(wire.Hello{From: "P1", To: "P2"})
	_, _ = c.Write(b)
	rep, err := wire.ReadHelloReply(bufio.NewReader(c))
	require.NoError(t, err)
	require.True(t, rep.Accepted)
	assert.Equal(t, uint64(10), rep.Last, "the receiver holds 10 frames of P1->P2")
	_, _ = c.Write([]byte{0, 0, 0, 3, 1, 2, 0}) // marker with snap 0
	waitClosed(t, c)
	c.Close()
	eventually(t, func() bool { return hasErr(tr, wire.ErrInvalidFrame) }, "the bad frame to be reported")

	traffic(t, tr, ch, 11, 50)
	traffic(t, tr, other, 11, 50)
	assert.GreaterOrEqual(t, tr.Stats().ConnErrors, 1)
}

func TestTCPOversizedFrame(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	tr := newTCP(t, top, TCPConfig{MaxFrameSize: 1024})
	defer func() { require.NoError(t, closeBounded(t, tr, 5*time.Second)) }()
	ch := spec.Channel{From: "P1", To: "P2"}

	// Send refuses a frame above the limit.
	err := tr.Send(wire.Envelope{Chan: ch, Frame: wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: make([]byte, 2000)}})
	require.ErrorIs(t, err, wire.ErrTooLarge)

	// The receiver cuts a peer announcing one, without reading it.
	c := rawDial(t, tr, "P2")
	b, _ := wire.EncodeHello(wire.Hello{From: "P1", To: "P2"})
	_, _ = c.Write(b)
	_, err = wire.ReadHelloReply(bufio.NewReader(c))
	require.NoError(t, err)
	_, _ = c.Write(binary.BigEndian.AppendUint32(nil, 1<<30))
	waitClosed(t, c)
	c.Close()
	eventually(t, func() bool { return hasErr(tr, wire.ErrTooLarge) }, "the oversized frame to be reported")
	traffic(t, tr, ch, 1, 20)
}

// TestTCPCutAndReconnect cuts connections while 1000 frames per channel are
// in flight; every channel must deliver exactly 1..1000 in order.
func TestTCPCutAndReconnect(t *testing.T) {
	checkNoLeak(t)
	top := spec.Complete(3)
	tr := newTCP(t, top, TCPConfig{})
	c := collect(t, tr, top.Procs)
	const n = 1000
	stopCut := make(chan struct{})
	cutDone := make(chan int)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		cuts := 0
		defer func() { cutDone <- cuts }()
		for {
			select {
			case <-stopCut:
				return
			case <-time.After(time.Duration(1+rng.IntN(3)) * time.Millisecond):
			}
			if tr.CutConnection(top.Chans[rng.IntN(len(top.Chans))]) {
				cuts++
			}
		}
	}()
	sendAll(t, tr, top.Chans, n, func(i int) {
		if i%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	})
	c.wait(t, top.Chans, n, 20*time.Second)
	close(stopCut)
	cuts := <-cutDone
	require.NoError(t, closeBounded(t, tr, 5*time.Second))
	c.wg.Wait()
	c.check(t, top.Chans, n)
	st := tr.Stats()
	t.Logf("cuts %d, stats %+v", cuts, st)
	assert.GreaterOrEqual(t, cuts, 5, "several cuts happened")
	assert.Greater(t, st.Dials, len(top.Chans), "channels reconnected")
}

// Cutting only one end, many times, on a single busy channel.
func TestTCPCutRepeatedlySingleChannel(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	tr := newTCP(t, top, TCPConfig{})
	ch := spec.Channel{From: "P1", To: "P2"}
	c := collect(t, tr, []spec.ProcID{"P2"})
	const n = 1000
	for i := 1; i <= n; i++ {
		require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, uint64(i))}))
		if i%100 == 0 {
			// Wait until the channel is connected, then cut it.
			eventually(t, func() bool { return tr.CutConnection(ch) }, "a connection to cut")
		}
	}
	c.wait(t, []spec.Channel{ch}, n, 20*time.Second)
	require.NoError(t, closeBounded(t, tr, 5*time.Second))
	c.wg.Wait()
	c.check(t, []spec.Channel{ch}, n)
	assert.GreaterOrEqual(t, tr.Stats().Cuts, 10)
}

// Two transports, as two OS processes would run them: A serves P1, B
// serves P2 and P3.
func TestTCPTwoTransports(t *testing.T) {
	checkNoLeak(t)
	top := spec.Complete(3)
	lns := map[spec.ProcID]net.Listener{}
	addrs := map[spec.ProcID]string{}
	for _, p := range top.Procs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[p], addrs[p] = ln, ln.Addr().String()
	}
	a := newTCP(t, top, TCPConfig{Addrs: addrs, Local: []spec.ProcID{"P1"}, Listeners: map[spec.ProcID]net.Listener{"P1": lns["P1"]}})
	b := newTCP(t, top, TCPConfig{Addrs: addrs, Local: []spec.ProcID{"P2", "P3"}, Listeners: map[spec.ProcID]net.Listener{"P2": lns["P2"], "P3": lns["P3"]}})
	ca := collect(t, a, []spec.ProcID{"P1"})
	cb := collect(t, b, []spec.ProcID{"P2", "P3"})
	const n = 300
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sendAll(t, a, top.Out("P1"), n, nil) }()
	go func() {
		defer wg.Done()
		sendAll(t, b, append(append([]spec.Channel(nil), top.Out("P2")...), top.Out("P3")...), n, nil)
	}()
	wg.Wait()
	ca.wait(t, top.In("P1"), n, 10*time.Second)
	cb.wait(t, append(append([]spec.Channel(nil), top.In("P2")...), top.In("P3")...), n, 10*time.Second)

	// A does not serve P2.
	err := a.Send(wire.Envelope{Chan: spec.Channel{From: "P2", To: "P1"}, Frame: appFrame(spec.Channel{}, 1)})
	assert.ErrorIs(t, err, ErrUnknownProc)
	_, err = a.Inbox("P2")
	assert.ErrorIs(t, err, ErrUnknownProc)

	require.NoError(t, closeBounded(t, a, 5*time.Second))
	require.NoError(t, closeBounded(t, b, 5*time.Second))
	ca.wg.Wait()
	cb.wg.Wait()
	ca.check(t, top.In("P1"), n)
	cb.check(t, append(append([]spec.Channel(nil), top.In("P2")...), top.In("P3")...), n)
}

// When the receiver is gone, Close gives up after DrainTimeout and reports
// the frames it could not get acknowledged.
func TestTCPCloseReportsUnacked(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close()) // nobody listens for P2 now
	a := newTCP(t, top, TCPConfig{
		Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": dead},
		Local: []spec.ProcID{"P1"}, DrainTimeout: 100 * time.Millisecond,
	})
	ch := spec.Channel{From: "P1", To: "P2"}
	sendAll(t, a, []spec.Channel{ch}, 5, nil)
	start := time.Now()
	err = closeBounded(t, a, 5*time.Second)
	assert.Less(t, time.Since(start), 2*time.Second)
	var se *ShutdownError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Unacked, 5)
	for i, env := range se.Unacked {
		assert.Equal(t, ch, env.Chan)
		assert.True(t, appFrame(ch, uint64(i+1)).Equal(env.Frame))
	}
	assert.GreaterOrEqual(t, a.Stats().DialErrors, 1)
}

// Close returns promptly even with connections stuck mid-handshake.
func TestTCPCloseWithStuckPeers(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	tr := newTCP(t, top, TCPConfig{HandshakeTimeout: time.Minute})
	var conns []net.Conn
	for range 5 {
		c := rawDial(t, tr, "P2")
		_, _ = c.Write([]byte{0, 0}) // half a length prefix, then silence
		conns = append(conns, c)
	}
	traffic(t, tr, spec.Channel{From: "P1", To: "P2"}, 1, 10)
	start := time.Now()
	require.NoError(t, closeBounded(t, tr, 5*time.Second))
	assert.Less(t, time.Since(start), 2*time.Second)
	for _, c := range conns {
		waitClosed(t, c)
		c.Close()
	}
}

func TestTCPConfigErrors(t *testing.T) {
	top := spec.Ring(2)
	_, err := NewTCP(top, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0"}, Local: []spec.ProcID{"P1"}})
	assert.ErrorContains(t, err, "no address for P2")
	_, err = NewTCP(top, TCPConfig{Addrs: loopback(top), Local: []spec.ProcID{"P7"}})
	assert.ErrorIs(t, err, ErrUnknownProc)
	_, err = NewTCP(top, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0"}})
	assert.ErrorContains(t, err, "P2")
}

// A receiver that restarts has lost the channel's count: the sender's
// handshake finds Last outside [acked, sent]. The channel fails for good:
// one typed error naming the channel and the range, no redialling, Sends
// refused, and the pending frame listed by Close. A sender that restarts
// (the receiver holds more than it sent) fails the same way.
func TestTCPPeerRestartFailsChannel(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	ch := spec.Channel{From: "P1", To: "P2"}
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		return ln
	}
	var (
		mu     sync.Mutex
		onErrs []error
	)
	lnB := listen("127.0.0.1:0")
	addrB := lnB.Addr().String()
	newA := func() *TCP {
		return newTCP(t, top, TCPConfig{
			Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": addrB}, Local: []spec.ProcID{"P1"},
			RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond, DrainTimeout: 100 * time.Millisecond,
			OnError: func(err error) { mu.Lock(); onErrs = append(onErrs, err); mu.Unlock() },
		})
	}
	newB := func(ln net.Listener) *TCP {
		return newTCP(t, top, TCPConfig{
			Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:1", "P2": addrB}, Local: []spec.ProcID{"P2"},
			Listeners: map[spec.ProcID]net.Listener{"P2": ln},
		})
	}
	acked := func(tr *TCP) uint64 {
		o := tr.out[ch]
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.base
	}
	recv := func(tr *TCP, n uint64) {
		t.Helper()
		in, err := tr.Inbox("P2")
		require.NoError(t, err)
		select {
		case env := <-in:
			require.True(t, appFrame(ch, n).Equal(env.Frame), "got %v, want #%d", env.Frame, n)
		case <-time.After(5 * time.Second):
			t.Fatalf("frame %d not delivered", n)
		}
	}
	peerErrs := func() (n int, last error) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range onErrs {
			if errors.Is(e, ErrPeerRestarted) {
				n, last = n+1, e
			}
		}
		return n, last
	}

	// 1. The receiver restarts.
	a, b := newA(), newB(lnB)
	for i := uint64(1); i <= 3; i++ {
		require.NoError(t, a.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, i)}))
		recv(b, i)
	}
	eventually(t, func() bool { return acked(a) == 3 }, "3 frames acknowledged")
	require.NoError(t, closeBounded(t, b, 5*time.Second))
	b2 := newB(listen(addrB)) // same address, fresh state
	require.NoError(t, a.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, 4)}))
	eventually(t, func() bool { n, _ := peerErrs(); return n > 0 }, "ErrPeerRestarted")
	time.Sleep(100 * time.Millisecond) // time for many redials, were there any
	n, err := peerErrs()
	assert.Equal(t, 1, n, "reported once")
	assert.ErrorIs(t, err, wire.ErrProtocol)
	var pr *PeerRestartedError
	require.ErrorAs(t, err, &pr)
	assert.Equal(t, PeerRestartedError{Chan: ch, Acked: 3, Sent: 4, Last: 0, Unacked: 1}, *pr)
	assert.Contains(t, err.Error(), "channel P1->P2 stopped: receiver holds 0 frames, expected 3..4")
	st := a.Stats()
	assert.Equal(t, 0, st.DialErrors, "no redialling")
	assert.Equal(t, 1, st.Failed)
	assert.Equal(t, 1, st.Dials)
	assert.True(t, hasErr(a, ErrPeerRestarted))
	err = a.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, 5)})
	assert.ErrorIs(t, err, ErrPeerRestarted)
	in2, _ := b2.Inbox("P2")
	select {
	case env := <-in2:
		t.Fatalf("restarted receiver got %v", env)
	case <-time.After(20 * time.Millisecond):
	}
	start := time.Now()
	err = closeBounded(t, a, 5*time.Second)
	assert.Less(t, time.Since(start), 90*time.Millisecond, "no drain wait on a failed channel")
	var se *ShutdownError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Unacked, 1, "the pending frame is reported, not lost")
	assert.True(t, appFrame(ch, 4).Equal(se.Unacked[0].Frame))

	// 2. The sender restarts: the receiver (b2, now holding 2 frames)
	// holds more than the new sender sent.
	mu.Lock()
	onErrs = nil
	mu.Unlock()
	a2 := newA()
	for i := uint64(1); i <= 2; i++ {
		require.NoError(t, a2.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, i)}))
		recv(b2, i)
	}
	require.NoError(t, closeBounded(t, a2, 5*time.Second))
	a3 := newA()
	require.NoError(t, a3.Send(wire.Envelope{Chan: ch, Frame: appFrame(ch, 1)}))
	eventually(t, func() bool { n, _ := peerErrs(); return n > 0 }, "ErrPeerRestarted")
	_, err = peerErrs()
	require.ErrorAs(t, err, &pr)
	assert.Equal(t, PeerRestartedError{Chan: ch, Acked: 0, Sent: 1, Last: 2, Unacked: 1}, *pr)
	err = closeBounded(t, a3, 5*time.Second)
	require.ErrorAs(t, err, &se)
	assert.Len(t, se.Unacked, 1)
	require.NoError(t, closeBounded(t, b2, 5*time.Second))
}
