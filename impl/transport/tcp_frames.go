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
// Ownership. Every read goes into the connection's one buffer, reused
// for the whole connection: a frame is decoded where it arrived and its
// payload and clock are copied out into a slab (chunks shared by many
// frames, each copy capped, so an append never reaches a neighbour),
// which the frames delivered own from then on. So a frame costs no
// allocation of its own, the buffer the kernel copies into stays in
// cache, and a payload kept long keeps only its slab chunk (slabBytes)
// alive. (Payloads used to be views of the buffer they arrived in, a
// new 64 KiB buffer each time one filled: about as many bytes allocated
// a frame as its encoding, against its payload alone now.) When the
// buffer is full, the bytes of the frame cut at its end move to its
// front.
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
	slab     slab   // the copies of payloads and clocks
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
	size, err := wire.DecodeViewTo(f, b, rd.max, rd.slab.freeWords())
	if err != nil {
		return false, err
	}
	rd.off += size
	rd.read += uint64(size)
	f.Payload = rd.slab.copyBytes(f.Payload) // the buffer is read into again
	f.VC = rd.slab.claimWords(f.VC)
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

// fill reads more bytes, first moving the bytes not decoded yet (a cut
// frame's, if any) to the front of the buffer if they do not start there.
func (rd *frameReader) fill() error {
	if rd.off > 0 {
		rd.end = copy(rd.buf, rd.buf[rd.off:rd.end])
		rd.off = 0
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
