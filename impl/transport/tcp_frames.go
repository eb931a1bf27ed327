package transport

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// recvBufSize is the size of a receive buffer: a read fills at most that
// much, and a frame whose encoding fits in one is decoded where it
// arrived.
const recvBufSize = 64 << 10

// frameReader reads the frames of one connection (the receiving end of
// TCP's protocol) and decodes them in place.
//
// Ownership. Reads go into a buffer that the reader never writes again
// once it has handed out frames from it: a frame's payload is a view of
// the bytes it arrived in (capped, so an append never reaches the next
// frame), not a copy, and the frames delivered own their bytes from
// then on; the garbage collector frees a buffer with the last frame that
// refers to it. When a buffer is full, the bytes of the frame cut at its
// end move to a new one. Clocks are decoded into a slab of words (one
// chunk for many frames). So a frame costs no allocation and no copy of
// its own; the price is that a payload kept long keeps its whole buffer
// (recvBufSize) alive, as a slab copy kept its chunk.
//
// A frame larger than a buffer is read with wire.ReadFrame, whose memory
// grows with the bytes that arrive, and so is the end of a stream cut
// inside a frame: the frame rules and their errors are wire's.
type frameReader struct {
	r        io.Reader
	buf      []byte
	off, end int    // buf[off:end] is read and not decoded yet
	max      int    // the size limit of a frame's body (TCPConfig.MaxFrameSize)
	read     uint64 // bytes of the frames returned so far
	words    slab
}

// newFrameReader reads frames of at most maxSize bytes from r, after the
// bytes pending (read from r before, by the handshake's reader), which
// it copies.
func newFrameReader(r io.Reader, pending []byte, maxSize int) *frameReader {
	rd := &frameReader{r: r, buf: make([]byte, max(recvBufSize, len(pending))), max: maxSize}
	rd.end = copy(rd.buf, pending)
	return rd
}

// next appends the next frame to batch, as an envelope on ch, reading
// until it is whole. Errors are those of wire.ReadFrame reading the same
// bytes, or the connection's; batch is then unchanged.
func (rd *frameReader) next(batch []wire.Envelope, ch spec.Channel) ([]wire.Envelope, error) {
	batch, e := grow(batch, ch)
	if err := rd.readTo(&e.Frame); err != nil {
		*e = wire.Envelope{}
		return batch[:len(batch)-1], err
	}
	return batch, nil
}

// grow appends an envelope on ch to batch for a decoder to fill in (it
// sets every field of the frame) and returns it. It writes the channel
// field by field: appending a composite literal copies it in with
// typedmemmove, whose write barrier (while the garbage collector marks)
// walks the type's pointer bitmap, 6% of BenchmarkTCP's CPU.
func grow(batch []wire.Envelope, ch spec.Channel) ([]wire.Envelope, *wire.Envelope) {
	if len(batch) < cap(batch) {
		batch = batch[:len(batch)+1]
	} else {
		batch = append(batch, wire.Envelope{})
	}
	e := &batch[len(batch)-1]
	e.Chan.From, e.Chan.To = ch.From, ch.To
	return batch, e
}

// readTo reads the next frame into *f, waiting until it is whole.
func (rd *frameReader) readTo(f *wire.Frame) error {
	for {
		if ok, err := rd.decode(f); ok || err != nil {
			return err
		}
		if rd.large() {
			var err error
			*f, err = rd.readLarge()
			return err
		}
		if err := rd.fill(); err != nil {
			return err
		}
	}
}

// more appends to batch the frames already whole in the buffer, up to
// maxBatch in all (batch's envelopes are all on the channel of its
// first). It never blocks and stops at the first frame that is not whole
// or not valid: next reports that one.
func (rd *frameReader) more(batch []wire.Envelope) []wire.Envelope {
	ch := batch[0].Chan
	for len(batch) < maxBatch {
		var e *wire.Envelope
		batch, e = grow(batch, ch)
		if ok, _ := rd.decode(&e.Frame); !ok {
			*e = wire.Envelope{}
			return batch[:len(batch)-1]
		}
	}
	return batch
}

// whole reports whether the buffer holds a whole frame: decoding it does
// not block.
func (rd *frameReader) whole() bool {
	b := rd.buf[rd.off:rd.end]
	return len(b) >= 4 && uint64(len(b)-4) >= uint64(binary.BigEndian.Uint32(b))
}

// decode decodes into *f the frame at the front of the buffer if it is
// whole (ok) or its length is over the limit (the error). Nothing is
// consumed otherwise.
func (rd *frameReader) decode(f *wire.Frame) (ok bool, err error) {
	b := rd.buf[rd.off:rd.end]
	if len(b) < 4 {
		return false, nil
	}
	if n := binary.BigEndian.Uint32(b); uint64(n) <= uint64(rd.max) && uint64(len(b)-4) < uint64(n) {
		return false, nil
	}
	size, err := wire.DecodeViewTo(f, b, rd.max, rd.words.freeWords())
	if err != nil {
		return false, err
	}
	rd.off += size
	rd.read += uint64(size)
	f.VC = rd.words.claimWords(f.VC)
	return true, nil
}

// large reports whether the frame at the front does not fit in a buffer
// (its length prefix is there, within the limit, as decode saw).
func (rd *frameReader) large() bool {
	b := rd.buf[rd.off:rd.end]
	return len(b) >= 4 && 4+uint64(binary.BigEndian.Uint32(b)) > uint64(len(rd.buf))
}

// readLarge reads the frame at the front with wire.ReadFrame: the bytes
// buffered (all of them part of it), then the rest from the connection.
func (rd *frameReader) readLarge() (wire.Frame, error) {
	rd.read += 4 + uint64(binary.BigEndian.Uint32(rd.buf[rd.off:]))
	head := bytes.NewReader(rd.buf[rd.off:rd.end])
	rd.off = rd.end
	return wire.ReadFrame(io.MultiReader(head, rd.r), rd.max)
}

// fill reads more bytes, first moving the bytes of a cut frame to a new
// buffer if this one is full.
func (rd *frameReader) fill() error {
	if rd.end == len(rd.buf) {
		nb := make([]byte, recvBufSize)
		rd.end = copy(nb, rd.buf[rd.off:rd.end])
		rd.buf, rd.off = nb, 0
	}
	n, err := rd.r.Read(rd.buf[rd.end:])
	rd.end += n
	if n > 0 || err == nil {
		return nil // a Read error recurs on the next Read
	}
	return rd.ended(err)
}

// ended is the error of a stream whose Read failed with err: the end of
// the stream inside a frame is the error wire.ReadFrame gives for those
// bytes (ErrTruncated); anything else is err.
func (rd *frameReader) ended(err error) error {
	if err == io.EOF && rd.end > rd.off {
		_, err = wire.ReadFrame(bytes.NewReader(rd.buf[rd.off:rd.end]), rd.max)
	}
	return err
}
