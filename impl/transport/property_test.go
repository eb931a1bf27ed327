package transport

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// The property tests of the package contract (doc.go). Each draws a
// schedule with rapid, runs it on a real transport (TCP on loopback), and
// checks what the receivers got against what was sent, per channel, with
// failures that name what broke: a frame lost, duplicated, reordered,
// altered or invented, or a refusal not named as the contract says.
//
// Each runs rapid's default 100 checks (a fifth under -short), a few
// seconds for all of them; for a longer run pass -rapid.checks, e.g.
// go test -run Property ./impl/transport -rapid.checks=2000.

// drainTimeout is the TCP transports' DrainTimeout in the properties;
// closeBound is how long their Close may take when every receiver is up
// and has acknowledged (or is about to acknowledge) everything: less than
// the drain timeout, which such a Close must not wait out (it takes
// milliseconds alone), with the rest of it a margin for a loaded machine.
const (
	drainTimeout = 3 * time.Second
	closeBound   = 2 * time.Second
)

// ---- frames with an identity ----

// frameAt is the k-th frame (from 1) sent on ch: an application frame
// (Seq k, a payload of size bytes, possibly none, naming ch and k) or a
// marker (Snap k). Its identity on the channel is k.
func frameAt(ch spec.Channel, k uint64, marker bool, size int) wire.Frame {
	if marker {
		return wire.Frame{Kind: wire.KindMarker, Snap: spec.SnapID(k)}
	}
	f := wire.Frame{Kind: wire.KindApp, Seq: k}
	if size > 0 {
		tag := fmt.Sprintf("%s#%d|", ch, k)
		f.Payload = make([]byte, size)
		for i := range f.Payload {
			f.Payload[i] = tag[i%len(tag)]
		}
	}
	if k%3 == 0 {
		f.VC = []uint64{k, uint64(size)}
	}
	return f
}

// ident is the identity of a frame made by frameAt.
func ident(f wire.Frame) uint64 {
	if f.Kind == wire.KindMarker {
		return uint64(f.Snap)
	}
	return f.Seq
}

// fifoViolation compares what a channel delivered (got, in order) with
// what it was sent (sent[k-1] is frame k) and names the first break of
// exactly-once FIFO delivery, or returns "". complete says whether every
// frame must have arrived (else got may be a prefix).
func fifoViolation(ch spec.Channel, sent, got []wire.Frame, complete bool) string {
	pos := map[uint64]int{} // identity -> first position in got
	for i, f := range got {
		id := ident(f)
		if id == 0 || id > uint64(len(sent)) {
			return fmt.Sprintf("exactly-once FIFO broken on %s: invented frame %v at position %d (only %d were sent)", ch, f, i+1, len(sent))
		}
		if j, seen := pos[id]; seen {
			return fmt.Sprintf("exactly-once FIFO broken on %s: duplicate: frame #%d delivered again at position %d (first at position %d)", ch, id, i+1, j+1)
		}
		pos[id] = i
		want := uint64(i + 1)
		if id != want {
			later := false
			for _, g := range got[i+1:] {
				later = later || ident(g) == want
			}
			switch {
			case later:
				return fmt.Sprintf("exactly-once FIFO broken on %s: reordered: frame #%d delivered at position %d, before frame #%d", ch, id, i+1, want)
			case !complete:
				// Seen while frames may still arrive: #want may be late or
				// lost, but #id overtook it either way.
				return fmt.Sprintf("exactly-once FIFO broken on %s: reordered: frame #%d delivered at position %d, before frame #%d (not delivered yet)", ch, id, i+1, want)
			}
			return fmt.Sprintf("exactly-once FIFO broken on %s: lost: frame #%d never delivered, frame #%d came in its place", ch, want, id)
		}
		if !sent[id-1].Equal(f) {
			return fmt.Sprintf("exactly-once FIFO broken on %s: altered: frame #%d delivered as %v %q, sent as %v %q", ch, id, f, f.Payload, sent[id-1], sent[id-1].Payload)
		}
	}
	if complete && len(got) < len(sent) {
		return fmt.Sprintf("exactly-once FIFO broken on %s: lost: %d of %d frames delivered, frame #%d never arrived", ch, len(got), len(sent), len(got)+1)
	}
	return ""
}

// ---- a schedule of sends, cuts and pauses ----

type opKind int

const (
	opSend     opKind = iota // one frame
	opBurst                  // several frames back to back
	opCut                    // TCP.CutConnection on the channel
	opPause                  // the channel's sender sleeps a little
	opBurstCut               // a burst, and a cut Micros into it
)

type op struct {
	Kind   opKind
	N      int  // opBurst: frames
	Size   int  // payload size of the frames sent
	Marker bool // opSend: a marker
	Micros int  // opPause
}

func (o op) String() string {
	switch o.Kind {
	case opSend:
		if o.Marker {
			return "marker"
		}
		return fmt.Sprintf("send(%dB)", o.Size)
	case opBurst:
		return fmt.Sprintf("burst(%dx%dB)", o.N, o.Size)
	case opCut:
		return "cut"
	case opBurstCut:
		return fmt.Sprintf("burst(%dx%dB)+cut@%dus", o.N, o.Size, o.Micros)
	}
	return fmt.Sprintf("pause(%dus)", o.Micros)
}

// opGen draws ops; cuts only when withCuts.
func opGen(withCuts bool) *rapid.Generator[op] {
	kinds := []opKind{opSend, opSend, opBurst, opPause}
	if withCuts {
		kinds = append(kinds, opCut, opBurstCut, opBurstCut)
	}
	return rapid.Custom(func(t *rapid.T) op {
		o := op{Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		switch o.Kind {
		case opSend:
			o.Marker = rapid.IntRange(0, 4).Draw(t, "marker") == 0
			o.Size = rapid.SampledFrom([]int{0, 0, 1, 7, 100, 3000}).Draw(t, "size")
		case opBurst:
			o.N = rapid.IntRange(1, 80).Draw(t, "n")
			o.Size = rapid.SampledFrom([]int{0, 1, 50, 1000}).Draw(t, "size")
		case opPause:
			o.Micros = rapid.IntRange(0, 400).Draw(t, "micros")
		case opBurstCut:
			o.N = rapid.IntRange(1, 200).Draw(t, "n")
			o.Size = rapid.SampledFrom([]int{0, 1, 50, 1000}).Draw(t, "size")
			o.Micros = rapid.IntRange(0, 300).Draw(t, "micros")
		}
		return o
	})
}

// channelRun is the sending side of one channel in a schedule: its ops,
// run by one goroutine, and the frames Send accepted, in order.
type channelRun struct {
	ch   spec.Channel
	ops  []op
	sent []wire.Frame
	err  error // the first Send error
}

func (c *channelRun) run(tr Transport) {
	tcp, _ := tr.(*TCP)
	send := func(marker bool, size int) bool {
		f := frameAt(c.ch, uint64(len(c.sent)+1), marker, size)
		if err := tr.Send(wire.Envelope{Chan: c.ch, Frame: f}); err != nil {
			c.err = fmt.Errorf("send #%d on %s: %w", len(c.sent)+1, c.ch, err)
			return false
		}
		c.sent = append(c.sent, f)
		return true
	}
	for _, o := range c.ops {
		switch o.Kind {
		case opSend:
			if !send(o.Marker, o.Size) {
				return
			}
		case opBurst:
			for range o.N {
				if !send(false, o.Size) {
					return
				}
			}
		case opCut:
			if tcp != nil {
				tcp.CutConnection(c.ch)
			}
		case opPause:
			time.Sleep(time.Duration(o.Micros) * time.Microsecond)
		case opBurstCut:
			cut := make(chan struct{})
			go func() {
				defer close(cut)
				time.Sleep(time.Duration(o.Micros) * time.Microsecond)
				if tcp != nil {
					tcp.CutConnection(c.ch)
				}
			}()
			ok := true
			for i := 0; i < o.N && ok; i++ {
				ok = send(false, o.Size)
			}
			<-cut
			if !ok {
				return
			}
		}
	}
}

// inboxes reads the inboxes of procs into per-channel lists until they
// close or stop is called; take bounds how many envelopes each process
// reads (-1: all).
type inboxes struct {
	mu   sync.Mutex
	got  map[spec.Channel][]wire.Frame
	bad  []string // envelopes in the wrong inbox
	wg   sync.WaitGroup
	quit chan struct{}
}

func readInboxes(t interface{ Fatalf(string, ...any) }, tr Transport, procs []spec.ProcID, take map[spec.ProcID]int) *inboxes {
	r := &inboxes{got: map[spec.Channel][]wire.Frame{}, quit: make(chan struct{})}
	for _, p := range procs {
		in, err := tr.Inbox(p)
		if err != nil {
			t.Fatalf("Inbox(%s): %v", string(p), err)
		}
		limit, ok := take[p]
		if !ok {
			limit = -1
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for n := 0; limit < 0 || n < limit; n++ {
				env, ok := takeNext(in, r.quit)
				if !ok {
					return
				}
				r.mu.Lock()
				if env.Chan.To != p {
					r.bad = append(r.bad, fmt.Sprintf("the inbox of %s got %s", string(p), env))
				}
				r.got[env.Chan] = append(r.got[env.Chan], env.Frame)
				r.mu.Unlock()
			}
		}()
	}
	return r
}

func (r *inboxes) stop() { close(r.quit); r.wg.Wait() }

func (r *inboxes) frames(ch spec.Channel) []wire.Frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.Frame(nil), r.got[ch]...)
}

// waitAll waits until every channel has delivered everything it was sent,
// and fails t as soon as a channel breaks exactly-once FIFO delivery, a
// TCP channel fails, or the deadline passes.
func (r *inboxes) waitAll(t *rapid.T, tr Transport, runs []*channelRun, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		done := true
		var short []string
		for _, c := range runs {
			got := r.frames(c.ch)
			if v := fifoViolation(c.ch, c.sent, got, false); v != "" {
				t.Fatalf("%s", v)
			}
			if len(got) < len(c.sent) {
				done = false
				short = append(short, fmt.Sprintf("%s: %d of %d", c.ch, len(got), len(c.sent)))
			}
		}
		if done {
			return
		}
		if tcp, ok := tr.(*TCP); ok && tcp.Stats().Failed > 0 {
			for _, c := range runs {
				if v := fifoViolation(c.ch, c.sent, r.frames(c.ch), true); v != "" {
					t.Fatalf("%s (the sender failed the channel: %v)", v, tcp.Errors())
				}
			}
		}
		if time.Now().After(deadline) {
			for _, c := range runs {
				if v := fifoViolation(c.ch, c.sent, r.frames(c.ch), true); v != "" {
					t.Fatalf("%s (after waiting %v)", v, timeout)
				}
			}
			t.Fatalf("not delivered within %v: %s", timeout, strings.Join(short, ", "))
		}
		time.Sleep(time.Millisecond)
	}
}

// drawSchedule draws a topology and per-channel schedules.
func drawSchedule(t *rapid.T, withCuts bool) (*spec.Topology, []*channelRun) {
	top := rapid.SampledFrom([]*spec.Topology{spec.Ring(2), spec.Complete(3), spec.Ring(3)}).Draw(t, "topology")
	var runs []*channelRun
	for _, ch := range top.Chans {
		ops := rapid.SliceOfN(opGen(withCuts), 0, 12).Draw(t, "ops "+ch.String())
		runs = append(runs, &channelRun{ch: ch, ops: ops})
	}
	return top, runs
}

// runSchedule runs every channel's ops concurrently, one goroutine each.
// A Send refused stops its channel's ops; then, if r is not nil, what the
// channel delivered so far is checked first (a channel stopped by a
// broken count has usually delivered something twice already), and the
// refusal is reported if the deliveries look right.
func runSchedule(t *rapid.T, tr Transport, runs []*channelRun, r *inboxes) {
	var wg sync.WaitGroup
	for _, c := range runs {
		wg.Add(1)
		go func() { defer wg.Done(); c.run(tr) }()
	}
	wg.Wait()
	for _, c := range runs {
		if c.err == nil {
			continue
		}
		for i := 0; r != nil && i < 100; i++ {
			for _, d := range runs {
				if v := fifoViolation(d.ch, d.sent, r.frames(d.ch), false); v != "" {
					t.Fatalf("%s (and a valid frame was refused: %v)", v, c.err)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("a valid frame was refused: %v", c.err)
	}
}

// runToEnd runs the schedule on tr, waits until every frame sent
// arrived, and closes tr, which must then report nothing pending; it
// returns what the inboxes read and how long Close took.
func runToEnd(rt *rapid.T, tr Transport, top *spec.Topology, runs []*channelRun) (*inboxes, time.Duration) {
	closed := false
	rt.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	r := readInboxes(rt, tr, top.Procs, nil)
	runSchedule(rt, tr, runs, r)
	r.waitAll(rt, tr, runs, 5*time.Second)
	closed = true
	start := time.Now()
	if err := tr.Close(); err != nil {
		// A Close that found frames unacknowledged usually follows a
		// broken count, whose deliveries tell more: name them first.
		r.wg.Wait() // the inboxes are closed: their readers took everything
		for _, c := range runs {
			if v := fifoViolation(c.ch, c.sent, r.frames(c.ch), false); v != "" {
				rt.Fatalf("%s (and Close after every frame arrived: %v)", v, err)
			}
		}
		rt.Fatalf("Close after every frame arrived: %v", err)
	}
	took := time.Since(start)
	r.stop()
	return r, took
}

// TestTCPExactlyOnceFIFOProperty: on any schedule of sends (markers, empty
// and large payloads, bursts) and connection cuts at any point, on every
// channel concurrently, every channel delivers exactly the frames sent, in
// order, once each; every acknowledgement the receivers send is in range
// (the sender records none as a protocol violation), no channel fails, and
// Close, after everything arrived, reports nothing pending.
func TestTCPExactlyOnceFIFOProperty(t *testing.T) {
	checkNoLeak(t)
	tcpTotals = totals{}
	defer func() { t.Logf("over all checks: %s", &tcpTotals) }()
	rapid.Check(t, func(rt *rapid.T) {
		top, runs := drawSchedule(rt, true)
		tr, err := NewTCP(top, TCPConfig{Addrs: loopback(top), DrainTimeout: drainTimeout, RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond})
		if err != nil {
			rt.Fatalf("NewTCP: %v", err)
		}
		r, took := runToEnd(rt, tr, top, runs)
		if took > closeBound {
			rt.Fatalf("Close took %v after every frame arrived: it waited for acknowledgements it already had (bound %v)", took, closeBound)
		}
		st := tr.Stats()
		tcpTotals.add(runs, st)
		for _, e := range tr.Errors() {
			var ce *ConnError
			if errors.As(e, &ce) && ce.Op == "ack" {
				rt.Fatalf("cumulative acks broken: the receiver acknowledged frames the sender had not written: %v", e)
			}
			if errors.Is(e, ErrPeerRestarted) {
				rt.Fatalf("a channel failed though no end restarted: %v", e)
			}
		}
		for _, c := range runs {
			if v := fifoViolation(c.ch, c.sent, r.frames(c.ch), true); v != "" {
				rt.Fatalf("%s", v)
			}
		}
		if len(r.bad) > 0 {
			rt.Fatalf("misrouted: %s", strings.Join(r.bad, "; "))
		}
	})
}

// TestMemoryExactlyOnceFIFOProperty: the same for Memory, with and without
// random delays (any seed): delays reorder channels against each other,
// never a channel's own frames.
func TestMemoryExactlyOnceFIFOProperty(t *testing.T) {
	checkNoLeak(t)
	rapid.Check(t, func(rt *rapid.T) {
		top, runs := drawSchedule(rt, false)
		cfg := MemoryConfig{
			MaxDelay: rapid.SampledFrom([]time.Duration{0, 20 * time.Microsecond, 300 * time.Microsecond}).Draw(rt, "maxDelay"),
			Seed:     rapid.Uint64().Draw(rt, "seed"),
		}
		tr := NewMemory(top, cfg)
		r, _ := runToEnd(rt, tr, top, runs)
		for _, c := range runs {
			if v := fifoViolation(c.ch, c.sent, r.frames(c.ch), true); v != "" {
				rt.Fatalf("%s", v)
			}
		}
		if len(r.bad) > 0 {
			rt.Fatalf("misrouted: %s", strings.Join(r.bad, "; "))
		}
	})
}

// closePendingProperty: readers take only some envelopes, then Close.
// Every accepted frame is either taken by a reader or listed by Close, not
// both, and the frames of a channel read and then listed are exactly the
// frames sent, in order: Close reports what is pending, completely. The
// TCP transport serves both ends, so its drain succeeds and nothing is
// left unacknowledged.
func closePendingProperty(rt *rapid.T, mk func(top *spec.Topology) Transport) {
	top, runs := drawSchedule(rt, true)
	tr := mk(top)
	closed := false
	rt.Cleanup(func() {
		if !closed {
			tr.Close()
		}
	})
	take := map[spec.ProcID]int{}
	for _, p := range top.Procs {
		take[p] = rapid.IntRange(0, 100).Draw(rt, "take "+string(p))
	}
	r := readInboxes(rt, tr, top.Procs, take)
	runSchedule(rt, tr, runs, nil)
	if rapid.Bool().Draw(rt, "settle") {
		time.Sleep(2 * time.Millisecond)
	}
	closed = true
	start := time.Now()
	err := tr.Close()
	if d := time.Since(start); d > closeBound {
		rt.Fatalf("Close took %v with every receiver up: it waited for acknowledgements it already had (bound %v)", d, closeBound)
	}
	r.wg.Wait() // the readers stop at their limit or when the inboxes close
	var se ShutdownError
	if err != nil {
		var p *ShutdownError
		if !errors.As(err, &p) {
			rt.Fatalf("Close returned %v, want nil or a *ShutdownError", err)
		}
		se = *p
	}
	if len(se.Unacked) > 0 {
		rt.Fatalf("Close lists %d frames unacknowledged though the receiver was up: %v", len(se.Unacked), err)
	}
	left := map[spec.Channel][]wire.Frame{}
	for _, env := range se.Undelivered {
		left[env.Chan] = append(left[env.Chan], env.Frame)
	}
	for _, c := range runs {
		got := r.frames(c.ch)
		all := append(append([]wire.Frame(nil), got...), left[c.ch]...)
		if v := fifoViolation(c.ch, c.sent, all, true); v != "" {
			rt.Fatalf("Close with frames pending: %d read, %d listed undelivered: %s", len(got), len(left[c.ch]), v)
		}
		delete(left, c.ch)
	}
	for ch, fs := range left {
		rt.Fatalf("Close lists %d frames of %s, which sent nothing", len(fs), ch)
	}
	if len(r.bad) > 0 {
		rt.Fatalf("misrouted: %s", strings.Join(r.bad, "; "))
	}
}

func TestMemoryClosePendingProperty(t *testing.T) {
	checkNoLeak(t)
	rapid.Check(t, func(rt *rapid.T) {
		maxDelay := rapid.SampledFrom([]time.Duration{0, 50 * time.Microsecond, time.Millisecond, time.Hour}).Draw(rt, "maxDelay")
		seed := rapid.Uint64().Draw(rt, "seed")
		closePendingProperty(rt, func(top *spec.Topology) Transport {
			return NewMemory(top, MemoryConfig{MaxDelay: maxDelay, Seed: seed})
		})
	})
}

func TestTCPClosePendingProperty(t *testing.T) {
	checkNoLeak(t)
	rapid.Check(t, func(rt *rapid.T) {
		closePendingProperty(rt, func(top *spec.Topology) Transport {
			tr, err := NewTCP(top, TCPConfig{Addrs: loopback(top), DrainTimeout: drainTimeout, RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond})
			if err != nil {
				rt.Fatalf("NewTCP: %v", err)
			}
			return tr
		})
	})
}

// totals sums what the schedules of a property did, to show that the
// checks exercised what they claim (frames, cuts, resends).
type totals struct {
	mu                          sync.Mutex
	checks, frames, cuts, dials int
	resent                      int
}

var tcpTotals totals

func (s *totals) add(runs []*channelRun, st TCPStats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks++
	for _, c := range runs {
		s.frames += len(c.sent)
	}
	s.cuts += st.Cuts
	s.dials += st.Dials
	s.resent += st.Resent
}

func (s *totals) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d runs, %d frames, %d connections cut, %d handshakes, %d frames resent", s.checks, s.frames, s.cuts, s.dials, s.resent)
}
