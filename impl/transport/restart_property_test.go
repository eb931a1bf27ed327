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
		ch := spec.Channel{From: "P1", To: "P2"}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			rt.Fatalf("listen: %v", err)
		}
		addrB := ln.Addr().String()
		newA := func() *restartEnd {
			return startEnd(rt, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:0", "P2": addrB}, Local: []spec.ProcID{"P1"}})
		}
		newB := func(ln net.Listener) *restartEnd {
			return startEnd(rt, TCPConfig{Addrs: map[spec.ProcID]string{"P1": "127.0.0.1:1", "P2": addrB}, Local: []spec.ProcID{"P2"},
				Listeners: map[spec.ProcID]net.Listener{"P2": ln}})
		}
		var open []*restartEnd
		rt.Cleanup(func() {
			for _, e := range open {
				e.tr.Close()
			}
		})
		a, b := newA(), newB(ln)
		open = append(open, a, b)
		readB := readInboxes(rt, b.tr, []spec.ProcID{"P2"}, map[spec.ProcID]int{"P2": take})
		var sentA, sentA2 []wire.Frame
		// send sends n frames from #from; a Send refused because the
		// channel failed (a restart seen meanwhile) ends it.
		send := func(e *restartEnd, sent *[]wire.Frame, from uint64, n int) error {
			for i := range n {
				f := frameAt(ch, from+uint64(i), false, 1+i%5)
				if err := e.tr.Send(wire.Envelope{Chan: ch, Frame: f}); err != nil {
					if errors.Is(err, ErrPeerRestarted) {
						return err
					}
					rt.Fatalf("send #%d: %v", from+uint64(i), err)
				}
				*sent = append(*sent, f)
			}
			return nil
		}
		if err := send(a, &sentA, 1, k1); err != nil {
			rt.Fatalf("the channel failed before any restart: %v", err)
		}
		if waitAcked {
			settle(rt, a, ch)
		}

		if receiver {
			seB := closeEnd(rt, b)
			readB.wg.Wait()
			open = open[:1]
			ln2, err := net.Listen("tcp", addrB)
			if err != nil {
				rt.Fatalf("listen again on %s: %v", addrB, err)
			}
			b2 := newB(ln2)
			open = append(open, b2)
			readB2 := readInboxes(rt, b2.tr, []spec.ProcID{"P2"}, nil)
			sendErr := send(a, &sentA, uint64(k1+1), k2)
			failed := settle(rt, a, ch)
			if failed && sendErr == nil {
				sendErr = a.tr.Send(wire.Envelope{Chan: ch, Frame: frameAt(ch, uint64(len(sentA)+1), false, 1)})
			}
			a.tr.out[ch].mu.Lock()
			peer := a.tr.out[ch].peer
			a.tr.out[ch].mu.Unlock()
			seA := closeEnd(rt, a)
			seB2 := closeEnd(rt, b2)
			open = nil
			readB2.wg.Wait()
			gotB := append(readB.frames(ch), framesOf(seB.Undelivered)...)
			gotB2 := append(readB2.frames(ch), framesOf(seB2.Undelivered)...)
			unacked := framesOf(seA.Unacked)
			if v := fifoViolation(ch, sentA, gotB, false); v != "" {
				rt.Fatalf("first receiver: %s", v)
			}
			// Frames reached the first receiver only if the sender had
			// completed a handshake with it.
			switch sawB := peer == b.tr.Incarnation() || len(gotB) > 0; {
			case sawB:
				if len(gotB2) > 0 {
					rt.Fatalf("the restarted receiver got %d frames sent to its previous incarnation (first %v): they were delivered twice or out of their channel's history", len(gotB2), gotB2[0])
				}
				if peer != b.tr.Incarnation() {
					rt.Fatalf("the sender handshook with receiver incarnation %016x first but remembers %016x: it cannot tell a restarted receiver from a reconnecting one", b.tr.Incarnation(), peer)
				}
				coveredBy(rt, ch, sentA, gotB, unacked)
				prs := a.restarts()
				if failed != (len(unacked) > 0) {
					rt.Fatalf("the channel failed: %t, but Close lists %d frames unacknowledged", failed, len(unacked))
				}
				if !failed {
					count("receiver restarted, nothing left to send")
					break
				}
				count("receiver restarted, channel failed")
				want := PeerRestartedError{Chan: ch, At: SideSender, Restarted: SideReceiver, Was: b.tr.Incarnation(), Now: b2.tr.Incarnation()}
				if len(prs) != 1 || prs[0].Chan != want.Chan || prs[0].At != want.At || prs[0].Restarted != want.Restarted || prs[0].Was != want.Was || prs[0].Now != want.Now {
					rt.Fatalf("the receiver restart is reported as %v, want once as %+v", prs, want)
				}
				if !errors.Is(sendErr, ErrPeerRestarted) {
					rt.Fatalf("Send on the failed channel returned %v, want ErrPeerRestarted", sendErr)
				}
			case peer == b2.tr.Incarnation() || peer == 0:
				// The sender never completed a handshake with the first
				// receiver: the new one is simply its receiver.
				if len(unacked) > 0 {
					rt.Fatalf("the sender met one receiver incarnation, yet its Close lists %d frames unacknowledged", len(unacked))
				}
				if v := fifoViolation(ch, sentA, gotB2, true); v != "" {
					rt.Fatalf("the only receiver the sender met: %s", v)
				}
				if prs := a.restarts(); len(prs) > 0 {
					rt.Fatalf("a restart is reported though the sender met one receiver incarnation: %v", prs)
				}
				count("receiver restarted before the first handshake")
			default:
				rt.Fatalf("the sender remembers receiver incarnation %016x, which is neither %016x nor %016x", peer, b.tr.Incarnation(), b2.tr.Incarnation())
			}
			return
		}

		// The sender restarts.
		seA := closeEnd(rt, a)
		open = open[1:]
		a2 := newA()
		open = append(open, a2)
		const base = 1000             // the new sender's frames are #1001...
		send(a2, &sentA2, base+1, k2) // may end early: the channel failed
		failed := settle(rt, a2, ch)
		b.tr.in[ch].mu.Lock()
		peer := b.tr.in[ch].peer
		b.tr.in[ch].mu.Unlock()
		seA2 := closeEnd(rt, a2)
		seB := closeEnd(rt, b)
		open = nil
		readB.wg.Wait()
		gotB := append(readB.frames(ch), framesOf(seB.Undelivered)...)
		var fromA, fromA2 []wire.Frame
		for _, f := range gotB {
			if ident(f) > base {
				fromA2 = append(fromA2, f)
			} else {
				fromA = append(fromA, f)
			}
		}
		switch sawA := peer == a.tr.Incarnation() || len(fromA) > 0; {
		case sawA:
			if len(fromA2) > 0 {
				rt.Fatalf("the receiver delivered %d frames of the restarted sender (first %v) on the channel it had with the previous incarnation", len(fromA2), fromA2[0])
			}
			if peer != a.tr.Incarnation() {
				rt.Fatalf("the receiver handshook with sender incarnation %016x first but remembers %016x: it cannot tell a restarted sender from a reconnecting one", a.tr.Incarnation(), peer)
			}
			if v := fifoViolation(ch, sentA, fromA, false); v != "" {
				rt.Fatalf("receiver: %s", v)
			}
			coveredBy(rt, ch, sentA, fromA, framesOf(seA.Unacked))
			if failed != (len(sentA2) > 0) {
				rt.Fatalf("the new sender sent %d frames; its channel failed: %t", len(sentA2), failed)
			}
			if len(seA2.Unacked) != len(sentA2) {
				rt.Fatalf("the new sender's Close lists %d of its %d frames unacknowledged, want all", len(seA2.Unacked), len(sentA2))
			}
			if len(sentA2) == 0 {
				count("sender restarted, sent nothing after")
				break
			}
			count("sender restarted, channel failed")
			pr := b.restarts()
			if len(pr) != 1 || pr[0].At != SideReceiver || pr[0].Restarted != SideSender || pr[0].Was != a.tr.Incarnation() || pr[0].Now != a2.tr.Incarnation() {
				rt.Fatalf("the receiver reports the sender restart as %v, want once, naming incarnations %016x then %016x", pr, a.tr.Incarnation(), a2.tr.Incarnation())
			}
			pr = a2.restarts()
			if len(pr) != 1 || pr[0].At != SideSender || pr[0].Restarted != SideSender {
				rt.Fatalf("the new sender reports %v, want one PeerRestartedError naming itself as the restarted end", pr)
			}
		case peer == a2.tr.Incarnation() || peer == 0:
			if len(seA.Unacked) != len(sentA) {
				rt.Fatalf("the first sender never reached the receiver, but its Close lists %d of its %d frames", len(seA.Unacked), len(sentA))
			}
			shifted := make([]wire.Frame, len(fromA2))
			for i, f := range fromA2 {
				shifted[i] = f
				shifted[i].Seq -= base
			}
			want := make([]wire.Frame, len(sentA2))
			for i, f := range sentA2 {
				want[i] = f
				want[i].Seq -= base
			}
			if v := fifoViolation(ch, want, shifted, true); v != "" {
				rt.Fatalf("the only sender the receiver met: %s", v)
			}
			count("sender restarted before the first handshake")
		default:
			rt.Fatalf("the receiver remembers sender incarnation %016x, which is neither %016x nor %016x", peer, a.tr.Incarnation(), a2.tr.Incarnation())
		}
	})
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
