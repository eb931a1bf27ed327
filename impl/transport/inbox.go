package transport

import (
	"sync"

	"github.com/markerwave/markerwave/impl/wire"
)

// fifo is an unbounded FIFO queue of envelopes.
type fifo struct {
	items []wire.Envelope
	head  int
}

func (q *fifo) len() int { return len(q.items) - q.head }

func (q *fifo) push(e wire.Envelope) { q.items = append(q.items, e) }

func (q *fifo) peek() wire.Envelope { return q.items[q.head] }

func (q *fifo) pop() wire.Envelope {
	e := q.items[q.head]
	q.items[q.head] = wire.Envelope{}
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0:0], q.items[q.head:]...)
		q.head = 0
	}
	return e
}

func (q *fifo) drain() []wire.Envelope {
	out := append([]wire.Envelope(nil), q.items[q.head:]...)
	q.items, q.head = nil, 0
	return out
}

// inbox is a node's unbounded inbound queue, pumped into out by one
// goroutine so that pushes never block. out is unbuffered: an envelope
// leaves the queue only when a reader has taken it, so what readers took
// is a prefix of each channel and what shut returns is the rest, even
// with a reader racing Close. (A buffered out would leave Close and a
// reader both draining it: the reader could take a later envelope than
// one Close lists.)
type inbox struct {
	mu     sync.Mutex
	q      fifo
	notify chan struct{} // cap 1: "the queue may be non-empty"
	out    chan wire.Envelope
}

func newInbox() *inbox {
	return &inbox{notify: make(chan struct{}, 1), out: make(chan wire.Envelope)}
}

// push appends e; it never blocks.
func (b *inbox) push(e wire.Envelope) {
	b.mu.Lock()
	b.q.push(e)
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// pump feeds out until done is closed. After it returns, the envelopes
// nobody received are those in the queue.
func (b *inbox) pump(done <-chan struct{}) {
	for {
		b.mu.Lock()
		if b.q.len() == 0 {
			b.mu.Unlock()
			select {
			case <-b.notify:
				continue
			case <-done:
				return
			}
		}
		e := b.q.peek()
		b.mu.Unlock()
		select {
		case b.out <- e:
			b.mu.Lock()
			b.q.pop()
			b.mu.Unlock()
		case <-done:
			return
		}
	}
}

// shut closes out and returns the envelopes no reader took, in order. Call
// it after pump has returned.
func (b *inbox) shut() []wire.Envelope {
	close(b.out)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.q.drain()
}
