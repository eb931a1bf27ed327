package transport

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// A reconnect while the previous connection's reader holds frames it
// has read but not yet delivered: the receiver answers the new hello
// only once that reader stopped, so the Last it answers counts those
// frames and the sender resends none of them (tcp_recv.go, takeOver).
//
// The property TestTCPExactlyOnceFIFOProperty hits that window only on
// some cuts; this test makes it every time. The hooks hold the first
// connection's reader right before its first delivery, cut the channel
// there, and keep holding until the new hello has taken the channel
// over, or 500 ms after that hello began to stop the old connection. A
// receiver that waits for the old reader cannot take the channel over
// while the reader is held, so the hold ends at the 500 ms and the held
// frames are counted in Last; one that does not wait takes it over at
// once with a Last without them, and the held frames arrive twice, once
// from each connection (mutant transport-takeover-early).
func TestTCPTakeoverWaitsForTheOldReader(t *testing.T) {
	checkNoLeak(t)
	top := spec.Ring(2)
	ch := spec.Channel{From: "P1", To: "P2"}
	var held atomic.Bool
	var beganOnce, tookOnce sync.Once
	began, took := make(chan struct{}), make(chan struct{})
	var tr *TCP
	var heldFor time.Duration
	testHookTakingOver = func() {
		if held.Load() {
			beganOnce.Do(func() { close(began) })
		}
	}
	testHookTookOver = func() {
		if held.Load() {
			tookOnce.Do(func() { close(took) })
		}
	}
	testHookBeforeDeliver = func() {
		if !held.CompareAndSwap(false, true) {
			return
		}
		start := time.Now()
		tr.CutConnection(ch)
		select {
		case <-began:
		case <-time.After(10 * time.Second): // checked below: the sender never came back
			return
		}
		select {
		case <-took:
		case <-time.After(500 * time.Millisecond):
		}
		heldFor = time.Since(start)
	}
	t.Cleanup(func() { testHookBeforeDeliver, testHookTakingOver, testHookTookOver = nil, nil, nil })

	tr = newTCP(t, top, TCPConfig{DrainTimeout: drainTimeout, RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond})
	r := readInboxes(t, tr, top.Procs, nil)
	const frames = 100
	var sent []wire.Frame
	for k := uint64(1); k <= frames; k++ {
		f := frameAt(ch, k, k%10 == 0, 8)
		if err := tr.Send(wire.Envelope{Chan: ch, Frame: f}); err != nil {
			t.Fatalf("send #%d: %v", k, err)
		}
		sent = append(sent, f)
	}
	// Wait for the end: a break of exactly-once FIFO, or every frame
	// delivered and acknowledged (so none is resent still), or 15 s.
	o := tr.out[ch]
	acked := func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.base == frames
	}
	deadline := time.Now().Add(15 * time.Second)
	for fifoViolation(ch, sent, r.frames(ch), false) == "" && !(len(r.frames(ch)) >= frames && acked()) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	closeErr := tr.Close()
	r.wg.Wait() // the inboxes are closed: their readers took everything
	select {
	case <-began:
	default:
		t.Fatalf("the sender never reconnected after the cut: no takeover to race (stats %+v)", tr.Stats())
	}
	if v := fifoViolation(ch, sent, r.frames(ch), true); v != "" {
		t.Fatalf("%s (the old reader was held %v; Close: %v)", v, heldFor, closeErr)
	}
	if closeErr != nil {
		t.Fatalf("Close after every frame arrived: %v", closeErr)
	}
	t.Logf("the old reader was held %v before its delivery; %d frames delivered once each", heldFor, frames)
}
