package transport

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// payloadForBody returns the payload size whose application frame (Seq 1,
// no clock) has an encoding of exactly body bytes after the length prefix.
func payloadForBody(t *testing.T, body int) int {
	t.Helper()
	for p := max(0, body-16); p <= body; p++ {
		b, err := wire.Encode(wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: make([]byte, p)})
		require.NoError(t, err)
		if len(b)-4 == body {
			return p
		}
	}
	t.Fatalf("no payload size gives a body of %d bytes", body)
	return 0
}

// recvOne returns the next envelope of in, failing t after 10s.
func recvOne(t *testing.T, in *Inbox) wire.Envelope {
	t.Helper()
	env, ok := takeNext(in, time.After(10*time.Second))
	if !ok {
		t.Fatal("nothing delivered within 10s")
	}
	return env
}

// A frame of exactly MaxFrameSize is carried; one byte more is refused
// with wire.ErrTooLarge, without side effects (the next frame is #2 of the
// channel's stream, not #3). Both for small configured limits and for the
// hard limit, wire.MaxFrameSize (not under -short or -race: 16 MiB).
func TestTCPMaxFrameSizeBoundary(t *testing.T) {
	checkNoLeak(t)
	limits := []int{64, 1024, wire.MaxFrameSize}
	if testing.Short() || raceEnabled {
		// make test runs the hard limit once, without -race.
		limits = limits[:2]
	}
	for _, limit := range limits {
		top := spec.Ring(2)
		cfg := TCPConfig{}
		if limit != wire.MaxFrameSize {
			cfg.MaxFrameSize = limit
		}
		tr := newTCP(t, top, cfg)
		ch := spec.Channel{From: "P1", To: "P2"}
		in, err := tr.Inbox("P2")
		require.NoError(t, err)
		p := payloadForBody(t, limit)
		atLimit := wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: make([]byte, p)}
		for i := range atLimit.Payload {
			atLimit.Payload[i] = byte(i * 7)
		}
		require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: atLimit}), "a frame of exactly %d bytes", limit)
		over := wire.Frame{Kind: wire.KindApp, Seq: 2, Payload: make([]byte, p+1)}
		err = tr.Send(wire.Envelope{Chan: ch, Frame: over})
		require.ErrorIs(t, err, wire.ErrTooLarge, "a frame of %d+1 bytes", limit)
		assert.Contains(t, err.Error(), ch.String())
		next := wire.Frame{Kind: wire.KindApp, Seq: 2}
		require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: next}))
		got := recvOne(t, in)
		assert.True(t, atLimit.Equal(got.Frame), "limit %d: the frame at the limit arrives intact", limit)
		got = recvOne(t, in)
		assert.True(t, next.Equal(got.Frame), "limit %d: the refused frame left no trace: got %v", limit, got.Frame)
		require.NoError(t, closeBounded(t, tr, 10*time.Second))
		assert.Zero(t, tr.Stats().ConnErrors, "limit %d", limit)
	}
}

// Zero-length and nil payloads and clocks, and markers, are frames like
// any other: carried, in order, equal to what was sent (nil and empty
// compare equal), by both transports.
func TestEmptyPayloads(t *testing.T) {
	checkNoLeak(t)
	ch := spec.Channel{From: "P1", To: "P2"}
	frames := []wire.Frame{
		{Kind: wire.KindApp, Seq: 1},
		{Kind: wire.KindApp, Seq: 2, Payload: []byte{}, VC: []uint64{}},
		{Kind: wire.KindMarker, Snap: 1},
		{Kind: wire.KindApp, Seq: 3, Payload: []byte{0}},
		{Kind: wire.KindMarker, Snap: 2, VC: []uint64{0, 0}},
		{Kind: wire.KindApp, Seq: 4},
	}
	for name, mk := range map[string]func() Transport{
		"Memory":  func() Transport { return NewMemory(spec.Ring(2), MemoryConfig{}) },
		"Delayed": func() Transport { return NewMemory(spec.Ring(2), MemoryConfig{MaxDelay: time.Millisecond, Seed: 9}) },
		"TCP":     func() Transport { return newTCP(t, spec.Ring(2), TCPConfig{}) },
	} {
		tr := mk()
		in, err := tr.Inbox("P2")
		require.NoError(t, err)
		for _, f := range frames {
			require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: f}), "%s: %v", name, f)
		}
		for i, want := range frames {
			got := recvOne(t, in)
			assert.True(t, want.Equal(got.Frame), "%s: position %d: got %v, want %v", name, i, got.Frame, want)
		}
		require.NoError(t, closeBounded(t, tr, 5*time.Second), name)
	}
}

// Memory encodes nothing, so it has no frame size limit: a payload larger
// than wire.MaxFrameSize is carried.
func TestMemoryNoSizeLimit(t *testing.T) {
	checkNoLeak(t)
	tr := NewMemory(spec.Ring(2), MemoryConfig{})
	ch := spec.Channel{From: "P1", To: "P2"}
	f := wire.Frame{Kind: wire.KindApp, Seq: 1, Payload: make([]byte, wire.MaxFrameSize+1)}
	f.Payload[wire.MaxFrameSize] = 0xAB
	require.NoError(t, tr.Send(wire.Envelope{Chan: ch, Frame: f}))
	in, _ := tr.Inbox("P2")
	got := recvOne(t, in)
	assert.Equal(t, wire.MaxFrameSize+1, len(got.Frame.Payload))
	assert.Equal(t, byte(0xAB), got.Frame.Payload[wire.MaxFrameSize])
	require.NoError(t, closeBounded(t, tr, 5*time.Second))
}

// A Send that races with Close is either accepted, and then delivered or
// listed by Close, or refused with ErrClosed: never accepted and lost.
func TestSendRacingClose(t *testing.T) {
	checkNoLeak(t)
	for name, mk := range map[string]func() Transport{
		"Memory": func() Transport { return NewMemory(spec.Complete(3), MemoryConfig{}) },
		"Delayed": func() Transport {
			return NewMemory(spec.Complete(3), MemoryConfig{MaxDelay: 100 * time.Microsecond, Seed: 4})
		},
		"TCP": func() Transport { return newTCP(t, spec.Complete(3), TCPConfig{}) },
	} {
		top := spec.Complete(3)
		tr := mk()
		var mu sync.Mutex
		got := map[spec.Channel][]wire.Frame{}
		var readers sync.WaitGroup
		for _, p := range top.Procs {
			in, err := tr.Inbox(p)
			require.NoError(t, err)
			readers.Add(1)
			go func() {
				defer readers.Done()
				readAll(in, func(env wire.Envelope) {
					mu.Lock()
					got[env.Chan] = append(got[env.Chan], env.Frame)
					mu.Unlock()
				})
			}()
		}
		accepted := make([][]wire.Frame, len(top.Chans))
		sendDone := make(chan struct{})
		for i, ch := range top.Chans {
			go func() {
				defer func() { sendDone <- struct{}{} }()
				for k := uint64(1); ; k++ {
					f := frameAt(ch, k, false, int(k%3))
					err := tr.Send(wire.Envelope{Chan: ch, Frame: f})
					if err != nil {
						assert.ErrorIs(t, err, ErrClosed, "%s: send #%d on %s", name, k, ch)
						return
					}
					accepted[i] = append(accepted[i], f)
				}
			}()
		}
		time.Sleep(5 * time.Millisecond)
		err := closeBounded(t, tr, 5*time.Second)
		for range top.Chans {
			<-sendDone
		}
		readers.Wait()
		left := map[spec.Channel][]wire.Frame{}
		if err != nil {
			var se *ShutdownError
			require.ErrorAs(t, err, &se, name)
			require.Empty(t, se.Unacked, "%s: the receivers were up", name)
			for _, env := range se.Undelivered {
				left[env.Chan] = append(left[env.Chan], env.Frame)
			}
		}
		for i, ch := range top.Chans {
			all := append(append([]wire.Frame(nil), got[ch]...), left[ch]...)
			if v := fifoViolation(ch, accepted[i], all, true); v != "" {
				t.Errorf("%s: %s (%d accepted, %d read, %d listed by Close)", name, v, len(accepted[i]), len(got[ch]), len(left[ch]))
			}
		}
	}
}
