package transport

import (
	"encoding/binary"
	"net"
	"sort"
)

// sendBuf holds the encodings of a channel's frames that are sent and not
// yet acknowledged, back to back in fixed-size chunks: frames base+1 ..
// last, the first of them at byte skip of chunks[0]. A frame never spans
// two chunks. A push never moves the frames already held (a growing slice
// would copy the whole backlog each time it doubles) and appends behind
// the bytes a writer may be writing: bytes once appended are never
// changed, so a writer may write views of them without the lock.
// Acknowledged chunks are dropped from the front (the last one is kept
// for the pushes that follow) and reused for later frames: the sender's
// window (sendWindow) bounds the bytes held, so a channel cycles through
// a few chunks that stay in memory and in cache instead of allocating
// new ones. A chunk a writer may still be reading (one of the frames of
// the round it writes, see hold) is reused only once the writer says it
// is done with it (release).
type sendBuf struct {
	chunks []*sendChunk
	skip   int    // bytes of chunks[0] holding acknowledged frames
	base   uint64 // frames acknowledged
	last   uint64 // frames sent
	size   int    // bytes of the frames not acknowledged
	// free are emptied chunks for the next pushes; retired were emptied
	// while a writer held them, and go to free on release.
	free, retired []*sendChunk
	// heldFrom is the first frame of the round a writer is writing
	// without the lock, 0 if none: chunks holding it or later frames are
	// held.
	heldFrom uint64
}

// sendChunk holds frames first .. first+n-1; marks[j] is where frame
// first+j*markEvery starts in b.
type sendChunk struct {
	b     []byte
	first uint64
	n     int
	marks []int32
}

// markEvery is how many frames of a chunk lie between two marks: an ack
// that ends inside a chunk walks the length prefixes of at most that many
// frames from the mark before it, not of every frame it acknowledges (a
// thousand, one ack's worth, strided over cold memory under the lock,
// with Sends waiting on the lock meanwhile: the ack reader, walk included,
// was 5% of BenchmarkTCP's CPU).
const markEvery = 64

// sendChunkSize is the size of a chunk unless a frame is larger.
const sendChunkSize = 64 << 10

// maxFreeChunks bounds the emptied chunks a channel keeps for reuse:
// enough for a window's worth of frames and a writer's round (maxWrite),
// so a sender that keeps its window full allocates none, and a backlog
// that fell to nothing (the sender paused) is refilled without new
// ones. An idle channel keeps at most that much (1.25 MiB) beside its
// last chunk.
const maxFreeChunks = (sendWindow + maxWrite) / sendChunkSize

// frameSize is the size of the frame encoding b starts with (length
// prefix included).
func frameSize(b []byte) int { return 4 + int(binary.BigEndian.Uint32(b)) }

// pending is the number of frames sent and not acknowledged.
func (s *sendBuf) pending() int { return int(s.last - s.base) }

// sent is the number of the last frame sent.
func (s *sendBuf) sent() uint64 { return s.last }

// push appends the encoding of frame last+1.
func (s *sendBuf) push(frame []byte) {
	var c *sendChunk
	if k := len(s.chunks); k > 0 {
		c = s.chunks[k-1]
	}
	if c == nil || cap(c.b)-len(c.b) < len(frame) {
		c = s.newChunk(len(frame))
		s.chunks = append(s.chunks, c)
	}
	if c.n%markEvery == 0 {
		c.marks = append(c.marks, int32(len(c.b)))
	}
	c.b = append(c.b, frame...)
	c.n++
	s.last++
	s.size += len(frame)
}

// newChunk is an empty chunk for frames from last+1 on, the first of
// them n bytes long: a reused one if it fits.
func (s *sendBuf) newChunk(n int) *sendChunk {
	if k := len(s.free); k > 0 && n <= sendChunkSize {
		c := s.free[k-1]
		s.free[k-1] = nil
		s.free = s.free[:k-1]
		c.b, c.first, c.n, c.marks = c.b[:0], s.last+1, 0, c.marks[:0]
		return c
	}
	return &sendChunk{b: make([]byte, 0, max(sendChunkSize, n)), first: s.last + 1}
}

// retire keeps emptied chunk c for reuse: at once, or on release if the
// writer may be reading it. A chunk larger than sendChunkSize (one large
// frame's) is left to the garbage collector.
func (s *sendBuf) retire(c *sendChunk) {
	switch {
	case cap(c.b) != sendChunkSize:
	case s.heldFrom != 0 && c.first+uint64(c.n) > s.heldFrom:
		s.retired = append(s.retired, c)
	case len(s.free) < maxFreeChunks:
		s.free = append(s.free, c)
	}
}

// hold says a writer is about to write views of the frames from k on
// without the lock (the frames before k it wrote before): chunks holding
// any of them are not reused until release, even once acknowledged (a
// receiver acknowledges what arrived while the write goes on).
func (s *sendBuf) hold(k uint64) { s.heldFrom = k }

// release says the writer is done with the views it wrote: the chunks
// emptied meanwhile may be reused.
func (s *sendBuf) release() {
	s.heldFrom = 0
	for i, c := range s.retired {
		s.retire(c)
		s.retired[i] = nil
	}
	s.retired = s.retired[:0]
}

// drop forgets the frames up to n, acknowledged (base <= n <= last).
func (s *sendBuf) drop(n uint64) {
	for s.base < n {
		c := s.chunks[0]
		if end := c.first + uint64(c.n) - 1; n >= end {
			s.base, s.size = end, s.size-(len(c.b)-s.skip)
			if len(s.chunks) == 1 {
				s.skip = len(c.b) // kept for the next pushes
				return
			}
			s.chunks[0] = nil
			s.chunks, s.skip = s.chunks[1:], 0
			s.retire(c)
			continue
		}
		skip := s.offset(c, n+1)
		s.base, s.size, s.skip = n, s.size-(skip-s.skip), skip
	}
}

// offset is where frame k of chunk c starts in c.b (k held by c), found
// from the mark before it.
func (s *sendBuf) offset(c *sendChunk, k uint64) int {
	i := int(k - c.first)
	off := int(c.marks[i/markEvery])
	for j := i - i%markEvery; j < i; j++ {
		off += frameSize(c.b[off:])
	}
	return off
}

// cursor is where frame k starts: byte off of chunk c, or the end of c
// when k is not sent yet.
type cursor struct {
	c   *sendChunk
	off int
	k   uint64
}

// head is the cursor of frame base+1.
func (s *sendBuf) head() cursor {
	if len(s.chunks) == 0 {
		return cursor{k: s.base + 1}
	}
	return cursor{c: s.chunks[0], off: s.skip, k: s.base + 1}
}

// locate is the cursor of frame k (base < k <= last+1), found by walking
// the frames from the head: for a (re)connection, not per frame.
func (s *sendBuf) locate(k uint64) cursor {
	cur := s.head()
	for i := 0; cur.k < k; {
		c := s.chunks[i]
		if end := c.first + uint64(c.n); k >= end && i+1 < len(s.chunks) {
			i++
			cur = cursor{c: s.chunks[i], k: end}
			continue
		}
		cur.off += frameSize(c.b[cur.off:])
		cur.k++
	}
	return cur
}

// index is the position of cur's chunk in chunks. A cursor at base+1
// may name a chunk acknowledged and dropped since; it then moves to the
// head.
func (s *sendBuf) index(cur cursor) (int, cursor) {
	if cur.k == s.base+1 {
		cur = s.head()
	}
	if cur.c == nil {
		return len(s.chunks), cur
	}
	i := sort.Search(len(s.chunks), func(i int) bool { return s.chunks[i].first >= cur.c.first })
	return i, cur
}

// round is what a writer at cur sends next: views of the frames from
// cur.k on, at most maxWrite bytes of them unless frame cur.k alone is
// larger, as many whole frames as fit, and the cursor after them.
func (s *sendBuf) round(cur cursor, scratch net.Buffers) (bufs net.Buffers, end cursor) {
	i, cur := s.index(cur)
	bufs, end = scratch[:0], cur
	room := maxWrite
	for ; i < len(s.chunks) && room > 0; i++ {
		c := s.chunks[i]
		from, k := 0, c.first
		if c == cur.c {
			from, k = cur.off, cur.k
		}
		to, next := len(c.b), c.first+uint64(c.n)
		if to-from > room {
			to, next = fit(c, from, k, room, len(bufs) > 0)
		}
		if to > from {
			bufs = append(bufs, c.b[from:to])
			room -= to - from
		}
		end = cursor{c: c, off: to, k: next}
		if to < len(c.b) {
			break
		}
	}
	return bufs, end
}

// fit is where the frames of chunk c from byte from (frame k) that fit in
// room bytes end, and the frame after them: at least the first one
// unless the round already holds some (more).
func fit(c *sendChunk, from int, k uint64, room int, more bool) (int, uint64) {
	to, next := from, k
	for to < len(c.b) {
		size := frameSize(c.b[to:])
		if to-from+size > room && (more || to > from) {
			break
		}
		to += size
		next++
	}
	return to, next
}

// each calls f with the encodings of the frames not acknowledged, in
// order.
func (s *sendBuf) each(f func(frame []byte)) {
	for i, c := range s.chunks {
		off := 0
		if i == 0 {
			off = s.skip
		}
		for off < len(c.b) {
			size := frameSize(c.b[off:])
			f(c.b[off : off+size])
			off += size
		}
	}
}
