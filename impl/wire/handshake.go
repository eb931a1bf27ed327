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
//	Hello:      from length, from bytes, to length, to bytes
//	HelloReply: status byte (0 accept, 1 reject); accept: last; reject:
//	            reason length, reason bytes
//	Ack:        seq
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

// Hello opens a connection: it names the protocol version and the directed
// channel From->To the connection will carry.
type Hello struct {
	Version byte // 0 in EncodeHello means Version
	From    spec.ProcID
	To      spec.ProcID
}

// Chan is the channel the hello names.
func (h Hello) Chan() spec.Channel { return spec.Channel{From: h.From, To: h.To} }

// HelloReply answers a Hello. When Accepted, Last is the number of frames
// of the channel the receiver already holds: the sender resumes with frame
// Last+1. When not, Reason says why and the receiver closes the connection.
type HelloReply struct {
	Accepted bool
	Last     uint64
	Reason   string
}

// EncodeHello returns the encoding of h after checking both ids with
// spec.ValidateProcID.
func EncodeHello(h Hello) ([]byte, error) {
	if err := validateHello(h); err != nil {
		return nil, err
	}
	v := h.Version
	if v == 0 {
		v = Version
	}
	b := []byte{0, 0, 0, 0, v, byte(kindHello)}
	b = appendString(b, string(h.From))
	b = appendString(b, string(h.To))
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
	return nil
}

// ReadHello reads and validates a Hello. A version other than Version is
// ErrVersion. Errors other than read errors match ErrProtocol.
func ReadHello(r io.Reader) (Hello, error) {
	d, err := readControl(r, kindHello)
	if err != nil {
		return Hello{}, err
	}
	from, err := d.str("hello sender", 64)
	if err != nil {
		return Hello{}, err
	}
	to, err := d.str("hello receiver", 64)
	if err != nil {
		return Hello{}, err
	}
	if err := d.end(); err != nil {
		return Hello{}, err
	}
	h := Hello{Version: Version, From: spec.ProcID(from), To: spec.ProcID(to)}
	if err := validateHello(h); err != nil {
		return Hello{}, err
	}
	return h, nil
}

// EncodeHelloReply returns the encoding of r. A reason longer than
// MaxReasonLen is cut.
func EncodeHelloReply(r HelloReply) []byte {
	b := []byte{0, 0, 0, 0, Version, byte(kindReply)}
	if r.Accepted {
		b = append(b, 0)
		b = binary.AppendUvarint(b, r.Last)
	} else {
		reason := r.Reason
		if len(reason) > MaxReasonLen {
			reason = reason[:MaxReasonLen]
		}
		b = append(b, 1)
		b = appendString(b, reason)
	}
	return finishControl(b)
}

// ReadHelloReply reads a HelloReply.
func ReadHelloReply(r io.Reader) (HelloReply, error) {
	d, err := readControl(r, kindReply)
	if err != nil {
		return HelloReply{}, err
	}
	status, err := d.byte1("status")
	if err != nil {
		return HelloReply{}, err
	}
	var rep HelloReply
	switch status {
	case 0:
		rep.Accepted = true
		if rep.Last, err = d.uvarint("last"); err != nil {
			return HelloReply{}, err
		}
	case 1:
		if rep.Reason, err = d.str("reason", MaxReasonLen); err != nil {
			return HelloReply{}, err
		}
	default:
		return HelloReply{}, fmt.Errorf("%w: hello reply status %d", ErrInvalidFrame, status)
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
	d, err := readControl(r, kindAck)
	if err != nil {
		return 0, err
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

// readControl reads a control message body and checks version and kind.
func readControl(r io.Reader, want Kind) (*decoder, error) {
	body, err := readBody(r, MaxControlSize, MaxControlSize)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: body}
	k, err := d.header()
	if err != nil {
		return nil, err
	}
	if Kind(k) != want {
		return nil, fmt.Errorf("%w %d (want %d)", ErrKind, k, want)
	}
	return d, nil
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
