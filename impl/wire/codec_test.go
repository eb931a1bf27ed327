package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

func frameBytes(body ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func TestEncodeKnownBytes(t *testing.T) {
	b, err := Encode(Frame{Kind: KindApp, Seq: 3, Payload: []byte("hi"), VC: []uint64{1, 300}})
	require.NoError(t, err)
	assert.Equal(t, frameBytes(1, 1, 3, 2, 'h', 'i', 2, 1, 0xac, 0x02), b)

	b, err = Encode(Frame{Kind: KindMarker, Snap: 7})
	require.NoError(t, err)
	assert.Equal(t, frameBytes(1, 2, 7, 0), b)
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short prefix", []byte{0, 0}, ErrTruncated},
		{"no body", frameBytes(), ErrTruncated},
		{"no kind", frameBytes(1), ErrTruncated},
		{"length beyond input", append(binary.BigEndian.AppendUint32(nil, 10), 1, 2), ErrTruncated},
		{"oversized length", binary.BigEndian.AppendUint32(nil, MaxFrameSize+1), ErrTooLarge},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}, ErrTooLarge},
		{"bytes after frame", append(frameBytes(1, 2, 7, 0), 0), ErrTrailing},
		{"bytes after last field", frameBytes(1, 2, 7, 0, 0), ErrTrailing},
		{"version 0", frameBytes(0, 2, 7, 0), ErrVersion},
		{"version 2", frameBytes(2, 2, 7, 0), ErrVersion},
		{"kind 0", frameBytes(1, 0, 7, 0), ErrKind},
		{"kind 5", frameBytes(1, 5, 7, 0), ErrKind},
		{"heartbeat with trailing bytes", frameBytes(1, 3, 7, 0, 0), ErrTrailing},
		{"control kind", frameBytes(1, byte(kindAck), 7), ErrKind},
		{"marker snap 0", frameBytes(1, 2, 0, 0), ErrInvalidFrame},
		{"app seq 0", frameBytes(1, 1, 0, 0, 0), ErrInvalidFrame},
		{"payload past end", frameBytes(1, 1, 1, 5, 'a', 0), ErrTruncated},
		{"huge payload length", frameBytes(1, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0), ErrTooLarge},
		{"vc count past end", frameBytes(1, 2, 1, 3, 1), ErrTruncated},
		{"huge vc count", frameBytes(1, 2, 1, 0xff, 0xff, 0x7f), ErrTooLarge},
		{"varint overflow", frameBytes(1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0), ErrVarint},
		{"varint 11 bytes", frameBytes(1, 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0), ErrVarint},
		{"non-minimal varint", frameBytes(1, 2, 0x87, 0x00, 0), ErrVarint},
		{"varint cut", frameBytes(1, 2, 0x87), ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.in)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.want)
			assert.ErrorIs(t, err, ErrProtocol)
		})
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	for _, f := range []Frame{
		{},
		{Kind: 9, Seq: 1},
		{Kind: KindMarker},
		{Kind: KindMarker, Snap: 1, Seq: 1},
		{Kind: KindMarker, Snap: 1, Payload: []byte{1}},
		{Kind: KindApp},
		{Kind: KindApp, Seq: 1, Snap: 2},
		{Kind: KindApp, Seq: 1, VC: make([]uint64, MaxVCLen+1)},
	} {
		_, err := Encode(f)
		assert.Error(t, err, "%+v", f)
		assert.Error(t, WriteFrame(io.Discard, f))
	}
	_, err := Encode(Frame{Kind: KindApp, Seq: 1, Payload: make([]byte, MaxFrameSize)})
	assert.ErrorIs(t, err, ErrTooLarge)
}

func TestReadFrame(t *testing.T) {
	var buf bytes.Buffer
	frames := []Frame{
		{Kind: KindApp, Seq: 1, Payload: []byte("x")},
		{Kind: KindMarker, Snap: 2, VC: []uint64{0, 5}},
		{Kind: KindApp, Seq: 2},
	}
	for _, f := range frames {
		require.NoError(t, WriteFrame(&buf, f))
	}
	r := bufio.NewReader(&buf)
	for _, want := range frames {
		got, err := ReadFrame(r, 0)
		require.NoError(t, err)
		assert.True(t, want.Equal(got), "%v vs %v", want, got)
	}
	_, err := ReadFrame(r, 0)
	assert.Equal(t, io.EOF, err)
}

func TestReadFrameTruncatedAndOversized(t *testing.T) {
	b, err := Encode(Frame{Kind: KindApp, Seq: 1, Payload: make([]byte, 100)})
	require.NoError(t, err)
	for i := 1; i < len(b); i++ {
		_, err := ReadFrame(bytes.NewReader(b[:i]), 0)
		assert.ErrorIs(t, err, ErrTruncated, "cut at %d", i)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", i)
	}
	_, err = ReadFrame(bytes.NewReader(b), 50)
	assert.ErrorIs(t, err, ErrTooLarge)

	// A large announced length with few bytes behind it must fail without
	// allocating the announced size.
	big := binary.BigEndian.AppendUint32(nil, MaxFrameSize)
	allocs := testing.AllocsPerRun(5, func() {
		_, err := ReadFrame(bytes.NewReader(append(big, 1, 2, 3)), 0)
		assert.ErrorIs(t, err, ErrTruncated)
	})
	assert.Less(t, allocs, 20.0)

	// A read error is returned as is, not as a protocol error.
	boom := errors.New("boom")
	_, err = ReadFrame(io.MultiReader(bytes.NewReader(b[:6]), errReader{boom}), 0)
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrProtocol)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestReadFrameLarge(t *testing.T) {
	f := Frame{Kind: KindApp, Seq: 9, Payload: bytes.Repeat([]byte{7}, 1<<20)}
	b, err := Encode(f)
	require.NoError(t, err)
	got, err := ReadFrame(bytes.NewReader(b), 0)
	require.NoError(t, err)
	assert.True(t, f.Equal(got))
}

func TestDecodeDoesNotAlias(t *testing.T) {
	b, err := Encode(Frame{Kind: KindApp, Seq: 1, Payload: []byte("abc")})
	require.NoError(t, err)
	f, err := Decode(b)
	require.NoError(t, err)
	b[len(b)-2] = 'Z'
	assert.Equal(t, []byte("abc"), f.Payload)
}

func genFrame(t *rapid.T) Frame {
	f := Frame{}
	if rapid.Bool().Draw(t, "marker") {
		f.Kind = KindMarker
		f.Snap = spec.SnapID(rapid.Uint64Min(1).Draw(t, "snap"))
	} else {
		f.Kind = KindApp
		f.Seq = rapid.Uint64Min(1).Draw(t, "seq")
		f.Payload = rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "payload")
	}
	f.VC = rapid.SliceOfN(rapid.Uint64(), 0, 12).Draw(t, "vc")
	return f
}

func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame(t)
		b, err := Encode(f)
		require.NoError(t, err)
		got, err := Decode(b)
		require.NoError(t, err)
		require.True(t, f.Equal(got), "%+v vs %+v", f, got)
		again, err := Encode(got)
		require.NoError(t, err)
		require.Equal(t, b, again, "encoding is canonical")

		// Every strict prefix is truncated; any extra byte is trailing.
		cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
		_, err = Decode(b[:cut])
		require.ErrorIs(t, err, ErrTruncated)
		_, err = Decode(append(b, rapid.Byte().Draw(t, "extra")))
		require.ErrorIs(t, err, ErrTrailing)
	})
}

func TestStreamRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		frames := rapid.SliceOfN(rapid.Custom(genFrame), 0, 20).Draw(t, "frames")
		var buf bytes.Buffer
		for _, f := range frames {
			require.NoError(t, WriteFrame(&buf, f))
		}
		r := bufio.NewReaderSize(&buf, 16)
		for i, f := range frames {
			got, err := ReadFrame(r, 0)
			require.NoError(t, err)
			require.True(t, f.Equal(got), "frame %d: %+v vs %+v", i, f, got)
		}
		_, err := ReadFrame(r, 0)
		require.Equal(t, io.EOF, err)
	})
}

func TestHandshakeRoundTrip(t *testing.T) {
	h := Hello{From: "P1", To: "P2", Incarnation: 0xfeedc0de12345678, Restored: 300}
	b, err := EncodeHello(h)
	require.NoError(t, err)
	assert.Equal(t, frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0xfe, 0xed, 0xc0, 0xde, 0x12, 0x34, 0x56, 0x78, 0xac, 0x02), b)
	got, err := ReadHello(bytes.NewReader(b))
	require.NoError(t, err)
	assert.Equal(t, Hello{Version: HandshakeVersion, From: "P1", To: "P2", Incarnation: 0xfeedc0de12345678, Restored: 300}, got)
	assert.Equal(t, spec.Channel{From: "P1", To: "P2"}, got.Chan())

	for _, r := range []HelloReply{
		{Accepted: true, Incarnation: 1, Last: 0},
		{Accepted: true, Incarnation: 1 << 63, Last: 1 << 40},
		{Stale: true, Incarnation: 7, Known: 9, Reason: "sender restarted"},
		{Mismatch: true, Restored: 1 << 40, Reason: "restored from another snapshot"},
		{Mismatch: true, Reason: "started fresh"},
		{Reason: "unknown peer"},
	} {
		enc := EncodeHelloReply(r)
		got, err := ReadHelloReply(bytes.NewReader(enc))
		require.NoError(t, err)
		r.Version = HandshakeVersion
		assert.Equal(t, r, got)
		again := EncodeHelloReply(got)
		assert.Equal(t, enc, again, "canonical")
	}
	long := HelloReply{Reason: string(bytes.Repeat([]byte{'x'}, 2*MaxReasonLen))}
	got2, err := ReadHelloReply(bytes.NewReader(EncodeHelloReply(long)))
	require.NoError(t, err)
	assert.Len(t, got2.Reason, MaxReasonLen)

	a, err := ReadAck(bytes.NewReader(EncodeAck(12345)))
	require.NoError(t, err)
	assert.Equal(t, uint64(12345), a)
}

// Old (version 1, no incarnations; version 2, no restored snapshot id)
// and new peers refuse each other with a readable reason.
func TestHandshakeVersionMismatch(t *testing.T) {
	// A version 1 hello as an old sender writes it, and a version 2 one.
	v1 := frameBytes(1, byte(kindHello), 2, 'P', '1', 2, 'P', '2')
	v2 := frameBytes(2, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 1)
	for i, old := range [][]byte{v1, v2} {
		v := byte(i + 1)
		h, err := ReadHello(bytes.NewReader(old))
		require.ErrorIs(t, err, ErrVersion)
		assert.Contains(t, err.Error(), fmt.Sprintf("version %d of the hello (want 3)", v))
		assert.Equal(t, v, h.Version)
		// The new receiver answers in the old sender's version: its
		// layout for a rejection is the same, so the old peer reads the
		// reason.
		require.Equal(t, v, ReplyVersion(h.Version))
		rej := EncodeHelloReply(HelloReply{Version: ReplyVersion(h.Version), Reason: err.Error()})
		assert.Equal(t, v, rej[4])
		assert.Equal(t, []byte{1, byte(len(err.Error()))}, rej[6:8])

		// An old receiver's rejection of a version 3 hello is read with
		// its reason; an old receiver's acceptance is ErrVersion.
		rep, err := ReadHelloReply(bytes.NewReader(frameBytes(v, byte(kindReply), 1, 2, 'n', 'o')))
		require.NoError(t, err)
		assert.Equal(t, HelloReply{Version: v, Reason: "no"}, rep)
		_, err = ReadHelloReply(bytes.NewReader(frameBytes(v, byte(kindReply), 0, 5)))
		assert.ErrorIs(t, err, ErrVersion)
	}
	assert.Equal(t, byte(0), ReplyVersion(9), "a future version is answered in this one")
	_, err := ReadHelloReply(bytes.NewReader(frameBytes(4, byte(kindReply), 1, 2, 'n', 'o')))
	assert.ErrorIs(t, err, ErrVersion)
	// Accepted or stale replies are never encoded in an old version.
	for _, v := range []byte{1, 2} {
		rep, err := ReadHelloReply(bytes.NewReader(EncodeHelloReply(HelloReply{Version: v, Accepted: true, Incarnation: 3})))
		require.NoError(t, err)
		assert.False(t, rep.Accepted)
		assert.Contains(t, rep.Reason, "receiver error")
	}
}

func TestHandshakeErrors(t *testing.T) {
	for _, h := range []Hello{{From: "", To: "P2", Incarnation: 1}, {From: "P1", To: "1x", Incarnation: 1}, {From: "P1", To: "P1", Incarnation: 1}, {From: "P1", To: "P2"}} {
		_, err := EncodeHello(h)
		assert.ErrorIs(t, err, ErrInvalidFrame, "%+v", h)
	}
	v9, err := EncodeHello(Hello{Version: 9, From: "P1", To: "P2", Incarnation: 1})
	require.NoError(t, err)
	_, err = ReadHello(bytes.NewReader(v9))
	assert.ErrorIs(t, err, ErrVersion)

	// A hello whose ids are not valid process ids.
	bad := frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', ' ', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 1, 0)
	_, err = ReadHello(bytes.NewReader(bad))
	assert.ErrorIs(t, err, ErrInvalidFrame)
	// Incarnation 0, a truncated incarnation, no restored id, trailing
	// bytes.
	_, err = ReadHello(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 0, 0)))
	assert.ErrorIs(t, err, ErrInvalidFrame)
	_, err = ReadHello(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 1)))
	assert.ErrorIs(t, err, ErrTruncated)
	_, err = ReadHello(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 1)))
	assert.ErrorIs(t, err, ErrTruncated)
	_, err = ReadHello(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0)))
	assert.ErrorIs(t, err, ErrTrailing)

	// A frame where a hello belongs, garbage, an oversized control message.
	fr, _ := Encode(Frame{Kind: KindMarker, Snap: 1})
	_, err = ReadHello(bytes.NewReader(fr))
	assert.ErrorIs(t, err, ErrKind)
	_, err = ReadHello(bytes.NewReader([]byte("GET / HTTP/1.1\r\n\r\n")))
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = ReadHello(bytes.NewReader(binary.BigEndian.AppendUint32(nil, MaxControlSize+1)))
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = ReadHelloReply(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindReply), 7)))
	assert.ErrorIs(t, err, ErrInvalidFrame)
	_, err = ReadHelloReply(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindReply), 0, 0, 0, 0, 0, 0, 0, 0, 0, 5)))
	assert.ErrorIs(t, err, ErrInvalidFrame, "accepted with incarnation 0")
	_, err = ReadHelloReply(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindReply), 0, 0, 0, 1)))
	assert.ErrorIs(t, err, ErrTruncated)
	_, err = ReadAck(bytes.NewReader(frameBytes(1, byte(kindAck), 1, 0)))
	assert.ErrorIs(t, err, ErrTrailing)
	_, err = ReadAck(bytes.NewReader(frameBytes(HandshakeVersion, byte(kindAck), 1)))
	assert.ErrorIs(t, err, ErrVersion)
}

func BenchmarkEncode(b *testing.B) {
	f := Frame{Kind: KindApp, Seq: 12345, Payload: make([]byte, 32), VC: []uint64{10, 20, 30}}
	var buf []byte
	for b.Loop() {
		buf, _ = AppendFrame(buf[:0], f)
	}
}

func BenchmarkDecode(b *testing.B) {
	in, _ := Encode(Frame{Kind: KindApp, Seq: 12345, Payload: make([]byte, 32), VC: []uint64{10, 20, 30}})
	for b.Loop() {
		if _, err := Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeView: the receiver's decode, in place, of the frame
// BenchmarkTCP sends (a 3-byte seq, a 32-byte payload, a 2-entry clock).
func BenchmarkDecodeView(b *testing.B) {
	in, _ := Encode(Frame{Kind: KindApp, Seq: 1 << 20, Payload: make([]byte, 32), VC: []uint64{1 << 20, 3}})
	vc := make([]uint64, 4)
	for b.Loop() {
		if _, _, err := DecodeView(in, MaxFrameSize, vc); err != nil {
			b.Fatal(err)
		}
	}
}

// The runtime's control frames: known bytes, refusals, and a round trip
// of any incarnation and clock.
func TestControlFrames(t *testing.T) {
	b, err := Encode(Frame{Kind: KindHeartbeat, Seq: 300})
	require.NoError(t, err)
	assert.Equal(t, frameBytes(1, 3, 0xac, 0x02, 0), b)
	b, err = Encode(Frame{Kind: KindDone})
	require.NoError(t, err)
	assert.Equal(t, frameBytes(1, 4, 0, 0), b)
	for _, f := range []Frame{{Kind: KindHeartbeat, Snap: 1}, {Kind: KindDone, Payload: []byte{1}}} {
		_, err := Encode(f)
		assert.ErrorIs(t, err, ErrInvalidFrame, "%+v", f)
	}
	assert.True(t, KindHeartbeat.Control() && KindDone.Control())
	assert.False(t, KindApp.Control() || KindMarker.Control())
	rapid.Check(t, func(t *rapid.T) {
		f := Frame{
			Kind: rapid.SampledFrom([]Kind{KindHeartbeat, KindDone}).Draw(t, "kind"),
			Seq:  rapid.Uint64().Draw(t, "incarnation"),
			VC:   rapid.SliceOfN(rapid.Uint64(), 0, 4).Draw(t, "vc"),
		}
		b, err := Encode(f)
		require.NoError(t, err)
		got, err := Decode(b)
		require.NoError(t, err)
		require.True(t, f.Equal(got), "%+v vs %+v", f, got)
		again, err := Encode(got)
		require.NoError(t, err)
		require.Equal(t, b, again, "encoding is canonical")
	})
}
