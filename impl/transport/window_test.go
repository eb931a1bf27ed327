package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// windowFrame is frame n of the window tests: a payload of size bytes
// that spells n throughout, so that a frame whose bytes were overwritten
// (a send chunk reused too early) shows.
func windowFrame(n uint64, size int) wire.Frame {
	p := make([]byte, size)
	for i := 0; i+8 <= size; i += 8 {
		binary.BigEndian.PutUint64(p[i:], n)
	}
	return wire.Frame{Kind: wire.KindApp, Seq: n, Payload: p, VC: []uint64{n}}
}

// TestTCPWindowBoundsTheBacklog: a receiver that takes the hello and then
// never reads or acknowledges holds its sender to one window: Sends are
// accepted until the frames unacknowledged take sendWindow bytes, the
// next one waits, and Close makes it refuse (ErrClosed) and lists exactly
// the frames accepted. Without flow control every Send would be
// accepted.
func TestTCPWindowBoundsTheBacklog(t *testing.T) {
	checkNoLeak(t)
	r := newRestartRig(t)
	const payload = 1000
	a, _ := r.frozenSender(t, payload)
	const tries = 4 * sendWindow / payload
	type result struct {
		accepted int
		err      error
	}
	o := a.out[r.ch]

	done := make(chan result, 1)
	go func() {
		for i := 2; i <= tries; i++ {
			if err := a.Send(wire.Envelope{Chan: r.ch, Frame: windowFrame(uint64(i), payload)}); err != nil {
				done <- result{i - 1, err}
				return
			}
		}
		done <- result{tries, nil}
	}()
	eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.size >= sendWindow
	}, "a window of frames unacknowledged")
	select {
	case res := <-done:
		t.Fatalf("all Sends returned (%d accepted, %v) with a window unacknowledged", res.accepted, res.err)
	default:
	}
	err := closeBounded(t, a, 10*time.Second)
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a Send waiting on the window did not return after Close")
	}
	require.ErrorIs(t, res.err, ErrClosed)
	bytes, last := 0, 0
	for i := 1; i <= res.accepted; i++ {
		last = len(mustEncode(t, windowFrame(uint64(i), payload)))
		bytes += last
	}
	assert.GreaterOrEqual(t, bytes, sendWindow, "Sends waited before the window was used up")
	assert.Less(t, bytes-last, sendWindow, "Sends accepted past the window")
	var se *ShutdownError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Unacked, res.accepted)
	for i, env := range se.Unacked {
		require.True(t, windowFrame(uint64(i+1), payload).Equal(env.Frame), "unacknowledged frame %d is %v", i+1, env.Frame)
	}
}

// frozenSender starts the rig's sender and makes its receiver a frozen
// process: frame 1 (of payload bytes) makes the sender dial, the receiver
// takes the hello, accepts, and then neither reads nor acknowledges
// unless the test writes on the connection returned; it returns once the
// sender serves the connection (the window applies from then on).
func (r *restartRig) frozenSender(t *testing.T, payload int) (*TCP, net.Conn) {
	t.Helper()
	a := r.start(TCPConfig{
		Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": r.addrB}, Local: []spec.ProcID{"P1"},
		DrainTimeout: 50 * time.Millisecond,
		WriteTimeout: time.Minute, // the connection must not fail while the test waits
	})
	r.sendWindowFrames(a, 1, 1, payload)
	require.NoError(t, r.lnB.(*net.TCPListener).SetDeadline(time.Now().Add(10*time.Second)))
	c, err := r.lnB.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = wire.ReadHello(bufio.NewReader(c))
	require.NoError(t, err)
	_, err = c.Write(wire.EncodeHelloReply(wire.HelloReply{Accepted: true, Incarnation: 0x3333}))
	require.NoError(t, err)
	o := a.out[r.ch]
	eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.serving
	}, "the connection served")
	return a, c
}

// sendUnwaited sends windowFrames from..to on ch with send, which must
// neither fail nor wait (10 s: else the test fails with why).
func sendUnwaited(t *testing.T, send func(wire.Envelope) error, ch spec.Channel, from, to uint64, payload int, why string) {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		for i := from; i <= to; i++ {
			if err := send(wire.Envelope{Chan: ch, Frame: windowFrame(i, payload)}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal(why)
	}
}

// TestTCPWaitRoomAndSendNow: FlowControl against a frozen receiver.
// WaitRoom does not wait on a window with room; SendNow is accepted past
// a full window without waiting (the runtime sends under its core lock
// so); WaitRoom then waits out its timeout and names the channel and the
// bytes (ErrNoRoom); a long WaitRoom ends once an ack makes room (nil)
// and, the window full again, at Close (ErrClosed); and Close lists
// every frame accepted and not acknowledged, none lost.
func TestTCPWaitRoomAndSendNow(t *testing.T) {
	checkNoLeak(t)
	r := newRestartRig(t)
	const payload = 1000
	a, c := r.frozenSender(t, payload)
	require.NoError(t, a.WaitRoom(r.ch, time.Minute), "a window with room")
	sendNow := func(from, to uint64) {
		sendUnwaited(t, a.SendNow, r.ch, from, to, payload, "SendNow waited on a full window")
	}
	const n = 3 * sendWindow / payload // frames 1..n: three windows
	sendNow(2, n)

	start := time.Now()
	err := a.WaitRoom(r.ch, 100*time.Millisecond)
	require.ErrorIs(t, err, ErrNoRoom)
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "WaitRoom waits its timeout out")
	assert.Regexp(t, `^transport: window full on P1->P2: \d+ bytes unacknowledged for 100ms$`, err.Error())

	// An ack of all but half a window's frames makes room.
	const acked = n - sendWindow/payload/2
	waited := make(chan error, 1)
	go func() { waited <- a.WaitRoom(r.ch, time.Minute) }()
	time.Sleep(20 * time.Millisecond) // most likely waiting by now (if not, it finds room at once)
	_, err = c.Write(wire.EncodeAck(acked))
	require.NoError(t, err)
	select {
	case werr := <-waited:
		require.NoError(t, werr, "room once the ack came")
	case <-time.After(10 * time.Second):
		t.Fatal("a WaitRoom did not return after an ack made room")
	}

	const last = n + 2*sendWindow/payload // full again
	sendNow(n+1, last)
	go func() { waited <- a.WaitRoom(r.ch, time.Minute) }()
	err = closeBounded(t, a, 10*time.Second)
	select {
	case werr := <-waited:
		require.ErrorIs(t, werr, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("a WaitRoom did not return after Close")
	}
	var se *ShutdownError
	require.ErrorAs(t, err, &se)
	require.Len(t, se.Unacked, last-acked)
	for i, env := range se.Unacked {
		require.True(t, windowFrame(uint64(acked+i+1), payload).Equal(env.Frame), "unacknowledged frame %d is %v", acked+i+1, env.Frame)
	}
}

// TestTCPWindowDoesNotWaitUnconnected: while a channel has no
// connection (its receiver refuses to be dialed), Sends do not wait on
// the window: frames queue for the redial, and Close lists them.
func TestTCPWindowDoesNotWaitUnconnected(t *testing.T) {
	checkNoLeak(t)
	r := newRestartRig(t)
	r.lnB.Close() // nothing listens: dials are refused
	a := r.sender(50 * time.Millisecond)
	const payload, n = 4000, 3 * sendWindow / 4000
	sendUnwaited(t, a.Send, r.ch, 1, n, payload, "Sends wait on the window of a channel without a connection")
	err := closeBounded(t, a, 10*time.Second)
	var se *ShutdownError
	require.ErrorAs(t, err, &se)
	assert.Len(t, se.Unacked, n)
}

// TestTCPWindowedStreamSurvivesCuts: frames of mixed sizes (a few bytes
// to more than a window), many windows of them, cross a channel whose
// connection is cut again and again, with the send chunks reused
// throughout: every frame arrives once, in order, with its bytes intact,
// and the unacknowledged backlog never exceeds the window and a frame
// while connected.
func TestTCPWindowedStreamSurvivesCuts(t *testing.T) {
	checkNoLeak(t)
	ch := spec.Channel{From: "P1", To: "P2"}
	tr := newTCP(t, spec.Ring(2), TCPConfig{
		Addrs:     map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": "127.0.0.1:0"},
		RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond,
	})
	rng := rand.New(rand.NewPCG(7, 22))
	var sizes []int
	total, largest := 0, 0
	for total < 6*sendWindow {
		s := rng.IntN(200)
		switch rng.IntN(50) {
		case 0:
			s = rng.IntN(100 << 10)
		case 1:
			if len(sizes) > 10 && largest < sendWindow {
				s = sendWindow + 1000 // one frame larger than the window
			}
		}
		sizes = append(sizes, s)
		total += s
		largest = max(largest, s)
	}
	in, err := tr.Inbox("P2")
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		var batch []wire.Envelope
		next := uint64(1)
		for next <= uint64(len(sizes)) {
			select {
			case <-in.Ready():
			case <-time.After(time.Minute):
				got <- assert.AnError
				return
			}
			batch, _ = in.Take(batch, 0)
			for _, env := range batch {
				if want := windowFrame(next, sizes[next-1]); !want.Equal(env.Frame) || !bytes.Equal(want.Payload, env.Frame.Payload) {
					t.Errorf("frame %d delivered as %v", next, env.Frame)
					got <- nil
					return
				}
				next++
			}
		}
		got <- nil
	}()
	o := tr.out[ch]
	maxLive := 0
	for i, s := range sizes {
		require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: windowFrame(uint64(i+1), s)}))
		if i%50 == 0 {
			o.mu.Lock()
			if o.serving && !o.broken {
				maxLive = max(maxLive, o.size)
			}
			o.mu.Unlock()
		}
		if i%(len(sizes)/8) == len(sizes)/16 {
			eventually(t, func() bool {
				o.mu.Lock()
				defer o.mu.Unlock()
				return o.serving && !o.broken
			}, "the channel reconnected")
			require.True(t, tr.CutConnection(ch))
		}
	}
	require.NoError(t, <-got, "frames not all delivered within a minute of each other")
	assert.LessOrEqual(t, maxLive, sendWindow+len(mustEncode(t, windowFrame(1, largest))), "the backlog outgrew the window while connected")
	assert.GreaterOrEqual(t, tr.Stats().Cuts, 8, "the connection was cut")
	require.NoError(t, closeBounded(t, tr, 10*time.Second))
}

// sendWindowFrames sends windowFrames from..to of size bytes on tr.
func (r *restartRig) sendWindowFrames(tr *TCP, from, to uint64, size int) {
	r.t.Helper()
	for i := from; i <= to; i++ {
		require.NoError(r.t, tr.Send(wire.Envelope{Chan: r.ch, Frame: windowFrame(i, size)}))
	}
}

func mustEncode(t *testing.T, f wire.Frame) []byte {
	t.Helper()
	b, err := wire.Encode(f)
	require.NoError(t, err)
	return b
}
