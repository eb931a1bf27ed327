package transport

import (
	"errors"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// envelopeGen draws envelopes on any ordered pair of P1..P4 (Ring(3) has
// only some of them; P4 is no process) with frames valid or not: any kind
// byte, zero or nonzero Seq and Snap, payloads on markers.
func envelopeGen() *rapid.Generator[wire.Envelope] {
	procs := []spec.ProcID{"P1", "P2", "P3", "P4"}
	return rapid.Custom(func(t *rapid.T) wire.Envelope {
		ch := spec.Channel{From: rapid.SampledFrom(procs).Draw(t, "from"), To: rapid.SampledFrom(procs).Draw(t, "to")}
		f := wire.Frame{
			Kind: wire.Kind(rapid.SampledFrom([]uint8{uint8(wire.KindApp), uint8(wire.KindMarker), 0, 3}).Draw(t, "kind")),
			Seq:  rapid.SampledFrom([]uint64{0, 1, 7, 1 << 40}).Draw(t, "seq"),
			Snap: spec.SnapID(rapid.SampledFrom([]uint64{0, 1, 9}).Draw(t, "snap")),
		}
		if rapid.Bool().Draw(t, "payload") {
			f.Payload = []byte("x")
		}
		return wire.Envelope{Chan: ch, Frame: f}
	})
}

// refusalProperty: Send refuses exactly what the contract says, names it,
// and has no side effect; everything else is delivered, in order. After
// Close, every Send fails with ErrClosed.
func refusalProperty(rt *rapid.T, tr Transport, top *spec.Topology) {
	in := map[spec.ProcID]*Inbox{}
	for _, p := range top.Procs {
		c, err := tr.Inbox(p)
		if err != nil {
			rt.Fatalf("Inbox(%s): %v", string(p), err)
		}
		in[p] = c
	}
	if _, err := tr.Inbox("P4"); !errors.Is(err, ErrUnknownProc) || !strings.Contains(err.Error(), "P4") {
		rt.Fatalf("Inbox(P4) = %v, want ErrUnknownProc naming P4", err)
	}
	envs := rapid.SliceOfN(envelopeGen(), 1, 30).Draw(rt, "envelopes")
	for i, env := range envs {
		err := tr.Send(env)
		switch verr := env.Frame.Validate(); {
		case !top.HasChan(env.Chan):
			if !errors.Is(err, ErrUnknownChannel) || !strings.Contains(err.Error(), env.Chan.String()) {
				rt.Fatalf("send %d on %s (not a channel): %v, want ErrUnknownChannel naming the channel", i, env.Chan, err)
			}
		case verr != nil:
			if err == nil || !errors.Is(err, wire.ErrProtocol) || err.Error() != "transport: send on "+env.Chan.String()+": "+verr.Error() {
				rt.Fatalf("send %d of invalid frame %+v: %v, want the wire error %q for %s", i, env.Frame, err, verr, env.Chan)
			}
		case err != nil:
			rt.Fatalf("send %d of valid frame %v on %s refused: %v", i, env.Frame, env.Chan, err)
		default:
			got, ok := takeNext(in[env.Chan.To], time.After(5*time.Second))
			if !ok {
				rt.Fatalf("send %d: %s accepted but not delivered", i, env)
			}
			if got.Chan != env.Chan || !got.Frame.Equal(env.Frame) {
				rt.Fatalf("send %d: %s delivered, want %s: a refused send left something behind, or a frame was altered", i, got, env)
			}
		}
	}
	if err := tr.Close(); err != nil {
		rt.Fatalf("Close with nothing pending: %v", err)
	}
	for _, env := range envs {
		if !top.HasChan(env.Chan) || env.Frame.Validate() != nil {
			continue
		}
		if err := tr.Send(env); !errors.Is(err, ErrClosed) {
			rt.Fatalf("send on %s after Close: %v, want ErrClosed", env.Chan, err)
		}
		break
	}
}

func TestMemoryRefusalProperty(t *testing.T) {
	checkNoLeak(t)
	rapid.Check(t, func(rt *rapid.T) {
		top := spec.Ring(3)
		tr := NewMemory(top, MemoryConfig{MaxDelay: rapid.SampledFrom([]time.Duration{0, 100 * time.Microsecond}).Draw(rt, "maxDelay")})
		rt.Cleanup(func() { tr.Close() })
		refusalProperty(rt, tr, top)
	})
}

func TestTCPRefusalProperty(t *testing.T) {
	checkNoLeak(t)
	rapid.Check(t, func(rt *rapid.T) {
		top := spec.Ring(3)
		tr, err := NewTCP(top, TCPConfig{Addrs: loopback(top), DrainTimeout: drainTimeout})
		if err != nil {
			rt.Fatalf("NewTCP: %v", err)
		}
		rt.Cleanup(func() { tr.Close() })
		refusalProperty(rt, tr, top)
	})
}
