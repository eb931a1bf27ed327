package transport

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// pieces is a reader that returns its bytes in pieces of the drawn sizes
// (at least one byte each), as a connection may.
type pieces struct {
	b     []byte
	sizes []int
}

func (p *pieces) Read(dst []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := len(p.b)
	if len(p.sizes) > 0 {
		n, p.sizes = min(n, p.sizes[0]), p.sizes[1:]
	}
	n = copy(dst, p.b[:n])
	p.b = p.b[n:]
	return n, nil
}

// TestFrameReaderProperty: a frameReader reads from a stream (handed over
// in pieces of any size, after bytes the handshake's reader buffered)
// exactly the frames wire.ReadFrame reads from the same bytes, with the
// same limit, and then the same error (a clean end, a cut frame, a
// length over the limit, bad bytes): frames that fit in a buffer and
// larger ones, in batches (next, then more). Each frame is capped and
// stays intact while later frames are read and earlier ones appended to:
// the buffers it views are never written again.
func TestFrameReaderProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var stream []byte
		for i := range rapid.IntRange(0, 40).Draw(t, "frames") {
			size := rapid.IntRange(0, 300).Draw(t, "payload")
			if rapid.IntRange(0, 15).Draw(t, "large") == 0 {
				size = rapid.IntRange(recvBufSize-64, 2*recvBufSize+64).Draw(t, "largePayload")
			}
			f := wire.Frame{Kind: wire.KindApp, Seq: uint64(i + 1), Payload: bytes.Repeat([]byte{byte(i)}, size),
				VC: rapid.SliceOfN(rapid.Uint64(), 0, 3).Draw(t, "vc")}
			var err error
			if stream, err = wire.AppendFrame(stream, f); err != nil {
				t.Fatal(err)
			}
		}
		stream = append(stream, rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "tail")...)
		maxSize := rapid.SampledFrom([]int{wire.MaxFrameSize, 400, recvBufSize}).Draw(t, "maxSize")

		var want []wire.Frame
		ref := bufio.NewReader(bytes.NewReader(stream))
		var wantErr error
		for wantErr == nil {
			var f wire.Frame
			if f, wantErr = wire.ReadFrame(ref, maxSize); wantErr == nil {
				want = append(want, f)
			}
		}

		pending := stream[:rapid.IntRange(0, min(len(stream), 100)).Draw(t, "pending")]
		src := &pieces{b: stream[len(pending):], sizes: rapid.SliceOf(rapid.IntRange(1, 3*recvBufSize)).Draw(t, "pieces")}
		rd := newFrameReader(src, pending, maxSize)
		var got []wire.Frame
		var err error
		for err == nil {
			var batch []wire.Envelope
			if batch, err = rd.next(nil, spec.Channel{From: "P1", To: "P2"}); err != nil {
				if len(batch) != 0 {
					t.Fatalf("next failed (%v) and returned %d envelopes", err, len(batch))
				}
				break
			}
			batch = rd.more(batch)
			for _, env := range batch {
				p := env.Frame.Payload
				if len(p) != cap(p) || len(env.Frame.VC) != cap(env.Frame.VC) {
					t.Fatalf("frame %d not capped: payload %d/%d, clock %d/%d", len(got)+1, len(p), cap(p), len(env.Frame.VC), cap(env.Frame.VC))
				}
				got = append(got, env.Frame)
				_ = append(p, 0xEE)
			}
		}
		if err.Error() != wantErr.Error() {
			t.Fatalf("after %d frames: error %v, wire.ReadFrame: %v", len(got), err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("read %d frames, wire.ReadFrame %d", len(got), len(want))
		}
		for i := range want {
			if !want[i].Equal(got[i]) {
				t.Fatalf("frame %d: %v, want %v", i+1, got[i], want[i])
			}
		}
	})
}
