package wire

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/markerwave/markerwave/spec"
)

// Control messages of a stream transport. They use the frame layout (4-byte
// length, version, kind) with kinds of their own:
//
//	Hello:      from length, from bytes, to length, to bytes, incarnation,
//	            restored (uvarint: the snapshot id the sender was restored
//	            from, 0 for none)
//	HelloReply: status byte, then
//	            0 accept: incarnation, last
//	            1 reject: reason length, reason bytes
//	            2 stale:  incarnation, known, reason length, reason bytes
//	            3 mismatch: restored (uvarint), reason length, reason bytes
//	Ack:        seq
//
// Incarnations are 8 bytes, big endian, never 0. Hello and HelloReply carry
// HandshakeVersion in their version byte; Acks, like frames, carry Version.
//
// A connection carries one directed channel. The dialer (the channel's
// sender) writes a Hello; the listener answers with a HelloReply; then the
// dialer writes frames and the listener writes Acks.
const (
	kindHello Kind = 0x10
	kindReply Kind = 0x11
	kindAck   Kind = 0x12

	// MaxControlSize bounds the length field of a control message.
	MaxControlSize = 1024
	// MaxReasonLen bounds a rejection reason.
	MaxReasonLen = 512
)

// HandshakeVersion is the version byte of Hello and HelloReply. Version 1
// had no incarnations and version 2 no restored snapshot id; a peer
// speaking either is refused with ErrVersion, and ReadHelloReply still
// reads their rejections so that an old peer's refusal of a new hello
// comes back with its reason.
const HandshakeVersion byte = 3

// handshakeV1 and handshakeV2 are the previous handshake versions: no
// incarnations, then no restored snapshot id. Their rejection layout is
// the same as version 3's.
const (
	handshakeV1 byte = 1
	handshakeV2 byte = 2
)

// oldRejection reports whether v is a previous handshake version, whose
// rejections ReadHelloReply reads (and only those).
func oldRejection(v byte) bool { return v == handshakeV1 || v == handshakeV2 }

// ReplyVersion is the version in which to refuse a hello of version v
// (ReadHello's ErrVersion): v itself if it is a previous version, whose
// peers read a rejection in their own layout, else HandshakeVersion (0).
func ReplyVersion(v byte) byte {
	if oldRejection(v) {
		return v
	}
	return 0
}

// Hello opens a connection: it names the handshake version, the directed
// channel From->To the connection will carry, the incarnation of the
// sender (a random id its transport drew at start, which changes when the
// sender's process restarts) and the snapshot the sender's process was
// restored from (0: started fresh). The receiver refuses a hello whose
// Restored differs from its own: the two ends would resume the channel
// from different cuts (tla/ChandyLamportFaults.tla, Restart, lines
// 151-171: the whole system restarts from one state).
type Hello struct {
	Version     byte // 0 in EncodeHello means HandshakeVersion
	From        spec.ProcID
	To          spec.ProcID
	Incarnation uint64      // never 0
	Restored    spec.SnapID // 0: not restored
}

// Chan is the channel the hello names.
func (h Hello) Chan() spec.Channel { return spec.Channel{From: h.From, To: h.To} }

// HelloReply answers a Hello. When Accepted, Incarnation is the receiver's
// incarnation and Last the number of frames of the channel the receiver
// already holds: the sender resumes with frame Last+1. When Stale, the
// receiver has stopped the channel for good because it had seen another
// sender incarnation, Known, on it: Incarnation is the receiver's. When
// Mismatch, the receiver was restored from another snapshot than the
// hello's Restored: Restored is the receiver's (0: started fresh), and the
// channel cannot resume until both ends restart from one snapshot.
// Otherwise the hello is rejected. Reason says why when not Accepted; the
// receiver then closes the connection.
type HelloReply struct {
	// Version is the version byte: 0 in EncodeHelloReply means
	// HandshakeVersion. Only a rejection may be encoded as version 1.
	Version     byte
	Accepted    bool
	Stale       bool
	Incarnation uint64 // accepted or stale: the receiver's, never 0
	Last        uint64 // accepted
	Known       uint64 // stale: the sender incarnation the receiver holds
	Mismatch    bool
	Restored    spec.SnapID // mismatch: the snapshot the receiver was restored from
	Reason      string      // not accepted
}

const (
	statusAccept   byte = 0
	statusReject   byte = 1
	statusStale    byte = 2
	statusMismatch byte = 3
)

// EncodeHello returns the encoding of h after checking both ids with
// spec.ValidateProcID and that the incarnation is not 0.
func EncodeHello(h Hello) ([]byte, error) {
	if err := validateHello(h); err != nil {
		return nil, err
	}
	v := h.Version
	if v == 0 {
		v = HandshakeVersion
	}
	b := []byte{0, 0, 0, 0, v, byte(kindHello)}
	b = appendString(b, string(h.From))
	b = appendString(b, string(h.To))
	b = binary.BigEndian.AppendUint64(b, h.Incarnation)
	b = binary.AppendUvarint(b, uint64(h.Restored))
	return finishControl(b), nil
}

func validateHello(h Hello) error {
	if err := spec.ValidateProcID(h.From); err != nil {
		return fmt.Errorf("%w: hello sender: %w", ErrInvalidFrame, err)
	}
	if err := spec.ValidateProcID(h.To); err != nil {
		return fmt.Errorf("%w: hello receiver: %w", ErrInvalidFrame, err)
	}
	if h.From == h.To {
		return fmt.Errorf("%w: hello names a self-loop %s->%s", ErrInvalidFrame, string(h.From), string(h.To))
	}
	if h.Incarnation == 0 {
		return fmt.Errorf("%w: hello with incarnation 0", ErrInvalidFrame)
	}
	return nil
}

// ReadHello reads and validates a Hello. A version other than
// HandshakeVersion is ErrVersion; the Hello returned with it has only
// Version set, so that the rejection can be written in a version the peer
// reads (EncodeHelloReply with that Version). Errors other than read errors
// match ErrProtocol.
func ReadHello(r io.Reader) (Hello, error) {
	d, v, err := readControl(r, kindHello)
	if err != nil {
		return Hello{}, err
	}
	if v != HandshakeVersion {
		return Hello{Version: v}, fmt.Errorf("%w %d of the hello (want %d)", ErrVersion, v, HandshakeVersion)
	}
	// the sticky reads, in wire order (a composite literal's calls run
	// left to right)
	h := Hello{Version: HandshakeVersion, From: spec.ProcID(d.s("hello sender", 64)), To: spec.ProcID(d.s("hello receiver", 64)),
		Incarnation: d.be64("hello incarnation"), Restored: spec.SnapID(d.uv("hello restored snapshot"))}
	if d.err != nil {
		return Hello{}, d.err
	}
	if err := d.end(); err != nil {
		return Hello{}, err
	}
	if err := validateHello(h); err != nil {
		return Hello{}, err
	}
	return h, nil
}

// EncodeHelloReply returns the encoding of r. A reason longer than
// MaxReasonLen is cut. An accepted or stale reply with incarnation 0, or
// one of an old Version (1 or 2), is encoded as a plain rejection naming the mistake:
// the caller's bug becomes a refusal, not a malformed message.
func EncodeHelloReply(r HelloReply) []byte {
	r, v := r.sane()
	b := []byte{0, 0, 0, 0, v, byte(kindReply)}
	switch {
	case r.Accepted:
		b = append(b, statusAccept)
		b = binary.BigEndian.AppendUint64(b, r.Incarnation)
		b = binary.AppendUvarint(b, r.Last)
	case r.Stale:
		b = append(b, statusStale)
		b = binary.BigEndian.AppendUint64(b, r.Incarnation)
		b = binary.BigEndian.AppendUint64(b, r.Known)
		b = appendString(b, cutReason(r.Reason))
	case r.Mismatch:
		b = append(b, statusMismatch)
		b = binary.AppendUvarint(b, uint64(r.Restored))
		b = appendString(b, cutReason(r.Reason))
	default:
		b = append(b, statusReject)
		b = appendString(b, cutReason(r.Reason))
	}
	return finishControl(b)
}

// sane is the reply EncodeHelloReply encodes and its version (0:
// HandshakeVersion): r itself, or the rejection naming the caller's
// mistake (an accepted or stale reply with incarnation 0, one not a
// rejection in an old version).
func (r HelloReply) sane() (HelloReply, byte) {
	v := r.Version
	if v == 0 {
		v = HandshakeVersion
	}
	if r.mistaken(v) {
		r = HelloReply{Reason: fmt.Sprintf("receiver error: reply with incarnation %d, version %d", r.Incarnation, v)}
	}
	return r, v
}

func cutReason(s string) string {
	if len(s) > MaxReasonLen {
		return s[:MaxReasonLen]
	}
	return s
}

// ReadHelloReply reads a HelloReply and sets its Version. A version 1 or 2
// rejection (an old peer refusing a newer hello) is read as a rejection
// with that Version; any other version but HandshakeVersion is ErrVersion.
func ReadHelloReply(r io.Reader) (HelloReply, error) {
	d, v, err := readControl(r, kindReply)
	if err != nil {
		return HelloReply{}, err
	}
	status, err := replyStatus(d, v)
	if err != nil {
		return HelloReply{}, err
	}
	rep := HelloReply{Version: v}
	if err := rep.read(d, status); err != nil {
		return HelloReply{}, err
	}
	if (rep.Accepted || rep.Stale) && rep.Incarnation == 0 {
		return HelloReply{}, fmt.Errorf("%w: hello reply with incarnation 0", ErrInvalidFrame)
	}
	if err := d.end(); err != nil {
		return HelloReply{}, err
	}
	return rep, nil
}

// replyStatus checks a reply's version v (HandshakeVersion, or an old
// one's rejection) and reads its status.
func replyStatus(d *decoder, v byte) (byte, error) {
	wrong := fmt.Errorf("%w %d of the hello reply (want %d)", ErrVersion, v, HandshakeVersion)
	if v != HandshakeVersion && !oldRejection(v) {
		return 0, wrong
	}
	status, err := d.byte1("status")
	if err != nil {
		return 0, err
	}
	if oldRejection(v) && status != statusReject {
		return 0, wrong
	}
	return status, nil
}

// mistaken reports whether r, of version v, cannot be encoded as it is:
// accepted or stale with incarnation 0, or not a rejection in an old
// version.
func (r HelloReply) mistaken(v byte) bool {
	noInc := (r.Accepted || r.Stale) && r.Incarnation == 0
	return noInc || (r.Accepted || r.Stale || r.Mismatch) && v != HandshakeVersion
}

// read reads the fields of a reply of the given status.
func (rep *HelloReply) read(d *decoder, status byte) error {
	switch status {
	case statusAccept:
		rep.Accepted = true
		rep.Incarnation, rep.Last = d.be64("reply incarnation"), d.uv("last")
	case statusStale:
		rep.Stale = true
		rep.Incarnation, rep.Known = d.be64("reply incarnation"), d.be64("known incarnation")
		rep.Reason = d.s("reason", MaxReasonLen)
	case statusMismatch:
		rep.Mismatch = true
		rep.Restored = spec.SnapID(d.uv("reply restored snapshot"))
		rep.Reason = d.s("reason", MaxReasonLen)
	case statusReject:
		rep.Reason = d.s("reason", MaxReasonLen)
	default:
		return fmt.Errorf("%w: hello reply status %d", ErrInvalidFrame, status)
	}
	return d.err
}

// EncodeAck returns the encoding of a cumulative acknowledgement: the
// receiver holds frames 1..seq of the connection's channel.
func EncodeAck(seq uint64) []byte {
	b := []byte{0, 0, 0, 0, Version, byte(kindAck)}
	return finishControl(binary.AppendUvarint(b, seq))
}

// ReadAck reads an acknowledgement.
func ReadAck(r io.Reader) (uint64, error) {
	d, v, err := readControl(r, kindAck)
	if err != nil {
		return 0, err
	}
	if v != Version {
		return 0, fmt.Errorf("%w %d of the ack (want %d)", ErrVersion, v, Version)
	}
	seq, err := d.uvarint("ack")
	if err != nil {
		return 0, err
	}
	return seq, d.end()
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func finishControl(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)-prefixLen))
	return b
}

// readControl reads a control message body and checks its kind. It
// returns the version byte for the caller to check.
func readControl(r io.Reader, want Kind) (*decoder, byte, error) {
	body, err := readBody(r, MaxControlSize, MaxControlSize)
	if err != nil {
		return nil, 0, err
	}
	d := &decoder{b: body}
	v, err := d.byte1("version")
	if err != nil {
		return nil, 0, err
	}
	k, err := d.byte1("kind")
	if err != nil {
		return nil, 0, err
	}
	if Kind(k) != want {
		return nil, 0, fmt.Errorf("%w %d (want %d)", ErrKind, k, want)
	}
	return d, v, nil
}

func (d *decoder) uint64be(field string) (uint64, error) {
	if len(d.b)-d.pos < 8 {
		return 0, fmt.Errorf("%w: %s needs 8 bytes, %d remain", ErrTruncated, field, len(d.b)-d.pos)
	}
	x := binary.BigEndian.Uint64(d.b[d.pos:])
	d.pos += 8
	return x, nil
}

func (d *decoder) str(field string, max uint64) (string, error) {
	n, err := d.count(field+" length", 1, max)
	if err != nil {
		return "", err
	}
	s := string(d.b[d.pos : d.pos+n])
	d.pos += n
	return s, nil
}

// The sticky forms of the decoder's reads, for the control messages:
// after the first error they read nothing and return zero, and d.err
// keeps that error.

func (d *decoder) be64(field string) uint64 {
	if d.err != nil {
		return 0
	}
	x, err := d.uint64be(field)
	d.err = err
	return x
}

func (d *decoder) uv(field string) uint64 {
	if d.err != nil {
		return 0
	}
	x, err := d.uvarint(field)
	d.err = err
	return x
}

func (d *decoder) s(field string, max uint64) string {
	if d.err != nil {
		return ""
	}
	x, err := d.str(field, max)
	d.err = err
	return x
}
