package transport

import "github.com/markerwave/markerwave/impl/wire"

// slab cuts the copies of frames' payloads and vector clocks from shared
// chunks, so that copying a frame allocates once per chunk, not once or
// twice per frame. A copy keeps its chunk (slabBytes) alive while anything
// references it; payloads larger than slabBytes/8 get their own array.
// Each copy is capped (len == cap), so appending to it never writes into
// a neighbour. A slab is not safe for concurrent use.
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

// copyBytes copies b; an empty b gives nil, as in wire.Frame.Clone.
func (s *slab) copyBytes(b []byte) []byte {
	n := len(b)
	switch {
	case n == 0:
		return nil
	case n > slabBytes/8:
		return append([]byte(nil), b...)
	case len(s.bytes) < n:
		s.bytes = make([]byte, slabBytes)
	}
	c := s.bytes[:n:n]
	s.bytes = s.bytes[n:]
	copy(c, b)
	return c
}

// copyWords copies w; an empty w gives nil, as in wire.Frame.Clone.
func (s *slab) copyWords(w []uint64) []uint64 {
	n := len(w)
	switch {
	case n == 0:
		return nil
	case n > slabBytes/64:
		return append([]uint64(nil), w...)
	case len(s.words) < n:
		s.words = make([]uint64, slabBytes/8)
	}
	c := s.words[:n:n]
	s.words = s.words[n:]
	copy(c, w)
	return c
}
