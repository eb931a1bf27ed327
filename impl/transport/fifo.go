package transport

import "github.com/markerwave/markerwave/impl/wire"

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

// discard drops the k oldest envelopes, at most those of the head block.
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
