package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// Wire format of one frame (all integers are unsigned varints unless said
// otherwise; varints must be minimally encoded):
//
//	length  4 bytes, big endian: the number of bytes that follow
//	version 1 byte, Version
//	kind    1 byte, KindApp, KindMarker, KindHeartbeat or KindDone
//	KindApp:    seq (>= 1), payload length, payload bytes, vc count, vc entries
//	KindMarker: snap (>= 1), vc count, vc entries
//	KindHeartbeat, KindDone: incarnation (seq), vc count, vc entries
//
// The encoding is canonical: a frame has exactly one encoding, so Decode
// followed by Encode gives back the input bytes.

// Version is the wire protocol version this package speaks.
const Version byte = 1

const (
	// MaxFrameSize is the hard limit on a frame's length field (the bytes
	// after the 4-byte prefix). Nothing larger is encoded or read.
	MaxFrameSize = 16 << 20
	// MaxVCLen bounds the number of vector clock entries in a frame.
	MaxVCLen = 1 << 16
	// prefixLen is the size of the length prefix.
	prefixLen = 4
	// smallBody is the largest body ReadFrame allocates up front; larger
	// bodies grow with the bytes actually received.
	smallBody = 64 << 10
)

// ErrProtocol matches (with errors.Is) every error caused by bytes that
// break the wire protocol: a peer that sends one should be disconnected.
var ErrProtocol = errors.New("wire: protocol violation")

// protoErr is a sentinel that also matches ErrProtocol.
type protoErr struct{ msg string }

func (e *protoErr) Error() string        { return e.msg }
func (e *protoErr) Is(target error) bool { return target == ErrProtocol }

// Sentinel errors; each also matches ErrProtocol. Returned errors wrap them
// with detail, so test them with errors.Is.
var (
	// ErrTooLarge: a length field exceeds the size limit.
	ErrTooLarge error = &protoErr{"wire: frame too large"}
	// ErrTruncated: the bytes end before the frame or a field does.
	ErrTruncated error = &protoErr{"wire: truncated frame"}
	// ErrTrailing: bytes remain after the last field or after the frame.
	ErrTrailing error = &protoErr{"wire: trailing bytes"}
	// ErrVersion: the version byte is not Version.
	ErrVersion error = &protoErr{"wire: unsupported version"}
	// ErrKind: the kind byte is not a known kind for this message.
	ErrKind error = &protoErr{"wire: unknown kind"}
	// ErrVarint: a varint overflows 64 bits or is not minimally encoded.
	ErrVarint error = &protoErr{"wire: bad varint"}
	// ErrInvalidFrame: the fields break a rule of the protocol, e.g. a
	// marker with snapshot id 0 or an application message with seq 0.
	ErrInvalidFrame error = &protoErr{"wire: invalid frame"}
)

// Validate checks the rules every frame on the wire obeys: a known kind, a
// marker with Snap >= 1 and no Seq or Payload, an application message with
// Seq >= 1 and no Snap, and at most MaxVCLen clock entries.
func (f Frame) Validate() error { return f.validate() }

// validate is Validate on a pointer: AppendFrame's path copies no frame
// (a Frame is nine words, passed on the stack).
func (f *Frame) validate() error {
	if err := f.validKind(); err != nil {
		return err
	}
	if len(f.VC) > MaxVCLen {
		return fmt.Errorf("%w: %d vector clock entries, max %d", ErrInvalidFrame, len(f.VC), MaxVCLen)
	}
	return nil
}

// validKind checks the fields the frame's kind rules on.
func (f *Frame) validKind() error {
	switch f.Kind {
	case KindApp:
		return f.validApp()
	case KindMarker:
		return f.validMarker()
	case KindHeartbeat, KindDone:
		if f.Snap != 0 || len(f.Payload) != 0 {
			return fmt.Errorf("%w: %s with snapshot id or payload", ErrInvalidFrame, *f)
		}
		return nil
	}
	return fmt.Errorf("%w %d", ErrKind, f.Kind)
}

func (f *Frame) validApp() error {
	if f.Seq == 0 {
		return fmt.Errorf("%w: application message with seq 0", ErrInvalidFrame)
	}
	if f.Snap != 0 {
		return fmt.Errorf("%w: application message with snapshot id %d", ErrInvalidFrame, f.Snap)
	}
	return nil
}

func (f *Frame) validMarker() error {
	if f.Snap == 0 {
		return fmt.Errorf("%w: marker with snapshot id 0", ErrInvalidFrame)
	}
	if f.Seq != 0 || len(f.Payload) != 0 {
		return fmt.Errorf("%w: marker with seq or payload", ErrInvalidFrame)
	}
	return nil
}

// Equal reports whether f and g are the same frame; nil and empty Payload
// or VC are equal.
func (f Frame) Equal(g Frame) bool {
	return f.Kind == g.Kind && f.Snap == g.Snap && f.Seq == g.Seq && bytes.Equal(f.Payload, g.Payload) && slices.Equal(f.VC, g.VC)
}

// Clone returns a copy of f that shares no memory with it.
func (f Frame) Clone() Frame {
	if f.Payload != nil {
		f.Payload = append([]byte(nil), f.Payload...)
	}
	if f.VC != nil {
		f.VC = append([]uint64(nil), f.VC...)
	}
	return f
}

// String renders the envelope as "P1->P2 app#3(5 bytes)".
func (e Envelope) String() string { return e.Chan.String() + " " + e.Frame.String() }

// Encode returns the wire encoding of f, length prefix included. It fails
// if f is invalid (see Frame.Validate) or its body exceeds MaxFrameSize.
func Encode(f Frame) ([]byte, error) { return AppendFrame(nil, f) }

// AppendFrame appends the wire encoding of f to dst, like Encode. On error
// dst is returned unchanged.
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if err := f.validate(); err != nil {
		return dst, err
	}
	start := len(dst)
	b := appendFields(append(dst, 0, 0, 0, 0, Version, byte(f.Kind)), &f)
	b = binary.AppendUvarint(b, uint64(len(f.VC)))
	for _, v := range f.VC {
		b = binary.AppendUvarint(b, v)
	}
	n := len(b) - start - prefixLen
	if n > MaxFrameSize {
		return dst, fmt.Errorf("%w: %d bytes, max %d", ErrTooLarge, n, MaxFrameSize)
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	return b, nil
}

// appendFields appends the fields of f's kind: an application frame's
// seq and payload, a marker's snapshot id, a heartbeat's or done's
// incarnation.
func appendFields(b []byte, f *Frame) []byte {
	switch f.Kind {
	case KindApp:
		b = binary.AppendUvarint(b, f.Seq)
		b = binary.AppendUvarint(b, uint64(len(f.Payload)))
		b = append(b, f.Payload...)
	case KindMarker:
		b = binary.AppendUvarint(b, uint64(f.Snap))
	case KindHeartbeat, KindDone:
		b = binary.AppendUvarint(b, f.Seq)
	}
	return b
}

// WriteFrame encodes f and writes it to w in one Write call.
func WriteFrame(w io.Writer, f Frame) error {
	b, err := Encode(f)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Decode parses b, which must hold exactly one encoded frame (length prefix
// included). The returned frame does not alias b. Errors match ErrProtocol.
func Decode(b []byte) (Frame, error) {
	body, err := splitFrame(b, MaxFrameSize)
	if err != nil {
		return Frame{}, err
	}
	return decodeBody(body, true, nil)
}

// splitFrame checks the prefix of the single frame in b and returns its body.
func splitFrame(b []byte, max int) ([]byte, error) {
	if len(b) < prefixLen {
		return nil, fmt.Errorf("%w: %d bytes, the length prefix needs %d", ErrTruncated, len(b), prefixLen)
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: length %d, max %d", ErrTooLarge, n, max)
	}
	rest := b[prefixLen:]
	if uint64(len(rest)) < uint64(n) {
		return nil, fmt.Errorf("%w: length %d, only %d bytes follow", ErrTruncated, n, len(rest))
	}
	if uint64(len(rest)) > uint64(n) {
		return nil, fmt.Errorf("%w: %d bytes after a frame of length %d", ErrTrailing, uint64(len(rest))-uint64(n), n)
	}
	return rest, nil
}

// ReadFrame reads one frame from r. maxSize bounds the length field; 0, a
// negative value or anything above MaxFrameSize means MaxFrameSize. A clean
// end of input before the first byte returns io.EOF; an end inside a frame
// returns an error matching both ErrTruncated and io.ErrUnexpectedEOF.
// Other read errors are returned as is. Wrap r in a bufio.Reader for speed.
func ReadFrame(r io.Reader, maxSize int) (Frame, error) {
	body, err := readBody(r, maxSize, MaxFrameSize)
	if err != nil {
		return Frame{}, err
	}
	return decodeBody(body, false, nil)
}

// DecodeView parses the frame at the start of b, length prefix included,
// which b must hold whole: what ReadFrame(r, maxSize) returns when r's
// next bytes are b. It allocates nothing: the payload aliases b and the
// clock is decoded into vc's array (a new one if vc is too short), so the
// caller copies the frame before it reuses either. It also returns the
// number of bytes the frame took. Errors match ErrProtocol.
func DecodeView(b []byte, maxSize int, vc []uint64) (f Frame, size int, err error) {
	size, err = DecodeViewTo(&f, b, maxSize, vc)
	return f, size, err
}

// DecodeViewTo is DecodeView writing the frame into *f, for a caller
// that decodes into a slice of frames or envelopes without copying each
// frame out; on error *f is the zero Frame.
func DecodeViewTo(f *Frame, b []byte, maxSize int, vc []uint64) (size int, err error) {
	if len(b) < prefixLen {
		*f = Frame{}
		return 0, fmt.Errorf("%w: %d bytes, the length prefix needs %d", ErrTruncated, len(b), prefixLen)
	}
	n, err := bodyLen(b, limit(maxSize, MaxFrameSize))
	switch {
	case err != nil:
	case uint64(len(b)-prefixLen) < uint64(n):
		err = fmt.Errorf("%w: length %d, only %d bytes follow", ErrTruncated, n, len(b)-prefixLen)
	case decodeAppView(f, b[prefixLen:prefixLen+int(n)], vc):
		return prefixLen + int(n), nil
	default:
		*f, err = decodeBody(b[prefixLen:prefixLen+int(n)], false, vc)
	}
	if err != nil {
		*f = Frame{}
		return 0, err
	}
	return prefixLen + int(n), nil
}

// readBody reads a length prefix and the body it announces, allocating no
// more than the bytes that actually arrive (plus smallBody).
func readBody(r io.Reader, maxSize, hardMax int) ([]byte, error) {
	var pre [prefixLen]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: inside the length prefix: %w", ErrTruncated, err)
		}
		return nil, err
	}
	n, err := bodyLen(pre[:], limit(maxSize, hardMax))
	if err != nil {
		return nil, err
	}
	if n <= smallBody {
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, truncatedRead(err, n)
		}
		return body, nil
	}
	var buf bytes.Buffer
	buf.Grow(smallBody)
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, truncatedRead(err, n)
	}
	return buf.Bytes(), nil
}

// limit is the size limit a maxSize asks for: hardMax if maxSize is 0,
// negative or above hardMax.
func limit(maxSize, hardMax int) int {
	if maxSize <= 0 || maxSize > hardMax {
		return hardMax
	}
	return maxSize
}

// bodyLen is the length in the prefix pre, if it is within maxSize.
func bodyLen(pre []byte, maxSize int) (uint32, error) {
	n := binary.BigEndian.Uint32(pre)
	if uint64(n) > uint64(maxSize) {
		return 0, fmt.Errorf("%w: length %d, max %d", ErrTooLarge, n, maxSize)
	}
	return n, nil
}

func truncatedRead(err error, n uint32) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: input ends inside a body of length %d: %w", ErrTruncated, n, io.ErrUnexpectedEOF)
	}
	return err
}

// decoder reads fields from a frame body.
type decoder struct {
	b   []byte
	pos int
	err error // the first error of the sticky reads (handshake.go)
}

// uvarint reads a minimally encoded unsigned varint: up to 9 bytes (a
// value below 2^63) in one pass; anything else (longer, truncated, not
// minimal) is left to uvarintLong, which decodes or names the error.
func (d *decoder) uvarint(field string) (uint64, error) {
	if x, n := shortUvarint(d.b[d.pos:]); n > 0 {
		d.pos += n
		return x, nil
	}
	return d.uvarintLong(field)
}

// shortUvarint decodes the varint b starts with if it is minimal and at
// most 9 bytes long, and returns its length; 0 otherwise.
func shortUvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b[:min(len(b), binary.MaxVarintLen64-1)] {
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, 0
			}
			return x, i + 1
		}
	}
	return 0, 0
}

// uvarintLong is uvarint for the general case.
func (d *decoder) uvarintLong(field string) (uint64, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.pos >= len(d.b) {
			return 0, fmt.Errorf("%w: inside %s", ErrTruncated, field)
		}
		c := d.b[d.pos]
		d.pos++
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return 0, fmt.Errorf("%w: %s overflows 64 bits", ErrVarint, field)
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, fmt.Errorf("%w: %s is not minimally encoded", ErrVarint, field)
			}
			return x, nil
		}
	}
	return 0, fmt.Errorf("%w: %s overflows 64 bits", ErrVarint, field)
}

// count reads a length and checks that at least count*minEach bytes remain,
// so no allocation exceeds what the input can back.
func (d *decoder) count(field string, minEach int, max uint64) (int, error) {
	n, err := d.uvarint(field)
	if err != nil {
		return 0, err
	}
	if n > max {
		return 0, fmt.Errorf("%w: %s %d, max %d", ErrTooLarge, field, n, max)
	}
	if rem := uint64(len(d.b) - d.pos); n*uint64(minEach) > rem {
		return 0, fmt.Errorf("%w: %s %d, only %d bytes remain", ErrTruncated, field, n, rem)
	}
	return int(n), nil
}

func (d *decoder) byte1(field string) (byte, error) {
	if d.pos >= len(d.b) {
		return 0, fmt.Errorf("%w: no %s byte", ErrTruncated, field)
	}
	c := d.b[d.pos]
	d.pos++
	return c, nil
}

// header reads and checks the version and kind bytes.
func (d *decoder) header() (byte, error) {
	v, err := d.byte1("version")
	if err != nil {
		return 0, err
	}
	if v != Version {
		return 0, fmt.Errorf("%w %d (want %d)", ErrVersion, v, Version)
	}
	return d.byte1("kind")
}

func (d *decoder) end() error {
	if d.pos != len(d.b) {
		return fmt.Errorf("%w: %d bytes after the last field", ErrTrailing, len(d.b)-d.pos)
	}
	return nil
}

// decodeAppView is decodeBody(body, false, vc) in one pass, into *f, for
// the frame nearly all traffic is, an application frame whose varints
// are at most 9 bytes; false (*f unspecified) for anything else (another
// kind, a longer varint, any error), which decodeBody then decodes or
// names the error of. TestDecodeAppViewAgrees holds the two to the same
// results.
func decodeAppView(f *Frame, body []byte, vc []uint64) bool {
	if !isApp(body) {
		return false
	}
	r := shortReader{b: body, pos: 2}
	seq, n := r.next(), r.next()
	if r.bad || seq == 0 || n > uint64(len(body)-r.pos) {
		return false
	}
	// Field by field, not *f = Frame{...}: a composite literal is
	// copied in with typedmemmove, whose write barrier (while the garbage
	// collector marks) walks the type's pointer bitmap; in BenchmarkTCP
	// that copy was 7% of the CPU.
	f.Kind, f.Snap, f.Seq = KindApp, 0, seq
	f.Payload = r.bytes(int(n))
	f.VC = r.clock(vc)
	return !r.bad && r.pos == len(body)
}

// isApp reports whether body starts with this version's header of an
// application frame.
func isApp(body []byte) bool {
	return len(body) >= 2 && body[0] == Version && Kind(body[1]) == KindApp
}

// shortReader reads the fields of a frame body whose varints are at most
// 9 bytes long (shortUvarint); any other varint, or the end of the body,
// makes it bad for good.
type shortReader struct {
	b   []byte
	pos int
	bad bool
}

func (r *shortReader) next() uint64 {
	x, n := shortUvarint(r.b[r.pos:])
	if n == 0 {
		r.bad = true
	}
	r.pos += n
	return x
}

// bytes is the next n bytes, which the caller checked are there (a view,
// capped); nil if n is 0.
func (r *shortReader) bytes(n int) []byte {
	if n == 0 {
		return nil
	}
	r.pos += n
	return r.b[r.pos-n : r.pos : r.pos]
}

// clock reads a vector clock into vc's array (a new one if it is too
// short); nil if it is empty or r is bad.
func (r *shortReader) clock(vc []uint64) []uint64 {
	k := r.next()
	switch {
	case k == 0:
		return nil
	case k > MaxVCLen || k > uint64(len(r.b)-r.pos):
		r.bad = true
		return nil
	}
	if uint64(cap(vc)) < k {
		vc = make([]uint64, k)
	}
	vc = vc[:k:k]
	for e := range vc {
		vc[e] = r.next()
	}
	return vc
}

// decodeBody parses a frame body. With copyPayload false the payload
// aliases body. The clock goes into vc's array if it is long enough.
func decodeBody(body []byte, copyPayload bool, vc []uint64) (Frame, error) {
	d := decoder{b: body}
	k, err := d.header()
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Kind: Kind(k)}
	if err := d.fields(&f, copyPayload); err != nil {
		return Frame{}, err
	}
	if f.VC, err = d.clock(vc); err != nil {
		return Frame{}, err
	}
	if err := d.end(); err != nil {
		return Frame{}, err
	}
	return f, nil
}

// fields reads the fields of f's kind (appendFields' inverse); an
// unknown kind is ErrKind.
func (d *decoder) fields(f *Frame, copyPayload bool) error {
	var err error
	switch f.Kind {
	case KindApp:
		err = d.app(f, copyPayload)
	case KindMarker:
		err = d.marker(f)
	case KindHeartbeat, KindDone:
		f.Seq, err = d.uvarint("incarnation")
	default:
		err = fmt.Errorf("%w %d", ErrKind, byte(f.Kind))
	}
	return err
}

// app reads an application frame's fields: seq and payload (aliasing
// the body unless copyPayload).
func (d *decoder) app(f *Frame, copyPayload bool) error {
	var err error
	if f.Seq, err = d.uvarint("seq"); err != nil {
		return err
	}
	if f.Seq == 0 {
		return fmt.Errorf("%w: application message with seq 0", ErrInvalidFrame)
	}
	n, err := d.count("payload length", 1, MaxFrameSize)
	if err != nil || n == 0 {
		return err
	}
	f.Payload = d.b[d.pos : d.pos+n : d.pos+n]
	if copyPayload {
		f.Payload = append([]byte(nil), f.Payload...)
	}
	d.pos += n
	return nil
}

// marker reads a marker's snapshot id.
func (d *decoder) marker(f *Frame) error {
	snap, err := d.uvarint("snap")
	if err != nil {
		return err
	}
	if snap == 0 {
		return fmt.Errorf("%w: marker with snapshot id 0", ErrInvalidFrame)
	}
	f.Snap = spec.SnapID(snap)
	return nil
}

// clock reads the vector clock into vc's array if it is long enough, a
// new one otherwise; nil when it is empty.
func (d *decoder) clock(vc []uint64) ([]uint64, error) {
	n, err := d.count("vector clock length", 1, MaxVCLen)
	if err != nil || n == 0 {
		return nil, err
	}
	if cap(vc) < n {
		vc = make([]uint64, n)
	}
	vc = vc[:n:n]
	for i := range vc {
		if vc[i], err = d.uvarint("vector clock entry"); err != nil {
			return nil, err
		}
	}
	return vc, nil
}
