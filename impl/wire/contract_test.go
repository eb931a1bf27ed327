package wire

// Property tests of the contract in doc.go, one test per promise, over
// generated frames and control messages.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

// readOne is one of the package's readers, seen as: read a message from r
// and return the encoding of what it read (nil if it cannot be encoded).
type readOne func(r io.Reader) ([]byte, error)

func readFrameEnc(r io.Reader) ([]byte, error) {
	f, err := ReadFrame(r, 0)
	if err != nil {
		return nil, err
	}
	return Encode(f)
}

func readHelloEnc(r io.Reader) ([]byte, error) {
	h, err := ReadHello(r)
	if err != nil {
		return nil, err
	}
	return EncodeHello(h)
}

func readReplyEnc(r io.Reader) ([]byte, error) {
	rep, err := ReadHelloReply(r)
	if err != nil {
		return nil, err
	}
	return EncodeHelloReply(rep), nil
}

func readAckEnc(r io.Reader) ([]byte, error) {
	a, err := ReadAck(r)
	if err != nil {
		return nil, err
	}
	return EncodeAck(a), nil
}

func decodeEnc(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	f, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return Encode(f)
}

// checkCorruptions asserts the canonical-encoding promise on enc, a valid
// encoding, for read: every strict prefix is refused as truncated, and
// every single-byte corruption (enc[i] ^ flip, flip drawn per position)
// is refused with an error matching ErrProtocol or read as a message
// whose encoding is exactly the bytes the reader consumed.
func checkCorruptions(t *rapid.T, what string, enc []byte, read readOne, stream bool) {
	for cut := 0; cut < len(enc); cut++ {
		_, err := read(bytes.NewReader(enc[:cut]))
		switch {
		case stream && cut == 0:
			if err != io.EOF {
				t.Fatalf("%s cut to 0 bytes: got %v, want io.EOF (a clean end of input)", what, err)
			}
		case !errors.Is(err, ErrTruncated):
			t.Fatalf("%s cut to %d of %d bytes: got %v, want ErrTruncated", what, cut, len(enc), err)
		case stream && !errors.Is(err, io.ErrUnexpectedEOF):
			t.Fatalf("%s cut to %d of %d bytes: %v does not match io.ErrUnexpectedEOF", what, cut, len(enc), err)
		}
	}
	c := make([]byte, len(enc))
	for i := range enc {
		flip := rapid.ByteRange(1, 255).Draw(t, "flip")
		copy(c, enc)
		c[i] ^= flip
		r := bytes.NewReader(c)
		out, err := read(r)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("%s with byte %d corrupted (%#x -> %#x): error %v does not match ErrProtocol", what, i, enc[i], c[i], err)
			}
			continue
		}
		consumed := c[:len(c)-r.Len()]
		if !bytes.Equal(out, consumed) {
			t.Fatalf("%s with byte %d corrupted (%#x -> %#x) was accepted, but its encoding is not the bytes read (not canonical):\n read %x\n enc  %x", what, i, enc[i], c[i], consumed, out)
		}
	}
}

func TestFrameCorruptionProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		b, err := Encode(f)
		require.NoError(t, err)
		checkCorruptions(t, "Decode: frame "+f.String(), b, decodeEnc, false)
		checkCorruptions(t, "ReadFrame: frame "+f.String(), b, readFrameEnc, true)
	})
}

// TestDecodeAnyBytesProperty: whatever bytes Decode accepts encode back
// to themselves, and whatever it refuses it refuses as a protocol
// violation (the fuzz target's check, on rapid's inputs: short byte
// strings behind a length prefix that fits them).
func TestDecodeAnyBytesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "body")
		if rapid.Bool().Draw(t, "header") {
			body = append([]byte{Version, byte(rapid.SampledFrom([]Kind{KindApp, KindMarker}).Draw(t, "kind"))}, body...)
		}
		in := frameBytes(body...)
		f, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("Decode(%x): error %v does not match ErrProtocol", in, err)
			}
			return
		}
		out, err := Encode(f)
		if err != nil {
			t.Fatalf("Decode(%x) returned %+v, which Encode refuses: %v", in, f, err)
		}
		if !bytes.Equal(in, out) {
			t.Fatalf("Decode accepted a non-canonical encoding:\n in  %x\n out %x", in, out)
		}
	})
}

// TestAppendFrameProperty: AppendFrame(dst, f) is dst followed by
// Encode(f), whatever dst holds; on error it is dst.
func TestAppendFrameProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dst := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "dst")
		dst = append(dst, make([]byte, rapid.IntRange(0, 64).Draw(t, "spare"))...)[:len(dst)]
		orig := append([]byte(nil), dst...)
		f := genFrame(t)
		enc, err := Encode(f)
		require.NoError(t, err)
		got, err := AppendFrame(dst, f)
		require.NoError(t, err)
		if !bytes.Equal(got, append(append([]byte(nil), orig...), enc...)) {
			t.Fatalf("AppendFrame onto %d bytes is not those bytes followed by Encode(f):\n got  %x\n want %x%x", len(orig), got, orig, enc)
		}
		got2, err := AppendFrame(dst, Frame{Kind: KindMarker})
		require.ErrorIs(t, err, ErrInvalidFrame)
		if !bytes.Equal(got2, orig) {
			t.Fatalf("AppendFrame of an invalid frame changed dst: got %x, want %x", got2, orig)
		}
	})
}

// TestReadFrameLimitProperty: the limit is maxSize when 0 < maxSize <=
// MaxFrameSize and MaxFrameSize otherwise, inclusive; a frame above it is
// refused with ErrTooLarge before any byte of its body is read.
func TestReadFrameLimitProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		b, err := Encode(f)
		require.NoError(t, err)
		n := len(b) - prefixLen
		// At the boundary, for every frame: a limit of exactly its size
		// reads it, one byte less refuses it.
		if got, err := ReadFrame(bytes.NewReader(b), n); err != nil {
			t.Fatalf("ReadFrame(maxSize %d, limit %d) refused a frame of %d bytes: %v", n, n, n, err)
		} else if !f.Equal(got) {
			t.Fatalf("ReadFrame(maxSize %d) of a frame of exactly %d bytes read %v, sent %v", n, n, got, f)
		}
		if n > 1 {
			if _, err := ReadFrame(bytes.NewReader(b), n-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("ReadFrame(maxSize %d) of a frame of %d bytes: got %v, want ErrTooLarge", n-1, n, err)
			}
		}
		maxSize := rapid.OneOf(
			rapid.IntRange(n-2, n+2),
			rapid.IntRange(math.MinInt, 0),
			rapid.IntRange(1, MaxFrameSize),
			rapid.IntRange(MaxFrameSize+1, math.MaxInt),
		).Draw(t, "maxSize")
		limit := maxSize
		if maxSize <= 0 || maxSize > MaxFrameSize {
			limit = MaxFrameSize
		}
		r := bytes.NewReader(b)
		got, err := ReadFrame(r, maxSize)
		if n <= limit {
			if err != nil {
				t.Fatalf("ReadFrame(maxSize %d, limit %d) refused a frame of %d bytes: %v", maxSize, limit, n, err)
			}
			require.True(t, f.Equal(got))
			return
		}
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("ReadFrame(maxSize %d, limit %d) of a frame of %d bytes: got %v, want ErrTooLarge", maxSize, limit, n, err)
		}
		if read := len(b) - r.Len(); read != prefixLen {
			t.Fatalf("ReadFrame refused an oversized frame after reading %d bytes, want only the %d-byte prefix", read, prefixLen)
		}

		// Above MaxFrameSize nothing is read, whatever maxSize says.
		over := rapid.IntRange(MaxFrameSize+1, math.MaxUint32).Draw(t, "over")
		big := append(binary.BigEndian.AppendUint32(nil, uint32(over)), 1, 2, 3)
		r = bytes.NewReader(big)
		_, err = ReadFrame(r, maxSize)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("ReadFrame(maxSize %d) of a length %d above MaxFrameSize: got %v, want ErrTooLarge", maxSize, over, err)
		}
		if r.Len() != 3 {
			t.Fatalf("ReadFrame read %d body bytes of a frame above MaxFrameSize", 3-r.Len())
		}
	})
}

// TestReadFrameAboveMaxFrameSize: a maxSize above MaxFrameSize does not
// raise the limit (a length of MaxFrameSize+1 is refused, not read).
func TestReadFrameAboveMaxFrameSize(t *testing.T) {
	for _, maxSize := range []int{MaxFrameSize + 1, 2 * MaxFrameSize, math.MaxInt} {
		r := bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, MaxFrameSize+1), 1, 2, 3))
		_, err := ReadFrame(r, maxSize)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("ReadFrame(maxSize %d) of a length of MaxFrameSize+1: got %v, want ErrTooLarge: a maxSize above MaxFrameSize raised the limit", maxSize, err)
		}
	}
}

// pieceReaders wrap a reader so that it returns its data in pieces.
var pieceReaders = map[string]func(io.Reader) io.Reader{
	"whole":    func(r io.Reader) io.Reader { return r },
	"one-byte": iotest.OneByteReader,
	"half":     iotest.HalfReader,
	"data-err": iotest.DataErrReader,
}

// TestStreamPiecesProperty: ReadFrame reads a stream of frames from a
// reader that returns data in pieces, reading exactly each frame's bytes
// and never more, and ends with io.EOF.
func TestStreamPiecesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		frames := rapid.SliceOfN(rapid.Custom(genFrame), 1, 8).Draw(t, "frames")
		name := rapid.SampledFrom([]string{"whole", "one-byte", "half", "data-err"}).Draw(t, "reader")
		var all []byte
		var ends []int
		for _, f := range frames {
			var err error
			all, err = AppendFrame(all, f)
			require.NoError(t, err)
			ends = append(ends, len(all))
		}
		cr := &countingReader{r: pieceReaders[name](bytes.NewReader(all))}
		r := cr
		for i, f := range frames {
			got, err := ReadFrame(r, 0)
			if err != nil {
				t.Fatalf("%s reader: frame %d of %d: %v", name, i, len(frames), err)
			}
			if !f.Equal(got) {
				t.Fatalf("%s reader: frame %d is %+v, want %+v", name, i, got, f)
			}
			if cr.n != ends[i] {
				t.Fatalf("%s reader: after frame %d ReadFrame has read %d bytes, want exactly %d (the frames so far)", name, i, cr.n, ends[i])
			}
		}
		if _, err := ReadFrame(r, 0); err != io.EOF {
			t.Fatalf("%s reader: after the last frame: got %v, want io.EOF", name, err)
		}
	})
}

// TestReadFrameAllocatesWhatArrives: a prefix announcing a large frame
// with few bytes behind it costs memory in proportion to the bytes that
// arrive (after 64 KiB up front, smallBody), not the announced length.
// The bound leaves room for the race detector's own allocations.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	const bound = 4 * smallBody
	for _, announced := range []uint32{1 << 20, MaxFrameSize} {
		in := append(binary.BigEndian.AppendUint32(nil, announced), make([]byte, 100)...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFrame(bytes.NewReader(in), 0)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, ErrTruncated)
		if got := after.TotalAlloc - before.TotalAlloc; got > bound {
			t.Errorf("ReadFrame of a %d-byte frame of which 100 bytes arrive allocated %d bytes, want at most %d: it allocates what the peer announces", announced, got, bound)
		}
	}
}

// appWithBody returns an application frame whose body is exactly n bytes.
func appWithBody(t *testing.T, n int) Frame {
	t.Helper()
	f := Frame{Kind: KindApp, Seq: 1}
	// body = version, kind, seq, payload length varint, payload, vc count
	for p := n - 4; p >= 0; p-- {
		if 4+len(binary.AppendUvarint(nil, uint64(p)))+p == n {
			f.Payload = make([]byte, p)
			return f
		}
	}
	t.Fatalf("no payload length gives a body of %d bytes", n)
	return f
}

// TestSizeLimitsAtTheBoundary: MaxFrameSize and MaxVCLen are inclusive in
// Encode, Decode and ReadFrame; one more is refused.
func TestSizeLimitsAtTheBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes 16 MiB frames")
	}
	f := appWithBody(t, MaxFrameSize)
	b, err := Encode(f)
	require.NoError(t, err, "a body of exactly MaxFrameSize bytes must be encoded")
	require.Len(t, b, prefixLen+MaxFrameSize)
	got, err := Decode(b)
	require.NoError(t, err, "Decode refuses a body of exactly MaxFrameSize bytes")
	require.True(t, f.Equal(got))
	got, err = ReadFrame(bytes.NewReader(b), 0)
	require.NoError(t, err, "ReadFrame refuses a body of exactly MaxFrameSize bytes")
	require.True(t, f.Equal(got))
	got, err = ReadFrame(bytes.NewReader(b), MaxFrameSize)
	require.NoError(t, err, "ReadFrame(maxSize MaxFrameSize) refuses a body of exactly MaxFrameSize bytes")
	require.True(t, f.Equal(got))

	over := appWithBody(t, MaxFrameSize+1)
	_, err = Encode(over)
	require.ErrorIs(t, err, ErrTooLarge, "a body of MaxFrameSize+1 bytes must be refused")
	// The same bytes with the length field one more: refused on the way in.
	bad := append(binary.BigEndian.AppendUint32(nil, MaxFrameSize+1), b[prefixLen:]...)
	bad = append(bad, 0)
	_, err = Decode(bad)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ReadFrame(bytes.NewReader(bad), 0)
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestVCLimitAtTheBoundary(t *testing.T) {
	f := Frame{Kind: KindMarker, Snap: 3, VC: make([]uint64, MaxVCLen)}
	f.VC[MaxVCLen-1] = math.MaxUint64
	require.NoError(t, f.Validate(), "a vector clock of exactly MaxVCLen entries is valid")
	b, err := Encode(f)
	require.NoError(t, err, "Encode refuses a vector clock of exactly MaxVCLen entries")
	got, err := Decode(b)
	require.NoError(t, err, "Decode refuses a vector clock of exactly MaxVCLen entries")
	require.True(t, f.Equal(got))

	f.VC = append(f.VC, 0)
	_, err = Encode(f)
	require.ErrorIs(t, err, ErrInvalidFrame, "a vector clock of MaxVCLen+1 entries must be refused")
	// Its encoding, written by hand, is refused on the way in.
	body := []byte{Version, byte(KindMarker), 3}
	body = binary.AppendUvarint(body, MaxVCLen+1)
	body = append(body, make([]byte, MaxVCLen+1)...)
	_, err = Decode(frameBytes(body...))
	require.ErrorIs(t, err, ErrTooLarge)
}

// genOtherFrame returns f with one field changed, and which.
func genOtherFrame(t *rapid.T, f Frame) (Frame, string) {
	g := f.Clone()
	switch field := rapid.SampledFrom([]string{"kind", "snap", "seq", "payload", "vc-entry", "vc-longer", "vc-shorter"}).Draw(t, "field"); field {
	case "kind":
		g.Kind = rapid.SampledFrom([]Kind{0, KindApp, KindMarker, kindHello, 9}).Filter(func(k Kind) bool { return k != f.Kind }).Draw(t, "other kind")
		return g, field
	case "snap":
		g.Snap += spec.SnapID(rapid.Uint64Min(1).Draw(t, "snap delta"))
		return g, field
	case "seq":
		g.Seq += rapid.Uint64Min(1).Draw(t, "seq delta")
		return g, field
	case "payload":
		g.Payload = append(g.Payload, rapid.Byte().Draw(t, "extra payload byte"))
		if len(g.Payload) > 1 && rapid.Bool().Draw(t, "flip payload") {
			g.Payload = g.Payload[:len(g.Payload)-1]
			g.Payload[0] ^= rapid.ByteRange(1, 255).Draw(t, "payload flip")
		}
		return g, field
	case "vc-entry":
		if len(g.VC) == 0 {
			g.VC = []uint64{rapid.Uint64().Draw(t, "vc entry")}
			return g, "vc-longer"
		}
		i := rapid.IntRange(0, len(g.VC)-1).Draw(t, "vc index")
		g.VC[i] += rapid.Uint64Min(1).Draw(t, "vc delta")
		return g, field
	case "vc-longer":
		g.VC = append(g.VC, rapid.Uint64().Draw(t, "vc entry"))
		return g, field
	default:
		if len(g.VC) == 0 {
			g.VC = []uint64{0}
			return g, "vc-longer"
		}
		g.VC = g.VC[:len(g.VC)-1]
		return g, "vc-shorter"
	}
}

// TestFrameEqualProperty: Equal holds between a frame and its clone (and
// with nil and empty slices swapped), and fails, both ways, when any one
// field differs.
func TestFrameEqualProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		c := f.Clone()
		if !f.Equal(c) || !c.Equal(f) {
			t.Fatalf("a frame is not Equal to its clone: %+v", f)
		}
		e := f
		if len(e.Payload) == 0 {
			e.Payload = map[bool][]byte{true: nil, false: {}}[e.Payload == nil]
		}
		if len(e.VC) == 0 {
			e.VC = map[bool][]uint64{true: nil, false: {}}[e.VC == nil]
		}
		if !f.Equal(e) || !e.Equal(f) {
			t.Fatalf("nil and empty slices are not Equal: %+v vs %+v", f, e)
		}
		g, field := genOtherFrame(t, f)
		if f.Equal(g) || g.Equal(f) {
			t.Fatalf("frames differing in %s are Equal:\n %+v\n %+v", field, f, g)
		}
	})
}

// TestCloneProperty: a clone is Equal and shares no memory: writing into
// its payload or clock leaves the original as it was.
func TestCloneProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		keep := Frame{Kind: f.Kind, Snap: f.Snap, Seq: f.Seq, Payload: append([]byte(nil), f.Payload...), VC: append([]uint64(nil), f.VC...)}
		c := f.Clone()
		require.True(t, c.Equal(f))
		for i := range c.Payload {
			c.Payload[i] ^= 0xff
		}
		for i := range c.VC {
			c.VC[i]++
		}
		if !bytes.Equal(f.Payload, keep.Payload) {
			t.Fatalf("writing into the clone's payload changed the original's: %x, was %x", f.Payload, keep.Payload)
		}
		if !f.Equal(keep) {
			t.Fatalf("writing into the clone's vector clock changed the original's: %v, was %v", f.VC, keep.VC)
		}
	})
}

// genProcID draws a valid process id, of every length up to 64.
var genProcID = rapid.Custom(func(t *rapid.T) spec.ProcID {
	const first = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	const rest = first + "0123456789_.-"
	n := rapid.IntRange(0, 63).Draw(t, "id length")
	var b strings.Builder
	b.WriteByte(first[rapid.IntRange(0, len(first)-1).Draw(t, "id first")])
	for i := 0; i < n; i++ {
		b.WriteByte(rest[rapid.IntRange(0, len(rest)-1).Draw(t, "id char")])
	}
	return spec.ProcID(b.String())
})

func genHello(t *rapid.T) Hello {
	from := genProcID.Draw(t, "from")
	to := genProcID.Filter(func(p spec.ProcID) bool { return p != from }).Draw(t, "to")
	return Hello{
		Version:     rapid.SampledFrom([]byte{0, HandshakeVersion}).Draw(t, "version"),
		From:        from,
		To:          to,
		Incarnation: rapid.Uint64Min(1).Draw(t, "incarnation"),
		Restored:    spec.SnapID(rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, "restored")),
	}
}

// TestHelloProperty: every valid hello round-trips through EncodeHello
// and ReadHello, which reads exactly its bytes; every truncation and
// single-byte corruption is refused or read canonically.
func TestHelloProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHello(t)
		b, err := EncodeHello(h)
		require.NoError(t, err)
		tail := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "tail")
		r := bytes.NewReader(append(append([]byte(nil), b...), tail...))
		got, err := ReadHello(r)
		if err != nil {
			t.Fatalf("ReadHello refuses the encoding of the valid hello %+v: %v", h, err)
		}
		want := h
		want.Version = HandshakeVersion
		if got != want {
			t.Fatalf("hello round trip: got %+v, want %+v", got, want)
		}
		if r.Len() != len(tail) {
			t.Fatalf("ReadHello read %d bytes past the hello", len(tail)-r.Len())
		}
		checkCorruptions(t, "ReadHello", b, readHelloEnc, true)
	})
}

// TestHelloRefusesInvalidProperty: EncodeHello refuses, with
// ErrInvalidFrame, a hello with an invalid id, a self-loop or incarnation
// 0, and ReadHello refuses the same hello written by hand.
func TestHelloRefusesInvalidProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHello(t)
		switch rapid.IntRange(0, 3).Draw(t, "break") {
		case 0:
			h.Incarnation = 0
		case 1:
			h.To = h.From
		case 2:
			h.From = spec.ProcID(rapid.SampledFrom([]string{"", "1P", "P 1", "P\x00", "_P", strings.Repeat("P", 65)}).Draw(t, "bad id"))
		case 3:
			h.To = spec.ProcID(rapid.SampledFrom([]string{"", "9", "P/2", "P\n", ".P", strings.Repeat("Q", 65)}).Draw(t, "bad id"))
		}
		_, err := EncodeHello(h)
		if !errors.Is(err, ErrInvalidFrame) {
			t.Fatalf("EncodeHello(%+v): got %v, want ErrInvalidFrame", h, err)
		}
		body := []byte{HandshakeVersion, byte(kindHello)}
		body = appendString(body, string(h.From))
		body = appendString(body, string(h.To))
		body = binary.BigEndian.AppendUint64(body, h.Incarnation)
		body = binary.AppendUvarint(body, uint64(h.Restored))
		_, err = ReadHello(bytes.NewReader(frameBytes(body...)))
		if !errors.Is(err, ErrInvalidFrame) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("ReadHello of %+v: got %v, want ErrInvalidFrame (or ErrTooLarge for an id above 64 bytes)", h, err)
		}
	})
}

// normalReply is the normal form of r (see the package doc).
func normalReply(r HelloReply) HelloReply {
	v := r.Version
	if v == 0 {
		v = HandshakeVersion
	}
	cut := func(s string) string { return s[:min(len(s), MaxReasonLen)] }
	switch {
	case (r.Accepted || r.Stale) && r.Incarnation == 0 || (r.Accepted || r.Stale || r.Mismatch) && v != HandshakeVersion:
		return HelloReply{Version: v, Reason: "receiver error"} // compared by prefix
	case r.Accepted:
		return HelloReply{Version: v, Accepted: true, Incarnation: r.Incarnation, Last: r.Last}
	case r.Stale:
		return HelloReply{Version: v, Stale: true, Incarnation: r.Incarnation, Known: r.Known, Reason: cut(r.Reason)}
	case r.Mismatch:
		return HelloReply{Version: v, Mismatch: true, Restored: r.Restored, Reason: cut(r.Reason)}
	}
	return HelloReply{Version: v, Reason: cut(r.Reason)}
}

// TestHelloReplyProperty: every reply round-trips to its normal form and
// reads exactly its bytes; truncations and corruptions are refused or
// read canonically.
func TestHelloReplyProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := HelloReply{
			Version:     rapid.SampledFrom([]byte{0, handshakeV1, handshakeV2, HandshakeVersion}).Draw(t, "version"),
			Accepted:    rapid.Bool().Draw(t, "accepted"),
			Stale:       rapid.Bool().Draw(t, "stale"),
			Incarnation: rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, "incarnation"),
			Last:        rapid.Uint64().Draw(t, "last"),
			Known:       rapid.Uint64().Draw(t, "known"),
			Mismatch:    rapid.Bool().Draw(t, "mismatch"),
			Restored:    spec.SnapID(rapid.Uint64().Draw(t, "restored")),
			Reason:      rapid.StringOfN(rapid.Rune(), 0, MaxReasonLen+2, -1).Draw(t, "reason"),
		}
		b := EncodeHelloReply(r)
		tail := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "tail")
		rd := bytes.NewReader(append(append([]byte(nil), b...), tail...))
		got, err := ReadHelloReply(rd)
		if err != nil {
			t.Fatalf("ReadHelloReply refuses the encoding of %+v: %v", r, err)
		}
		want := normalReply(r)
		if want.Reason == "receiver error" && !want.Accepted && !want.Stale {
			if got.Accepted || got.Stale || !strings.HasPrefix(got.Reason, "receiver error") {
				t.Fatalf("reply %+v with incarnation 0 or an old version read as %+v, want a rejection naming the receiver error", r, got)
			}
		} else if got != want {
			t.Fatalf("reply round trip of %+v: got %+v, want %+v", r, got, want)
		}
		if rd.Len() != len(tail) {
			t.Fatalf("ReadHelloReply read %d bytes past the reply", len(tail)-rd.Len())
		}
		checkCorruptions(t, "ReadHelloReply", b, readReplyEnc, true)
	})
}

// TestAckProperty: every uint64 round-trips through EncodeAck and
// ReadAck; truncations and corruptions are refused or read canonically.
func TestAckProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seq := rapid.Uint64().Draw(t, "seq")
		b := EncodeAck(seq)
		r := bytes.NewReader(append(append([]byte(nil), b...), 0xff))
		got, err := ReadAck(r)
		require.NoError(t, err)
		if got != seq || r.Len() != 1 {
			t.Fatalf("ack %d read as %d with %d bytes left, want 1", seq, got, r.Len())
		}
		checkCorruptions(t, "ReadAck", b, readAckEnc, true)
	})
}

// TestHandshakeLimitsAtTheBoundary: ids of 64 bytes and reasons of
// MaxReasonLen bytes go through; one more byte is refused (ids) or cut
// (reasons); a control message above MaxControlSize is refused.
func TestHandshakeLimitsAtTheBoundary(t *testing.T) {
	long := spec.ProcID("P" + strings.Repeat("x", 63))
	h := Hello{From: long, To: "Q" + long[1:], Incarnation: 1}
	b, err := EncodeHello(h)
	require.NoError(t, err)
	got, err := ReadHello(bytes.NewReader(b))
	require.NoError(t, err, "ReadHello refuses 64-byte process ids")
	require.Equal(t, long, got.From)

	_, err = EncodeHello(Hello{From: long + "x", To: "Q", Incarnation: 1})
	require.ErrorIs(t, err, ErrInvalidFrame)

	for _, n := range []int{0, MaxReasonLen - 1, MaxReasonLen, MaxReasonLen + 1} {
		reason := strings.Repeat("r", n)
		for _, r := range []HelloReply{{Reason: reason}, {Stale: true, Incarnation: 1, Known: 2, Reason: reason}} {
			got, err := ReadHelloReply(bytes.NewReader(EncodeHelloReply(r)))
			require.NoError(t, err, "a reason of %d bytes", n)
			require.Len(t, got.Reason, min(n, MaxReasonLen), "a reason of %d bytes", n)
		}
	}
	over := []byte{HandshakeVersion, byte(kindReply), statusReject}
	over = appendString(over, strings.Repeat("r", MaxReasonLen+1))
	_, err = ReadHelloReply(bytes.NewReader(frameBytes(over...)))
	require.ErrorIs(t, err, ErrTooLarge, "a reason above MaxReasonLen on the wire")

	ctl := frameBytes(append([]byte{Version, byte(kindAck)}, make([]byte, MaxControlSize-2)...)...)
	_, err = ReadAck(bytes.NewReader(ctl))
	require.ErrorIs(t, err, ErrTrailing, "a control message of exactly MaxControlSize bytes is read (and refused only for its trailing bytes)")
	ctl = frameBytes(append([]byte{Version, byte(kindAck)}, make([]byte, MaxControlSize-1)...)...)
	_, err = ReadAck(bytes.NewReader(ctl))
	require.ErrorIs(t, err, ErrTooLarge)
}

// TestDecodeDoesNotAliasProperty: the frame Decode returns shares no
// memory with its input: overwriting the input leaves the frame as it
// was.
func TestDecodeDoesNotAliasProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		b, err := Encode(f)
		require.NoError(t, err)
		got, err := Decode(b)
		require.NoError(t, err)
		for i := range b {
			b[i] ^= 0xff
		}
		if !f.Equal(got) {
			t.Fatalf("overwriting Decode's input changed the frame it returned: %+v, want %+v", got, f)
		}
	})
}

// TestEncodeAcceptsExactlyValidFramesProperty: over frames with any kind
// and any fields, Encode succeeds exactly on the frames the protocol
// allows (written out here independently of Validate), and refuses the
// others with ErrKind (an unknown kind) or ErrInvalidFrame.
func TestEncodeAcceptsExactlyValidFramesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := Frame{
			Kind: Kind(rapid.OneOf(rapid.SampledFrom([]uint8{0, 1, 2, 3, 0x10, 0x12}), rapid.Uint8()).Draw(t, "kind")),
			Snap: spec.SnapID(rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, "snap")),
			Seq:  rapid.OneOf(rapid.Just(uint64(0)), rapid.Uint64()).Draw(t, "seq"),
		}
		if rapid.Bool().Draw(t, "has payload") {
			f.Payload = rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "payload")
		}
		f.VC = rapid.SliceOfN(rapid.Uint64(), 0, 4).Draw(t, "vc")
		var valid bool
		switch f.Kind {
		case KindApp:
			valid = f.Seq >= 1 && f.Snap == 0
		case KindMarker:
			valid = f.Snap >= 1 && f.Seq == 0 && len(f.Payload) == 0
		case KindHeartbeat, KindDone:
			valid = f.Snap == 0 && len(f.Payload) == 0
		}
		known := f.Kind == KindApp || f.Kind == KindMarker || f.Kind.Control()
		b, err := Encode(f)
		switch {
		case valid && err != nil:
			t.Fatalf("Encode refuses the valid frame %+v: %v", f, err)
		case valid:
			got, err := Decode(b)
			require.NoError(t, err)
			require.True(t, f.Equal(got), "%+v vs %+v", f, got)
		case err == nil:
			t.Fatalf("Encode accepts the invalid frame %+v", f)
		case !known && !errors.Is(err, ErrKind):
			t.Fatalf("Encode of kind %d: %v, want ErrKind", f.Kind, err)
		case known && !errors.Is(err, ErrInvalidFrame):
			t.Fatalf("Encode of the invalid %+v: %v, want ErrInvalidFrame", f, err)
		}
	})
}

// TestDecodeViewProperty: on bytes that hold a whole frame (valid frames,
// any bytes behind a length prefix, with trailing bytes), DecodeView
// returns what ReadFrame reads from the same bytes with the same limit,
// the same error included, and the number of bytes ReadFrame consumed; on
// bytes cut inside the frame it refuses with ErrTruncated. The clock goes
// into the caller's array when it is long enough.
func TestDecodeViewProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in []byte
		if rapid.Bool().Draw(t, "valid") {
			var err error
			if in, err = Encode(genFrame(t)); err != nil {
				t.Fatal(err)
			}
		} else {
			body := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "body")
			if rapid.Bool().Draw(t, "header") {
				body = append([]byte{Version, byte(rapid.SampledFrom([]Kind{KindApp, KindMarker}).Draw(t, "kind"))}, body...)
			}
			in = frameBytes(body...)
		}
		whole := len(in)
		in = append(in, rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "trailing")...)
		maxSize := rapid.IntRange(0, whole+2).Draw(t, "maxSize")
		vc := make([]uint64, rapid.IntRange(0, 4).Draw(t, "vc"))

		r := bufio.NewReader(bytes.NewReader(in))
		want, wantErr := ReadFrame(r, maxSize)
		consumed := len(in) - r.Buffered()
		got, size, err := DecodeView(in, maxSize, vc)
		switch {
		case (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()):
			t.Fatalf("DecodeView(%x, %d): error %v, ReadFrame: %v", in, maxSize, err, wantErr)
		case err != nil:
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("DecodeView(%x): error %v does not match ErrProtocol", in, err)
			}
		case !want.Equal(got) || size != consumed:
			t.Fatalf("DecodeView(%x, %d) = %+v, %d bytes; ReadFrame: %+v, %d bytes", in, maxSize, got, size, want, consumed)
		case len(got.VC) > 0 && len(got.VC) <= len(vc) && &got.VC[0] != &vc[0]:
			t.Fatalf("DecodeView allocated a clock of %d entries with %d offered", len(got.VC), len(vc))
		}
		if whole > prefixLen {
			cut := rapid.IntRange(0, whole-1).Draw(t, "cut")
			if n := binary.BigEndian.Uint32(in); uint64(n) <= uint64(MaxFrameSize) && (maxSize == 0 || uint64(n) <= uint64(maxSize)) {
				if _, _, err := DecodeView(in[:cut], maxSize, nil); !errors.Is(err, ErrTruncated) {
					t.Fatalf("DecodeView(%x) cut at %d of %d: %v, want ErrTruncated", in[:cut], cut, whole, err)
				}
			}
		}
	})
}

// TestDecodeAppViewAgrees: the one-pass decode of application frames
// (decodeAppView) accepts only what decodeBody accepts, and returns the
// same frame: on the bodies of valid frames, of every single-byte
// corruption of them, and of every prefix.
func TestDecodeAppViewAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		if rapid.Bool().Draw(t, "small") { // short varints: the fast path's case
			f.Kind, f.Snap, f.Seq = KindApp, 0, rapid.Uint64Range(1, 1<<40).Draw(t, "seq")
			f.VC = rapid.SliceOfN(rapid.Uint64Range(0, 1<<40), 0, 6).Draw(t, "vc")
		}
		enc, err := Encode(f)
		require.NoError(t, err)
		body := enc[prefixLen:]
		bodies := [][]byte{body}
		for cut := range len(body) {
			bodies = append(bodies, body[:cut])
		}
		for i := range body {
			c := append([]byte(nil), body...)
			c[i] ^= rapid.ByteRange(1, 255).Draw(t, "flip")
			bodies = append(bodies, c)
		}
		for _, b := range bodies {
			var got Frame
			ok := decodeAppView(&got, b, make([]uint64, 2))
			want, err := decodeBody(b, false, nil)
			switch {
			case ok && err != nil:
				t.Fatalf("decodeAppView(%x) accepted %+v, decodeBody refuses: %v", b, got, err)
			case ok && !got.Equal(want):
				t.Fatalf("decodeAppView(%x) = %+v, decodeBody: %+v", b, got, want)
			}
		}
		if ok := decodeAppView(new(Frame), body, nil); ok != (f.Kind == KindApp && f.Seq < 1<<63 && maxOf(f.VC) < 1<<63) {
			t.Fatalf("decodeAppView(%x) ok = %v for %+v", body, ok, f)
		}
	})
}

func maxOf(vc []uint64) uint64 {
	var m uint64
	for _, v := range vc {
		m = max(m, v)
	}
	return m
}
