package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// seedFrames are valid frames the fuzz targets start from (the committed
// corpus under testdata/fuzz holds them too, plus broken variants).
func seedFrames() [][]byte {
	var out [][]byte
	for _, f := range []Frame{
		{Kind: KindApp, Seq: 1},
		{Kind: KindApp, Seq: 42, Payload: []byte(`{"amt":30}`), VC: []uint64{1, 0, 3}},
		{Kind: KindMarker, Snap: 1},
		{Kind: KindMarker, Snap: 1 << 40, VC: []uint64{1 << 63, 127, 128}},
	} {
		b, err := Encode(f)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

// checkCanonical fails t unless a successfully decoded frame is valid and
// encodes back to exactly the bytes it came from.
func checkCanonical(t *testing.T, in []byte, f Frame) {
	t.Helper()
	if err := f.Validate(); err != nil {
		t.Fatalf("decoded an invalid frame %+v: %v", f, err)
	}
	out, err := Encode(f)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", f, err)
	}
	if !bytes.Equal(in, out) {
		t.Fatalf("not canonical:\n in  %x\n out %x", in, out)
	}
}

func FuzzDecode(f *testing.F) {
	for _, b := range seedFrames() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("Decode error %v does not match ErrProtocol", err)
			}
			return
		}
		checkCanonical(t, in, fr)
	})
}

// FuzzReadFrame reads a stream of frames with a size limit; every frame read
// must be the canonical encoding of the bytes it consumed.
func FuzzReadFrame(f *testing.F) {
	all := bytes.Join(seedFrames(), nil)
	f.Add(all, uint16(0))
	f.Add(all, uint16(8))
	f.Fuzz(func(t *testing.T, in []byte, max uint16) {
		cr := &countingReader{r: bytes.NewReader(in)}
		r := bufio.NewReaderSize(cr, 16)
		consumed := 0
		for i := 0; ; i++ {
			fr, err := ReadFrame(r, int(max))
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrProtocol) {
					t.Fatalf("frame %d: error %v is neither io.EOF nor a protocol error", i, err)
				}
				return
			}
			end := cr.n - r.Buffered()
			frame := in[consumed:end]
			if max > 0 && len(frame)-prefixLen > int(max) {
				t.Fatalf("frame %d: %d bytes read past the limit %d", i, len(frame), max)
			}
			checkCanonical(t, frame, fr)
			consumed = end
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func FuzzReadHello(f *testing.F) {
	for _, b := range seedHandshake() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if h, err := ReadHello(bytes.NewReader(in)); err == nil {
			out, err := EncodeHello(h)
			if err != nil {
				t.Fatalf("accepted hello %+v does not encode: %v", h, err)
			}
			if !bytes.HasPrefix(in, out) { // bytes after the message are not read
				t.Fatalf("hello not canonical:\n in  %x\n out %x", in, out)
			}
		} else if !errors.Is(err, ErrProtocol) && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
			t.Fatalf("ReadHello error %v is neither EOF nor a protocol error", err)
		}
		if rep, err := ReadHelloReply(bytes.NewReader(in)); err == nil {
			if out := EncodeHelloReply(rep); !bytes.HasPrefix(in, out) {
				t.Fatalf("reply %+v not canonical:\n in  %x\n out %x", rep, in, out)
			}
		} else if !errors.Is(err, ErrProtocol) && err != io.EOF {
			t.Fatalf("ReadHelloReply error %v is neither EOF nor a protocol error", err)
		}
		if a, err := ReadAck(bytes.NewReader(in)); err == nil {
			if out := EncodeAck(a); !bytes.HasPrefix(in, out) {
				t.Fatalf("ack %d not canonical:\n in  %x\n out %x", a, in, out)
			}
		} else if !errors.Is(err, ErrProtocol) && err != io.EOF {
			t.Fatalf("ReadAck error %v is neither EOF nor a protocol error", err)
		}
	})
}

// seedHandshake are valid control messages FuzzReadHello starts from.
func seedHandshake() [][]byte {
	h, err := EncodeHello(Hello{From: "P1", To: "P2", Incarnation: 0x0123456789abcdef, Restored: 5})
	if err != nil {
		panic(err)
	}
	return [][]byte{
		h,
		EncodeHelloReply(HelloReply{Accepted: true, Incarnation: 42, Last: 9}),
		EncodeHelloReply(HelloReply{Stale: true, Incarnation: 42, Known: 7, Reason: "sender restarted"}),
		EncodeHelloReply(HelloReply{Mismatch: true, Restored: 9, Reason: "restored from snapshot 9"}),
		EncodeAck(3),
	}
}

// TestWriteSeedCorpus regenerates testdata/fuzz when WIRE_WRITE_CORPUS=1.
func TestWriteSeedCorpus(t *testing.T) {
	if os.Getenv("WIRE_WRITE_CORPUS") != "1" {
		t.Skip("set WIRE_WRITE_CORPUS=1 to regenerate testdata/fuzz")
	}
	seeds := seedFrames()
	decode := map[string][]byte{}
	for i, b := range seeds {
		decode[fmt.Sprintf("valid-%d", i)] = b
		decode[fmt.Sprintf("truncated-%d", i)] = b[:len(b)-1]
		decode[fmt.Sprintf("trailing-%d", i)] = append(append([]byte(nil), b...), 0)
	}
	decode["oversized"] = []byte{0x01, 0x00, 0x00, 0x01, 1, 1, 1, 0, 0}
	decode["marker-snap0"] = frameBytes(1, 2, 0, 0)
	decode["app-seq0"] = frameBytes(1, 1, 0, 0, 0)
	decode["bad-version"] = frameBytes(7, 2, 1, 0)
	decode["bad-kind"] = frameBytes(1, 9, 1, 0)
	decode["nonminimal-varint"] = frameBytes(1, 2, 0x81, 0x00, 0)
	decode["huge-vc-count"] = frameBytes(1, 2, 1, 0xff, 0xff, 0xff, 0xff, 0x0f)
	decode["garbage"] = []byte("GET / HTTP/1.1\r\n")
	write := func(target, name string, args ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, a := range args {
			switch a := a.(type) {
			case []byte:
				s += fmt.Sprintf("[]byte(%q)\n", a)
			case uint16:
				s += fmt.Sprintf("uint16(%d)\n", a)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range decode {
		write("FuzzDecode", name, b)
	}
	stream := bytes.Join(seeds, nil)
	write("FuzzReadFrame", "stream", stream, uint16(0))
	write("FuzzReadFrame", "stream-small-limit", stream, uint16(6))
	write("FuzzReadFrame", "stream-cut", stream[:len(stream)-3], uint16(0))
	write("FuzzReadFrame", "stream-garbage-tail", append(append([]byte(nil), stream...), 0xde, 0xad, 0xbe, 0xef, 1), uint16(0))
	hs := seedHandshake()
	write("FuzzReadHello", "hello", hs[0])
	write("FuzzReadHello", "reply-accept", hs[1])
	write("FuzzReadHello", "reply-stale", hs[2])
	write("FuzzReadHello", "reply-mismatch", hs[3])
	write("FuzzReadHello", "reply-accept-then-more", append(append([]byte(nil), hs[1]...), '0'))
	write("FuzzReadHello", "reply-reject", EncodeHelloReply(HelloReply{Reason: "no"}))
	write("FuzzReadHello", "reply-reject-v1", EncodeHelloReply(HelloReply{Version: 1, Reason: "no"}))
	write("FuzzReadHello", "hello-bad-id", frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', ' ', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 1, 0))
	write("FuzzReadHello", "hello-incarnation-0", frameBytes(HandshakeVersion, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 0, 0))
	write("FuzzReadHello", "hello-v2", frameBytes(2, byte(kindHello), 2, 'P', '1', 2, 'P', '2', 0, 0, 0, 0, 0, 0, 0, 1))
	write("FuzzReadHello", "hello-v1", frameBytes(1, byte(kindHello), 2, 'P', '1', 2, 'P', '2'))
}
