package transport

import (
	"sync"

	"github.com/markerwave/markerwave/impl/wire"
)

// fifo is an unbounded FIFO queue of envelopes, kept in fixed-size
// blocks: a push never moves queued envelopes (a growing slice would copy
// the whole backlog each time it doubles), and emptied blocks are reused.
type fifo struct {
	head, tail *block // head holds the oldest envelope; nil when empty
	hi         int    // index of the oldest envelope in head
	n          int    // envelopes queued
	spare      *block // one emptied block kept for reuse
}

// blockSize is the number of envelopes in a block (about 25 KiB).
const blockSize = 256

type block struct {
	items [blockSize]wire.Envelope
	n     int // items in use
	next  *block
}

func (q *fifo) len() int { return q.n }

func (q *fifo) push(e wire.Envelope) {
	if q.tail == nil || q.tail.n == blockSize {
		b := q.spare
		if b != nil {
			q.spare = nil
		} else {
			b = new(block)
		}
		if q.tail == nil {
			q.head, q.hi = b, 0
		} else {
			q.tail.next = b
		}
		q.tail = b
	}
	q.tail.items[q.tail.n] = e
	q.tail.n++
	q.n++
}

func (q *fifo) pop() wire.Envelope {
	e := q.head.items[q.hi]
	q.discard(1)
	return e
}

// pending is a view of the oldest queued envelopes (at most blockSize, at
// least one unless the queue is empty), oldest first. It stays valid
// (pushes go behind it) until the caller discards them.
func (q *fifo) pending() []wire.Envelope {
	if q.head == nil {
		return nil
	}
	return q.head.items[q.hi:q.head.n]
}

// discard drops the k oldest envelopes, at most those of pending().
func (q *fifo) discard(k int) {
	h := q.head
	clear(h.items[q.hi : q.hi+k])
	q.hi += k
	q.n -= k
	if q.hi < h.n {
		return
	}
	// h is used up: the queue is empty and h is reused in place, or h is
	// full and kept as the spare.
	q.hi = 0
	if h == q.tail {
		h.n = 0
		return
	}
	q.head = h.next
	h.n, h.next = 0, nil
	q.spare = h
}

func (q *fifo) drain() []wire.Envelope {
	out := make([]wire.Envelope, 0, q.n)
	for b, i := q.head, q.hi; b != nil; b, i = b.next, 0 {
		out = append(out, b.items[i:b.n]...)
	}
	*q = fifo{}
	return out
}

// inbox is a node's unbounded inbound queue. out is unbuffered: an
// envelope leaves the inbox only when a reader has taken it, so what
// readers took is a prefix of each channel and what shut returns is the
// rest, even with a reader racing Close. (A buffered out would leave
// Close and a reader both draining it: the reader could take a later
// envelope than one Close lists.)
//
// A push that finds the queue empty and a reader waiting hands the
// envelope over directly; otherwise it queues it for the pump goroutine,
// which offers the queued envelopes to readers in order, taking them from
// the queue in batches (two lock round-trips per batch, not per envelope).
// Both paths keep the order: a push hands over directly only when nothing
// is queued, and the pump's envelopes stay queued until they are taken.
type inbox struct {
	mu     sync.Mutex
	q      fifo
	notify chan struct{} // cap 1: "the queue may be non-empty"
	out    chan wire.Envelope
	// halted: Close has begun (halt); pushes only queue. taken: what
	// halt took from the pump, ahead of the queue.
	halted bool
	taken  []wire.Envelope
	exited chan struct{} // closed when pump returns
}

func newInbox() *inbox {
	return &inbox{notify: make(chan struct{}, 1), out: make(chan wire.Envelope), exited: make(chan struct{})}
}

// push appends e; it never blocks.
func (b *inbox) push(e wire.Envelope) {
	b.mu.Lock()
	if b.q.len() == 0 && !b.halted {
		select {
		case b.out <- e:
			b.mu.Unlock()
			return
		default:
		}
	}
	b.q.push(e)
	b.mu.Unlock()
	b.wake()
}

// pushAll appends es in order, as len(es) pushes would, under one lock.
func (b *inbox) pushAll(es []wire.Envelope) {
	if len(es) == 0 {
		return
	}
	b.mu.Lock()
	if b.q.len() == 0 && !b.halted {
		for len(es) > 0 {
			select {
			case b.out <- es[0]:
				es = es[1:]
				continue
			default:
			}
			break
		}
	}
	for _, e := range es {
		b.q.push(e)
	}
	b.mu.Unlock()
	if len(es) > 0 {
		b.wake()
	}
}

func (b *inbox) wake() {
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// pump feeds out until done is closed. Its sends are plain channel
// sends (a select with done per envelope cost more than the send): once
// done is closed, halt takes what it still offers. After it returns, the
// envelopes nobody received are those halt took and those in the queue.
func (b *inbox) pump(done <-chan struct{}) {
	defer close(b.exited)
	for {
		b.mu.Lock()
		batch := b.q.pending()
		b.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-b.notify:
				continue
			case <-done:
				return
			}
		}
		for i, e := range batch {
			select {
			case <-done:
				b.mu.Lock()
				b.q.discard(i)
				b.mu.Unlock()
				return
			default:
			}
			b.out <- e // a reader takes it, or halt
		}
		b.mu.Lock()
		b.q.discard(len(batch))
		b.mu.Unlock()
	}
}

// halt ends direct hand-offs and takes what the pump still offers until
// the pump has returned. Call it once done is closed, before waiting for
// the pump. The pump offers in order and stops after done, so halt takes
// at most the one envelope it was offering, and no reader takes a later
// one after it.
func (b *inbox) halt() {
	b.mu.Lock()
	b.halted = true
	b.mu.Unlock()
	for {
		select {
		case e := <-b.out:
			b.taken = append(b.taken, e)
		case <-b.exited:
			return
		}
	}
}

// shut closes out and returns the envelopes no reader took, in order. Call
// it after halt and after every push.
func (b *inbox) shut() []wire.Envelope {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.out)
	left := append(b.taken, b.q.drain()...)
	b.taken = nil
	return left
}
