package transport

import (
	"sync"

	"github.com/markerwave/markerwave/impl/wire"
)

// Inbox is a process's inbound queue. The transport appends every
// envelope that reaches the process, each channel's in order; a reader
// takes them in batches, as many as are waiting at once:
//
//	var batch []wire.Envelope
//	for {
//		<-in.Ready() // or a case of the reader's select
//		var open bool
//		batch, open = in.Take(batch, 0)
//		for _, env := range batch {
//			// handle env
//		}
//		if !open {
//			break // closed: nothing more comes
//		}
//	}
//
// An envelope leaves the transport when Take returns it: what readers
// took is a prefix of each channel, and Close lists the rest, even with a
// reader racing Close. The queue is unbounded, so a slow reader never
// blocks a sender.
//
// The hand-off costs a lock round-trip per batch on the reader's side and
// one per envelope (or per batch of a TCP read) on the transport's, and
// a wake-up only when the queue goes from empty to non-empty: no goroutine
// of its own and no channel operation per envelope.
type Inbox struct {
	mu     sync.Mutex
	q      []wire.Envelope // waiting, oldest first, from q[head:]
	head   int
	closed bool
	ready  chan struct{} // cap 1: "envelopes may be waiting"; closed by shut
}

func newInbox() *Inbox { return &Inbox{ready: make(chan struct{}, 1)} }

// Ready receives a value when envelopes may be waiting and is closed when
// the inbox is: wait on it (in a select if need be), then call Take. A
// wake-up may find nothing waiting (Take returns an empty batch).
func (b *Inbox) Ready() <-chan struct{} { return b.ready }

// Take removes the waiting envelopes, at most max of them (all if max <=
// 0), and returns them oldest first. It never blocks. buf is a slice the
// caller is done with, typically the previous batch, or nil: its array is
// reused and the caller must not use buf afterwards. open is false once
// the inbox is closed: no envelope comes after that batch. When max leaves
// envelopes waiting, Ready is signalled again.
func (b *Inbox) Take(buf []wire.Envelope, max int) (batch []wire.Envelope, open bool) {
	clear(buf) // drop the references the caller is done with
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.q) - b.head
	switch {
	case b.closed:
		return buf[:0], false
	case n == 0:
		return buf[:0], true
	case max <= 0 || n <= max:
		// Hand the whole queue over and keep buf's array for the next.
		batch = b.q[b.head:]
		b.q, b.head = buf[:0], 0
		return batch, true
	}
	batch = append(buf[:0], b.q[b.head:b.head+max]...)
	clear(b.q[b.head : b.head+max])
	b.head += max
	b.signal()
	return batch, true
}

// push appends e; it never blocks.
func (b *Inbox) push(e wire.Envelope) {
	b.mu.Lock()
	if b.grow(1) {
		b.q = append(b.q, e)
	}
	b.mu.Unlock()
}

// pushBatch appends es in order under one lock and returns an empty
// slice for the next batch. When nothing is waiting, es itself becomes
// the queue (no copy) and the queue's empty array is returned.
func (b *Inbox) pushBatch(es []wire.Envelope) []wire.Envelope {
	if len(es) == 0 {
		return es
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.q) == b.head && !b.closed {
		spare := b.q[:0]
		b.q, b.head = es, 0
		b.signal()
		return spare
	}
	if b.grow(len(es)) {
		b.q = append(b.q, es...)
	}
	clear(es)
	return es[:0]
}

// grow prepares the append of k envelopes and reports whether to make it:
// it signals a reader if the queue is empty, and moves the waiting
// envelopes to the front of q when taken ones fill at least half of it and
// the append would not fit. Called under mu. Nothing pushes after shut
// (Close stops every pusher first); if something did, no reader could
// take it, so it is not appended and Ready, closed, is not signalled.
func (b *Inbox) grow(k int) bool {
	if b.closed {
		return false
	}
	if len(b.q) == b.head {
		b.q, b.head = b.q[:0], 0
		b.signal()
		return true
	}
	if len(b.q)+k > cap(b.q) && b.head >= len(b.q)/2 {
		n := copy(b.q, b.q[b.head:])
		clear(b.q[n:])
		b.q, b.head = b.q[:n], 0
	}
	return true
}

// signal wakes a reader waiting on Ready. Called under mu.
func (b *Inbox) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// shut closes the inbox and returns the envelopes no reader took, in
// order. Call it once, after the last push.
func (b *Inbox) shut() []wire.Envelope {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := b.q[b.head:]
	b.q, b.head = nil, 0
	b.closed = true
	close(b.ready)
	return left
}
