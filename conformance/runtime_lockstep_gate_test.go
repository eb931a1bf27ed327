package conformance

import (
	"fmt"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport"
	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// stepGate is a transport whose channels move only when the test says: Send
// queues the envelope on its channel (FIFO, as every transport keeps a
// channel), and release hands a channel's oldest envelope to a real
// in-memory transport (transport.Memory without delays), which puts it
// in the receiver's inbox at once. The runtime lockstep picks which
// channel moves next, as the model's scheduler picks which receive
// happens.
type stepGate struct {
	topo *spec.Topology
	mem  *transport.Memory

	mu sync.Mutex
	q  map[spec.Channel][]wire.Envelope
}

var _ transport.Transport = (*stepGate)(nil)

func newStepGate(t *spec.Topology) *stepGate {
	return &stepGate{topo: t, mem: transport.NewMemory(t, transport.MemoryConfig{}), q: map[spec.Channel][]wire.Envelope{}}
}

// Send implements transport.Transport: env waits on its channel.
func (g *stepGate) Send(env wire.Envelope) error {
	if !g.topo.HasChan(env.Chan) {
		return fmt.Errorf("%w %s", transport.ErrUnknownChannel, env.Chan)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.q[env.Chan] = append(g.q[env.Chan], wire.Envelope{Chan: env.Chan, Frame: env.Frame.Clone()})
	return nil
}

// Inbox implements transport.Transport.
func (g *stepGate) Inbox(p spec.ProcID) (*transport.Inbox, error) { return g.mem.Inbox(p) }

// Close implements transport.Transport; envelopes still waiting at the
// stepGate are not the runtime's concern (the lockstep compares them with the
// model's channels).
func (g *stepGate) Close() error { return g.mem.Close() }

// queue is a copy of what waits on c.
func (g *stepGate) queue(c spec.Channel) []wire.Envelope {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]wire.Envelope(nil), g.q[c]...)
}

// busy lists the channels with envelopes waiting, in topology order.
func (g *stepGate) busy() []spec.Channel {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []spec.Channel
	for _, c := range g.topo.Chans {
		if len(g.q[c]) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// release moves c's oldest envelope into its receiver's inbox and returns
// it.
func (g *stepGate) release(c spec.Channel) (wire.Envelope, error) {
	g.mu.Lock()
	q := g.q[c]
	if len(q) == 0 {
		g.mu.Unlock()
		return wire.Envelope{}, fmt.Errorf("nothing waits on %s", c)
	}
	env := q[0]
	g.q[c] = q[1:]
	g.mu.Unlock()
	return env, g.mem.Send(env)
}

// handled is how many frames a node has taken from its inbox and handled
// (delivered to its core, or given to its detector), by its Stats.
func handled(st *runtime.Stats) uint64 {
	return st.AppDelivered.Load() + st.MarkersDelivered.Load() + st.ControlDelivered.Load()
}

// awaitHandled waits until st counts more than before frames handled, or
// the node reports an error (a frame it rejected is not counted), or the
// backstop passes: a node that takes no frame for that long is stuck, not
// slow.
func awaitHandled(st *runtime.Stats, before uint64, errs func() int, errsBefore int) error {
	deadline := time.Now().Add(30 * time.Second)
	for handled(st) <= before {
		if errs() > errsBefore {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the node handled no frame in 30 s (%d handled)", handled(st))
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}
