package transport

import (
	"errors"
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
// one per envelope (or per TCP read batch) on the transport's, and a
// wake-up only when the queue goes from empty to non-empty: no goroutine
// of its own, no channel operation per envelope, and no copy of a TCP
// read batch (it is queued as it is, as one segment).
type Inbox struct {
	mu     sync.Mutex
	segs   [][]wire.Envelope // waiting, oldest first, from segs[0][head:]
	head   int
	free   [][]wire.Envelope // emptied arrays, reused for segments
	closed bool
	ready  chan struct{} // cap 1: "envelopes may be waiting"; closed by shut
	// claimed: a reader holds the inbox (Claim, until Release).
	claimed bool
}

// ErrInboxClaimed is wrapped by Claim when another reader holds the
// inbox: two nodes reading one process's frames (two clusters started on
// one transport) would each take some of them.
var ErrInboxClaimed = errors.New("inbox already has a reader")

// Claim makes the caller the inbox's one reader until Release. It fails
// if another reader holds it (ErrInboxClaimed) or if the transport is
// closed (ErrClosed): nothing would ever arrive.
func (b *Inbox) Claim() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return ErrClosed
	case b.claimed:
		return ErrInboxClaimed
	}
	b.claimed = true
	return nil
}

// Release gives up the claim: a later reader (a node restarted on the
// same transport) may Claim the inbox.
func (b *Inbox) Release() {
	b.mu.Lock()
	b.claimed = false
	b.mu.Unlock()
}

// segSize is the capacity of a segment that single pushes fill.
const segSize = 256

// maxFree bounds the emptied arrays an inbox keeps for reuse.
const maxFree = 4

func newInbox() *Inbox { return &Inbox{ready: make(chan struct{}, 1)} }

// Ready receives a value when envelopes may be waiting and is closed when
// the inbox is: wait on it (in a select if need be), then call Take. A
// wake-up may find nothing waiting (Take returns an empty batch).
func (b *Inbox) Ready() <-chan struct{} { return b.ready }

// Take removes waiting envelopes, oldest first: at most max of them, or
// (max <= 0) the oldest segment (every envelope waiting unless the
// transport queued them in several batches). It never blocks. buf is a
// slice the caller is done with, typically the previous batch, or nil:
// its array is reused and the caller must not use buf afterwards. open is
// false once the inbox is closed: nothing comes after that. When
// envelopes are left waiting, Ready is signalled again.
func (b *Inbox) Take(buf []wire.Envelope, max int) (batch []wire.Envelope, open bool) {
	clear(buf) // drop the references the caller is done with
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return buf[:0], false
	}
	if len(b.segs) == 0 {
		return buf[:0], true
	}
	seg := b.segs[0][b.head:]
	if max <= 0 || len(seg) <= max {
		// Hand the segment over and keep buf's array for reuse.
		b.recycle(buf)
		k := copy(b.segs, b.segs[1:]) // a few segments: keep the array
		b.segs[k] = nil
		b.segs, b.head = b.segs[:k], 0
		batch = seg
	} else {
		batch = append(buf[:0], seg[:max]...)
		clear(seg[:max])
		b.head += max
	}
	if len(b.segs) > 0 {
		b.signal()
	}
	return batch, true
}

// recycle keeps a's array for a later segment. Called under mu.
func (b *Inbox) recycle(a []wire.Envelope) {
	if cap(a) >= segSize && len(b.free) < maxFree {
		b.free = append(b.free, a[:0])
	}
}

// spare is an empty array for a segment: a recycled one or a new one.
// Called under mu.
func (b *Inbox) spare() []wire.Envelope {
	if k := len(b.free); k > 0 {
		a := b.free[k-1]
		b.free[k-1] = nil
		b.free = b.free[:k-1]
		return a
	}
	return make([]wire.Envelope, 0, segSize)
}

// push appends e; it never blocks.
func (b *Inbox) push(e wire.Envelope) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.wake() {
		return
	}
	k := len(b.segs)
	if k == 0 || len(b.segs[k-1]) == cap(b.segs[k-1]) {
		b.segs = append(b.segs, b.spare())
		k++
	}
	b.segs[k-1] = append(b.segs[k-1], e)
}

// pushBatch queues es, in order, and returns an empty slice for the
// next batch. When the newest waiting segment has room for es (the
// reader is behind), es is copied into it and its own array returned
// for reuse; otherwise es becomes a segment of its own, the inbox's now,
// and a spare array is returned. So a reader that falls behind finds
// full segments, and the arrays in use stay about one per segSize
// envelopes waiting: none is allocated per batch.
func (b *Inbox) pushBatch(es []wire.Envelope) []wire.Envelope {
	if len(es) == 0 {
		return es
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.wake() {
		return nil
	}
	if k := len(b.segs); k > 0 && cap(b.segs[k-1])-len(b.segs[k-1]) >= len(es) {
		b.segs[k-1] = append(b.segs[k-1], es...)
		clear(es)
		return es[:0]
	}
	b.segs = append(b.segs, es)
	return b.spare()
}

// wake prepares a push: it signals a reader if nothing is waiting, and
// reports whether to queue. Called under mu. Nothing pushes after shut
// (Close stops every pusher first); if something did, no reader could
// take it, so it is not queued and Ready, closed, is not signalled.
func (b *Inbox) wake() bool {
	if b.closed {
		return false
	}
	if len(b.segs) == 0 {
		b.signal()
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
	var left []wire.Envelope
	for i, seg := range b.segs {
		if i == 0 {
			seg = seg[b.head:]
		}
		left = append(left, seg...)
	}
	b.segs, b.head, b.free = nil, 0, nil
	b.closed = true
	close(b.ready)
	return left
}
