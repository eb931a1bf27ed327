package transport

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// restartEnd is one incarnation of one end of channel P1->P2 of Ring(2),
// in a transport of its own, with the connection errors it reported.
type restartEnd struct {
	tr   *TCP
	mu   sync.Mutex
	errs []error
}

func (e *restartEnd) restarts() []*PeerRestartedError {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*PeerRestartedError
	for _, err := range e.errs {
		var pr *PeerRestartedError
		if errors.As(err, &pr) {
			out = append(out, pr)
		}
	}
	return out
}

func startEnd(t *rapid.T, cfg TCPConfig) *restartEnd {
	e := &restartEnd{}
	cfg.OnError = func(err error) { e.mu.Lock(); e.errs = append(e.errs, err); e.mu.Unlock() }
	cfg.RedialMin, cfg.RedialMax = time.Millisecond, 5*time.Millisecond
	cfg.DrainTimeout = drainTimeout
	tr, err := NewTCP(spec.Ring(2), cfg)
	if err != nil {
		t.Fatalf("NewTCP: %v", err)
	}
	e.tr = tr
	return e
}

// closeEnd closes e and returns what Close listed.
func closeEnd(t *rapid.T, e *restartEnd) ShutdownError {
	err := e.tr.Close()
	if err == nil {
		return ShutdownError{}
	}
	var se *ShutdownError
	if !errors.As(err, &se) {
		t.Fatalf("Close: %v, want nil or a *ShutdownError", err)
	}
	return *se
}

func framesOf(envs []wire.Envelope) []wire.Frame {
	var fs []wire.Frame
	for _, e := range envs {
		fs = append(fs, e.Frame)
	}
	return fs
}

// settle waits until the sender's channel has failed or every frame it
// was given is acknowledged, and says which.
func settle(t *rapid.T, e *restartEnd, ch spec.Channel) (failed bool) {
	o := e.tr.out[ch]
	deadline := time.Now().Add(5 * time.Second)
	for {
		failed, idle := o.settled()
		if failed || idle {
			return failed
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sender neither delivered its frames nor failed the channel within 5s: %v", e.tr.Errors())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTCPRestartProperty: one end of a channel restarts (its transport is
// closed and a fresh one takes its address) at any point of a stream of
// frames, acknowledged or not, read or not. Whatever the point:
//   - a restarted receiver never gets a frame sent before it started, and a
//     receiver never gets a frame of a restarted sender on the channel it
//     had with the previous one;
//   - what the first receiver incarnation got (read or listed by its
//     Close) is a prefix of what was sent, and with the frames the sender's
//     Close lists unacknowledged it covers everything: nothing is lost
//     silently;
//   - if the surviving end meets the new incarnation, the channel fails
//     once, at each end that sees it, with a *PeerRestartedError naming
//     the restarted end and both incarnations, and later Sends fail with
//     it; if the first handshake was already with the new incarnation,
//     the channel simply works.
func TestTCPRestartProperty(t *testing.T) {
	checkNoLeak(t)
	var outcomes sync.Map // outcome -> *atomic.Int64
	count := func(o string) {
		n, _ := outcomes.LoadOrStore(o, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	defer func() {
		var parts []string
		outcomes.Range(func(k, v any) bool {
			parts = append(parts, fmt.Sprintf("%s: %d", k, v.(*atomic.Int64).Load()))
			return true
		})
		sort.Strings(parts)
		t.Logf("outcomes: %s", strings.Join(parts, ", "))
	}()
	rapid.Check(t, func(rt *rapid.T) {
		receiver := rapid.Bool().Draw(rt, "receiver restarts")
		k1 := rapid.IntRange(0, 40).Draw(rt, "frames before")
		k2 := rapid.IntRange(0, 20).Draw(rt, "frames after")
		waitAcked := rapid.Bool().Draw(rt, "acked before the restart")
		take := rapid.IntRange(0, 40).Draw(rt, "frames the first receiver reads")
		r := startRestartRun(rt, count, take)
		if err := r.send(r.a, &r.sentA, 1, k1); err != nil {
			rt.Fatalf("the channel failed before any restart: %v", err)
		}
		if waitAcked {
			settle(rt, r.a, r.ch)
		}
		if receiver {
			r.checkReceiverRestart(r.restartReceiver(k1, k2))
			return
		}
		r.checkSenderRestart(r.restartSender(k2))
	})
}

// restartedSenderBase numbers the restarted sender's frames: #1001...
const restartedSenderBase = 1000

// restartRun is one case of TestTCPRestartProperty: channel P1->P2 of
// Ring(2), the ends still open, the first incarnation of each end, and
// the frames each sender incarnation sent.
type restartRun struct {
	rt     *rapid.T
	ch     spec.Channel
	addrB  string        // the receiver's address, taken again by its restart
	count  func(string)  // tallies the case's outcome
	open   []*restartEnd // closed by the case's cleanup
	a, b   *restartEnd   // the first sender and receiver
	readB  *inboxes      // the first receiver's reader
	sentA  []wire.Frame  // what the first sender sent
	sentA2 []wire.Frame  // what the restarted sender sent
}

// startRestartRun starts the first sender and receiver of a case, the
// receiver reading at most take frames.
func startRestartRun(rt *rapid.T, count func(string), take int) *restartRun {
	r := &restartRun{rt: rt, ch: spec.Channel{From: "P1", To: "P2"}, count: count}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Fatalf("listen: %v", err)
	}
	r.addrB = ln.Addr().String()
	rt.Cleanup(func() {
		for _, e := range r.open {
			e.tr.Close()
		}
	})
	r.a, r.b = r.newA(), r.newB(ln)
	r.open = append(r.open, r.a, r.b)
	r.readB = readInboxes(rt, r.b.tr, []spec.ProcID{"P2"}, map[spec.ProcID]int{"P2": take})
	return r
}

// newA starts a sender incarnation, P1.
func (r *restartRun) newA() *restartEnd {
	return startEnd(r.rt, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": r.addrB}, Local: []spec.ProcID{"P1"}})
}

// newB starts a receiver incarnation, P2, listening on ln.
func (r *restartRun) newB(ln net.Listener) *restartEnd {
	return startEnd(r.rt, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:1", "P2": r.addrB}, Local: []spec.ProcID{"P2"},
		Listeners: map[spec.ProcID]net.Listener{"P2": ln}})
}

// send sends n frames from #from through e, appending each to *sent; a
// Send refused because the channel failed (a restart seen meanwhile)
// ends it.
func (r *restartRun) send(e *restartEnd, sent *[]wire.Frame, from uint64, n int) error {
	for i := range n {
		f := frameAt(r.ch, from+uint64(i), false, 1+i%5)
		if err := e.tr.Send(wire.Envelope{Chan: r.ch, Frame: f}); err != nil {
			if errors.Is(err, ErrPeerRestarted) {
				return err
			}
			r.rt.Fatalf("send #%d: %v", from+uint64(i), err)
		}
		*sent = append(*sent, f)
	}
	return nil
}

// receiverRestart is what a case that restarted the receiver saw.
type receiverRestart struct {
	b2      *restartEnd  // the restarted receiver
	failed  bool         // the sender's channel failed
	sendErr error        // what a Send after the restart returned
	peer    uint64       // the receiver incarnation the sender remembers
	gotB    []wire.Frame // what the first receiver read or listed undelivered
	gotB2   []wire.Frame // what the restarted receiver read or listed undelivered
	unacked []wire.Frame // what the sender's Close listed unacknowledged
}

// restartReceiver closes the first receiver, starts a fresh one on its
// address, sends k2 more frames from #k1+1, and closes every end.
func (r *restartRun) restartReceiver(k1, k2 int) receiverRestart {
	rt, a, ch := r.rt, r.a, r.ch
	seB := closeEnd(rt, r.b)
	r.readB.wg.Wait()
	r.open = r.open[:1]
	ln2, err := net.Listen("tcp", r.addrB)
	if err != nil {
		rt.Fatalf("listen again on %s: %v", r.addrB, err)
	}
	o := receiverRestart{b2: r.newB(ln2)}
	r.open = append(r.open, o.b2)
	readB2 := readInboxes(rt, o.b2.tr, []spec.ProcID{"P2"}, nil)
	o.sendErr = r.send(a, &r.sentA, uint64(k1+1), k2)
	o.failed = settle(rt, a, ch)
	if o.failed && o.sendErr == nil {
		o.sendErr = a.tr.Send(wire.Envelope{Chan: ch, Frame: frameAt(ch, uint64(len(r.sentA)+1), false, 1)})
	}
	a.tr.out[ch].mu.Lock()
	o.peer = a.tr.out[ch].peer
	a.tr.out[ch].mu.Unlock()
	seA := closeEnd(rt, a)
	seB2 := closeEnd(rt, o.b2)
	r.open = nil
	readB2.wg.Wait()
	o.gotB = append(r.readB.frames(ch), framesOf(seB.Undelivered)...)
	o.gotB2 = append(readB2.frames(ch), framesOf(seB2.Undelivered)...)
	o.unacked = framesOf(seA.Unacked)
	return o
}

// checkReceiverRestart checks a receiver restart against the receiver
// incarnation the sender handshook with first.
func (r *restartRun) checkReceiverRestart(o receiverRestart) {
	if v := fifoViolation(r.ch, r.sentA, o.gotB, false); v != "" {
		r.rt.Fatalf("first receiver: %s", v)
	}
	// Frames reached the first receiver only if the sender had
	// completed a handshake with it.
	switch sawB := o.peer == r.b.tr.Incarnation() || len(o.gotB) > 0; {
	case sawB:
		r.checkFirstReceiverMet(o)
	case o.peer == o.b2.tr.Incarnation() || o.peer == 0:
		r.checkOnlyNewReceiverMet(o)
	default:
		r.rt.Fatalf("the sender remembers receiver incarnation %016x, which is neither %016x nor %016x", o.peer, r.b.tr.Incarnation(), o.b2.tr.Incarnation())
	}
}

// checkFirstReceiverMet checks a receiver restart after the sender met the
// first receiver: the new one gets none of its frames, nothing is lost
// silently, and the channel fails if and only if frames were left.
func (r *restartRun) checkFirstReceiverMet(o receiverRestart) {
	rt := r.rt
	if len(o.gotB2) > 0 {
		rt.Fatalf("the restarted receiver got %d frames sent to its previous incarnation (first %v): they were delivered twice or out of their channel's history", len(o.gotB2), o.gotB2[0])
	}
	if o.peer != r.b.tr.Incarnation() {
		rt.Fatalf("the sender handshook with receiver incarnation %016x first but remembers %016x: it cannot tell a restarted receiver from a reconnecting one", r.b.tr.Incarnation(), o.peer)
	}
	coveredBy(rt, r.ch, r.sentA, o.gotB, o.unacked)
	prs := r.a.restarts()
	if o.failed != (len(o.unacked) > 0) {
		rt.Fatalf("the channel failed: %t, but Close lists %d frames unacknowledged", o.failed, len(o.unacked))
	}
	if !o.failed {
		r.count("receiver restarted, nothing left to send")
		return
	}
	r.count("receiver restarted, channel failed")
	r.checkReceiverRestartReported(o, prs)
}

// checkReceiverRestartReported checks that the sender reported the
// receiver restart once, as prs, naming both incarnations, and that its
// Send on the failed channel returned ErrPeerRestarted.
func (r *restartRun) checkReceiverRestartReported(o receiverRestart, prs []*PeerRestartedError) {
	want := PeerRestartedError{Chan: r.ch, At: SideSender, Restarted: SideReceiver, Was: r.b.tr.Incarnation(), Now: o.b2.tr.Incarnation()}
	if len(prs) != 1 || prs[0].Chan != want.Chan || prs[0].At != want.At || prs[0].Restarted != want.Restarted || prs[0].Was != want.Was || prs[0].Now != want.Now {
		r.rt.Fatalf("the receiver restart is reported as %v, want once as %+v", prs, want)
	}
	if !errors.Is(o.sendErr, ErrPeerRestarted) {
		r.rt.Fatalf("Send on the failed channel returned %v, want ErrPeerRestarted", o.sendErr)
	}
}

// checkOnlyNewReceiverMet checks a receiver restart before the sender
// completed a handshake with the first receiver: the new one is simply
// its receiver, it gets every frame, and no restart is reported.
func (r *restartRun) checkOnlyNewReceiverMet(o receiverRestart) {
	if len(o.unacked) > 0 {
		r.rt.Fatalf("the sender met one receiver incarnation, yet its Close lists %d frames unacknowledged", len(o.unacked))
	}
	if v := fifoViolation(r.ch, r.sentA, o.gotB2, true); v != "" {
		r.rt.Fatalf("the only receiver the sender met: %s", v)
	}
	if prs := r.a.restarts(); len(prs) > 0 {
		r.rt.Fatalf("a restart is reported though the sender met one receiver incarnation: %v", prs)
	}
	r.count("receiver restarted before the first handshake")
}

// senderRestart is what a case that restarted the sender saw.
type senderRestart struct {
	a2     *restartEnd   // the restarted sender
	failed bool          // the restarted sender's channel failed
	peer   uint64        // the sender incarnation the receiver remembers
	seA    ShutdownError // what the first sender's Close listed
	seA2   ShutdownError // what the restarted sender's Close listed
	fromA  []wire.Frame  // what the receiver got of the first sender's frames
	fromA2 []wire.Frame  // what the receiver got of the restarted sender's frames
}

// restartSender closes the first sender, starts a fresh one that sends
// k2 frames from #restartedSenderBase+1, and closes every end.
func (r *restartRun) restartSender(k2 int) senderRestart {
	rt, b, ch := r.rt, r.b, r.ch
	o := senderRestart{seA: closeEnd(rt, r.a)}
	r.open = r.open[1:]
	o.a2 = r.newA()
	r.open = append(r.open, o.a2)
	r.send(o.a2, &r.sentA2, restartedSenderBase+1, k2) // may end early: the channel failed
	o.failed = settle(rt, o.a2, ch)
	b.tr.in[ch].mu.Lock()
	o.peer = b.tr.in[ch].peer
	b.tr.in[ch].mu.Unlock()
	o.seA2 = closeEnd(rt, o.a2)
	seB := closeEnd(rt, b)
	r.open = nil
	r.readB.wg.Wait()
	gotB := append(r.readB.frames(ch), framesOf(seB.Undelivered)...)
	for _, f := range gotB {
		if ident(f) > restartedSenderBase {
			o.fromA2 = append(o.fromA2, f)
		} else {
			o.fromA = append(o.fromA, f)
		}
	}
	return o
}

// checkSenderRestart checks a sender restart against the sender
// incarnation the receiver handshook with first.
func (r *restartRun) checkSenderRestart(o senderRestart) {
	switch sawA := o.peer == r.a.tr.Incarnation() || len(o.fromA) > 0; {
	case sawA:
		r.checkFirstSenderMet(o)
	case o.peer == o.a2.tr.Incarnation() || o.peer == 0:
		r.checkOnlyNewSenderMet(o)
	default:
		r.rt.Fatalf("the receiver remembers sender incarnation %016x, which is neither %016x nor %016x", o.peer, r.a.tr.Incarnation(), o.a2.tr.Incarnation())
	}
}

// checkFirstSenderMet checks a sender restart after the receiver met the
// first sender: it delivers none of the new sender's frames, nothing is
// lost silently, and the new sender's channel fails if it sent anything.
func (r *restartRun) checkFirstSenderMet(o senderRestart) {
	rt := r.rt
	if len(o.fromA2) > 0 {
		rt.Fatalf("the receiver delivered %d frames of the restarted sender (first %v) on the channel it had with the previous incarnation", len(o.fromA2), o.fromA2[0])
	}
	if o.peer != r.a.tr.Incarnation() {
		rt.Fatalf("the receiver handshook with sender incarnation %016x first but remembers %016x: it cannot tell a restarted sender from a reconnecting one", r.a.tr.Incarnation(), o.peer)
	}
	if v := fifoViolation(r.ch, r.sentA, o.fromA, false); v != "" {
		rt.Fatalf("receiver: %s", v)
	}
	coveredBy(rt, r.ch, r.sentA, o.fromA, framesOf(o.seA.Unacked))
	if o.failed != (len(r.sentA2) > 0) {
		rt.Fatalf("the new sender sent %d frames; its channel failed: %t", len(r.sentA2), o.failed)
	}
	if len(o.seA2.Unacked) != len(r.sentA2) {
		rt.Fatalf("the new sender's Close lists %d of its %d frames unacknowledged, want all", len(o.seA2.Unacked), len(r.sentA2))
	}
	if len(r.sentA2) == 0 {
		r.count("sender restarted, sent nothing after")
		return
	}
	r.count("sender restarted, channel failed")
	r.checkSenderRestartReported(o)
}

// checkSenderRestartReported checks that the receiver and the new sender
// each reported the sender restart once, naming the sender as restarted.
func (r *restartRun) checkSenderRestartReported(o senderRestart) {
	pr := r.b.restarts()
	if len(pr) != 1 || pr[0].At != SideReceiver || pr[0].Restarted != SideSender || pr[0].Was != r.a.tr.Incarnation() || pr[0].Now != o.a2.tr.Incarnation() {
		r.rt.Fatalf("the receiver reports the sender restart as %v, want once, naming incarnations %016x then %016x", pr, r.a.tr.Incarnation(), o.a2.tr.Incarnation())
	}
	pr = o.a2.restarts()
	if len(pr) != 1 || pr[0].At != SideSender || pr[0].Restarted != SideSender {
		r.rt.Fatalf("the new sender reports %v, want one PeerRestartedError naming itself as the restarted end", pr)
	}
}

// checkOnlyNewSenderMet checks a sender restart before the receiver's
// first handshake: the first sender lists every frame unacknowledged and
// the receiver got the new sender's frames in order.
func (r *restartRun) checkOnlyNewSenderMet(o senderRestart) {
	if len(o.seA.Unacked) != len(r.sentA) {
		r.rt.Fatalf("the first sender never reached the receiver, but its Close lists %d of its %d frames", len(o.seA.Unacked), len(r.sentA))
	}
	shifted := unshift(o.fromA2)
	want := unshift(r.sentA2)
	if v := fifoViolation(r.ch, want, shifted, true); v != "" {
		r.rt.Fatalf("the only sender the receiver met: %s", v)
	}
	r.count("sender restarted before the first handshake")
}

// unshift copies the restarted sender's frames fs, numbered from #1 again.
func unshift(fs []wire.Frame) []wire.Frame {
	out := make([]wire.Frame, len(fs))
	for i, f := range fs {
		out[i] = f
		out[i].Seq -= restartedSenderBase
	}
	return out
}

// coveredBy fails t unless got (a prefix of sent) and unacked (what the
// sender's Close listed) together cover sent, unacked being a suffix of
// sent that starts no later than right after got: nothing lost silently.
func coveredBy(t *rapid.T, ch spec.Channel, sent, got, unacked []wire.Frame) {
	from := len(sent) - len(unacked) // unacked must be sent[from:]
	if from < 0 || from > len(got) {
		t.Fatalf("lost silently on %s: the receiver got %d frames, the sender's Close lists %d of %d unacknowledged, so frames #%d..#%d are nowhere", ch, len(got), len(unacked), len(sent), len(got)+1, from)
	}
	for i, f := range unacked {
		if !sent[from+i].Equal(f) {
			t.Fatalf("Close lists %v as unacknowledged frame %d of %s, want %v", f, from+i+1, ch, sent[from+i])
		}
	}
}
