package transport

import "github.com/markerwave/markerwave/impl/wire"

// slab cuts the copies of frames' payloads and vector clocks from shared
// chunks, so that copying a frame allocates once per chunk, not once or
// twice per frame. A copy keeps its chunk (slabBytes) alive while anything
// references it; a payload or clock longer than an eighth of a chunk gets
// its own array. Each copy is capped (len == cap), so appending to it
// never writes into a neighbour. A slab is not safe for concurrent use.
type slab struct {
	bytes []byte
	words []uint64
}

// slabBytes is the size of a chunk of payload bytes (and of clock entries).
const slabBytes = 4 << 10

// clone is wire.Frame.Clone with the copies cut from s.
func (s *slab) clone(f wire.Frame) wire.Frame {
	if f.Payload != nil {
		f.Payload = s.copyBytes(f.Payload)
	}
	if f.VC != nil {
		f.VC = s.copyWords(f.VC)
	}
	return f
}

// freeWords is the unused rest of the clock chunk (a new chunk when
// little is left), for a decoder to write a clock into; claimWords then
// keeps what it wrote. A clock longer than the rest gets an array of
// its own from the decoder.
func (s *slab) freeWords() []uint64 {
	if len(s.words) < slabBytes/64 {
		s.words = make([]uint64, slabBytes/8)
	}
	return s.words
}

// claimWords keeps vc, written at the front of freeWords (or into an
// array of its own), capped; nil if empty.
func (s *slab) claimWords(vc []uint64) []uint64 {
	n := len(vc)
	if n == 0 {
		return nil
	}
	if n <= len(s.words) && &s.words[0] == &vc[0] {
		s.words = s.words[n:]
	}
	return vc[:n:n]
}

// copyBytes copies b; an empty b gives nil, as in wire.Frame.Clone.
func (s *slab) copyBytes(b []byte) []byte { return cut(&s.bytes, b, slabBytes) }

// copyWords copies w; an empty w gives nil, as in wire.Frame.Clone.
func (s *slab) copyWords(w []uint64) []uint64 { return cut(&s.words, w, slabBytes/8) }

// cut copies src into the front of *chunk, which it then advances; a new
// chunk of size elements replaces one too short, and a src longer than
// size/8 gets its own array.
func cut[T any](chunk *[]T, src []T, size int) []T {
	n := len(src)
	switch {
	case n == 0:
		return nil
	case n > size/8:
		c := make([]T, n) // capped: append rounds its capacity up
		copy(c, src)
		return c
	case len(*chunk) < n:
		*chunk = make([]T, size)
	}
	c := (*chunk)[:n:n]
	*chunk = (*chunk)[n:]
	copy(c, src)
	return c
}
