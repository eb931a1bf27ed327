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
//	Hello:      from length, from bytes, to length, to bytes, incarnation
//	HelloReply: status byte, then
//	            0 accept: incarnation, last
//	            1 reject: reason length, reason bytes
//	            2 stale:  incarnation, known, reason length, reason bytes
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
// had no incarnations; a peer speaking it is refused with ErrVersion, and
// ReadHelloReply still reads a version 1 rejection so that an old peer's
// refusal of a new hello comes back with its reason.
const HandshakeVersion byte = 2

// handshakeV1 is the previous handshake version: no incarnations. Its
// rejection layout is the same as version 2's.
const handshakeV1 byte = 1

// Hello opens a connection: it names the handshake version, the directed
// channel From->To the connection will carry, and the incarnation of the
// sender: a random id its transport drew at start, which changes when the
// sender's process restarts.
type Hello struct {
	Version     byte // 0 in EncodeHello means HandshakeVersion
	From        spec.ProcID
	To          spec.ProcID
	Incarnation uint64 // never 0
}

// Chan is the channel the hello names.
func (h Hello) Chan() spec.Channel { return spec.Channel{From: h.From, To: h.To} }

// HelloReply answers a Hello. When Accepted, Incarnation is the receiver's
// incarnation and Last the number of frames of the channel the receiver
// already holds: the sender resumes with frame Last+1. When Stale, the
// receiver has stopped the channel for good because it had seen another
// sender incarnation, Known, on it: Incarnation is the receiver's. Otherwise
// the hello is rejected. Reason says why when not Accepted; the receiver
// then closes the connection.
type HelloReply struct {
	// Version is the version byte: 0 in EncodeHelloReply means
	// HandshakeVersion. Only a rejection may be encoded as version 1.
	Version     byte
	Accepted    bool
	Stale       bool
	Incarnation uint64 // accepted or stale: the receiver's, never 0
	Last        uint64 // accepted
	Known       uint64 // stale: the sender incarnation the receiver holds
	Reason      string // not accepted
}

const (
	statusAccept byte = 0
	statusReject byte = 1
	statusStale  byte = 2
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
	from, err := d.str("hello sender", 64)
	if err != nil {
		return Hello{}, err
	}
	to, err := d.str("hello receiver", 64)
	if err != nil {
		return Hello{}, err
	}
	inc, err := d.uint64be("hello incarnation")
	if err != nil {
		return Hello{}, err
	}
	if err := d.end(); err != nil {
		return Hello{}, err
	}
	h := Hello{Version: HandshakeVersion, From: spec.ProcID(from), To: spec.ProcID(to), Incarnation: inc}
	if err := validateHello(h); err != nil {
		return Hello{}, err
	}
	return h, nil
}

// EncodeHelloReply returns the encoding of r. A reason longer than
// MaxReasonLen is cut. An accepted or stale reply with incarnation 0, or
// one of Version 1, is encoded as a plain rejection naming the mistake:
// the caller's bug becomes a refusal, not a malformed message.
func EncodeHelloReply(r HelloReply) []byte {
	v := r.Version
	if v == 0 {
		v = HandshakeVersion
	}
	if (r.Accepted || r.Stale) && (r.Incarnation == 0 || v != HandshakeVersion) {
		r = HelloReply{Reason: fmt.Sprintf("receiver error: reply with incarnation %d, version %d", r.Incarnation, v)}
	}
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
	default:
		b = append(b, statusReject)
		b = appendString(b, cutReason(r.Reason))
	}
	return finishControl(b)
}

func cutReason(s string) string {
	if len(s) > MaxReasonLen {
		return s[:MaxReasonLen]
	}
	return s
}

// ReadHelloReply reads a HelloReply and sets its Version. A version 1
// rejection (an old peer refusing a version 2 hello) is read as a rejection
// with Version 1; any other version but HandshakeVersion is ErrVersion.
func ReadHelloReply(r io.Reader) (HelloReply, error) {
	d, v, err := readControl(r, kindReply)
	if err != nil {
		return HelloReply{}, err
	}
	if v != HandshakeVersion && v != handshakeV1 {
		return HelloReply{}, fmt.Errorf("%w %d of the hello reply (want %d)", ErrVersion, v, HandshakeVersion)
	}
	status, err := d.byte1("status")
	if err != nil {
		return HelloReply{}, err
	}
	if v == handshakeV1 && status != statusReject {
		return HelloReply{}, fmt.Errorf("%w %d of the hello reply (want %d)", ErrVersion, v, HandshakeVersion)
	}
	rep := HelloReply{Version: v}
	switch status {
	case statusAccept:
		rep.Accepted = true
		if rep.Incarnation, err = d.uint64be("reply incarnation"); err != nil {
			return HelloReply{}, err
		}
		if rep.Last, err = d.uvarint("last"); err != nil {
			return HelloReply{}, err
		}
	case statusStale:
		rep.Stale = true
		if rep.Incarnation, err = d.uint64be("reply incarnation"); err != nil {
			return HelloReply{}, err
		}
		if rep.Known, err = d.uint64be("known incarnation"); err != nil {
			return HelloReply{}, err
		}
		if rep.Reason, err = d.str("reason", MaxReasonLen); err != nil {
			return HelloReply{}, err
		}
	case statusReject:
		if rep.Reason, err = d.str("reason", MaxReasonLen); err != nil {
			return HelloReply{}, err
		}
	default:
		return HelloReply{}, fmt.Errorf("%w: hello reply status %d", ErrInvalidFrame, status)
	}
	if (rep.Accepted || rep.Stale) && rep.Incarnation == 0 {
		return HelloReply{}, fmt.Errorf("%w: hello reply with incarnation 0", ErrInvalidFrame)
	}
	if err := d.end(); err != nil {
		return HelloReply{}, err
	}
	return rep, nil
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
