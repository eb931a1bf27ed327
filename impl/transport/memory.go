package transport

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// MemoryConfig configures a Memory transport. The zero value delivers
// without delay.
type MemoryConfig struct {
	// MaxDelay > 0 delays each envelope by a random duration in
	// [0, MaxDelay) from its Send, but never past a later envelope of the
	// same channel: a channel is delayed, its order is kept. Different
	// channels interleave differently from run to run.
	MaxDelay time.Duration
	// Seed seeds the delays; channel i draws from rand.NewPCG(Seed, i).
	Seed uint64
}

// Memory is an in-process Transport with unbounded per-channel buffering:
// Send never blocks. It delivers to every process of the topology.
type Memory struct {
	top     *spec.Topology
	cfg     MemoryConfig
	inboxes map[spec.ProcID]*Inbox
	dst     []*Inbox   // the receiver's inbox, by Topology.ChanIndex
	copies  []copier   // by Topology.ChanIndex
	chans   []*memChan // by Topology.ChanIndex; nil without delays
	hint    chanHint   // finds a Send's channel

	mu     sync.RWMutex // Send holds it shared; Close exclusively
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// copier copies the frames sent on one channel (Send copies env's
// slices), from a slab.
type copier struct {
	mu   sync.Mutex
	slab slab
}

func (c *copier) clone(f wire.Frame) wire.Frame {
	if f.Payload == nil && f.VC == nil {
		return f
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slab.clone(f)
}

// memChan holds the delayed envelopes of one channel.
type memChan struct {
	mu     sync.Mutex
	q      fifo
	due    []time.Time // due[i] is when q's i-th envelope is delivered
	last   time.Time   // due time of the newest envelope
	rng    *rand.Rand
	notify chan struct{}
}

var _ Transport = (*Memory)(nil)

// NewMemory returns a running in-memory transport for t.
func NewMemory(t *spec.Topology, cfg MemoryConfig) *Memory {
	m := &Memory{top: t, cfg: cfg, inboxes: map[spec.ProcID]*Inbox{}, done: make(chan struct{})}
	for _, p := range t.Procs {
		m.inboxes[p] = newInbox()
	}
	m.dst = make([]*Inbox, len(t.Chans))
	m.copies = make([]copier, len(t.Chans))
	for i, c := range t.Chans {
		m.dst[i] = m.inboxes[c.To]
	}
	if cfg.MaxDelay > 0 {
		m.chans = make([]*memChan, len(t.Chans))
		for i, c := range t.Chans {
			mc := &memChan{rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i))), notify: make(chan struct{}, 1)}
			m.chans[i] = mc
			dst := m.inboxes[c.To]
			m.wg.Add(1)
			go func() { defer m.wg.Done(); mc.run(dst, m.done) }()
		}
	}
	return m
}

// Send implements Transport.
func (m *Memory) Send(env wire.Envelope) error {
	i, err := checkSend(m.top, &m.hint, env)
	if err != nil {
		return err
	}
	env.Frame = m.copies[i].clone(env.Frame)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	if m.chans == nil {
		m.dst[i].push(env)
		return nil
	}
	m.chans[i].push(env, m.cfg.MaxDelay)
	return nil
}

// Inbox implements Transport.
func (m *Memory) Inbox(p spec.ProcID) (*Inbox, error) {
	b, ok := m.inboxes[p]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownProc, string(p))
	}
	return b, nil
}

// Close implements Transport. Delayed envelopes still waiting are reported
// as undelivered.
func (m *Memory) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	close(m.done)
	m.wg.Wait()
	var left []wire.Envelope
	for _, p := range m.top.Procs {
		left = append(left, m.inboxes[p].shut()...)
	}
	for _, mc := range m.chans {
		mc.mu.Lock()
		left = append(left, mc.q.drain()...)
		mc.mu.Unlock()
	}
	if len(left) > 0 {
		return &ShutdownError{Undelivered: left}
	}
	return nil
}

func (c *memChan) push(env wire.Envelope, max time.Duration) {
	c.mu.Lock()
	due := time.Now().Add(time.Duration(c.rng.Int64N(int64(max))))
	if due.Before(c.last) {
		due = c.last
	}
	c.last = due
	c.q.push(env)
	c.due = append(c.due, due)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// run moves envelopes to dst when they are due, in order.
func (c *memChan) run(dst *Inbox, done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.mu.Lock()
		var wait time.Duration = -1
		for c.q.len() > 0 {
			if d := time.Until(c.due[0]); d > 0 {
				wait = d
				break
			}
			dst.push(c.q.pop())
			c.due = c.due[1:]
		}
		if c.q.len() == 0 {
			c.due = c.due[:0]
		}
		c.mu.Unlock()
		var tc <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case <-tc:
		case <-c.notify:
		case <-done:
			return
		}
	}
}
