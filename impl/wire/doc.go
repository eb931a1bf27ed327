// Package wire defines the frames that travel on markerwave channels, the
// control messages of a stream transport, and their binary encoding. The
// core (impl/core) produces and consumes Frames; transports
// (impl/transport) carry them. The byte layouts are described beside
// Encode (codec.go) and beside Hello (handshake.go).
//
// # What the package promises
//
// Frames (Encode, AppendFrame, WriteFrame, Decode, ReadFrame):
//
//   - Encode accepts exactly the frames Frame.Validate accepts whose body
//     (the bytes after the 4-byte length) is at most MaxFrameSize bytes.
//     Both limits are inclusive: a body of MaxFrameSize bytes and a
//     vector clock of MaxVCLen entries are encoded; one more is refused.
//   - Round trip: for every frame f Encode accepts, Decode(Encode(f))
//     returns a frame Equal to f (nil and empty Payload or VC are equal).
//   - Canonical: a frame has exactly one encoding, and Decode accepts only
//     that one: whenever Decode(b) succeeds, Encode of its result is b,
//     byte for byte. Varints must be minimal; nothing may follow the last
//     field or the frame. So every single-byte corruption of an encoding
//     is refused, or decodes to a frame that encodes to the corrupted
//     bytes.
//   - Refusals: every error Decode and the Read functions return for bad
//     bytes matches ErrProtocol (errors.Is) and names the cause with one
//     of the sentinels: ErrTruncated (every strict prefix of an encoding),
//     ErrTrailing (bytes after the last field or the frame), ErrTooLarge
//     (a length or count above its limit), ErrVersion, ErrKind, ErrVarint
//     (overflow or non-minimal), ErrInvalidFrame (a field breaks a rule of
//     Validate). Encode refuses an invalid frame with ErrKind or
//     ErrInvalidFrame and an oversized one with ErrTooLarge.
//   - AppendFrame(dst, f) is dst followed by Encode(f); on error it
//     returns dst unchanged. The frame Decode returns shares no memory
//     with its input.
//   - Streams: ReadFrame reads exactly the bytes of one frame, never
//     more, from any io.Reader (including readers that return one byte a
//     call). Its size limit is maxSize when 0 < maxSize <= MaxFrameSize,
//     MaxFrameSize otherwise, inclusive; a length above it is refused with
//     ErrTooLarge before any byte of the body is read. Whatever length
//     the prefix announces, it allocates at most 64 KiB before the body's
//     bytes arrive, and memory in proportion to those that do. A clean end of input before the first
//     byte is io.EOF; an end inside a frame matches both ErrTruncated and
//     io.ErrUnexpectedEOF; any other read error is returned as is and does
//     not match ErrProtocol.
//   - Frame.Equal is equality of every field (nil and empty slices
//     equal); Frame.Clone returns an Equal frame sharing no memory with f.
//
// Control messages (EncodeHello, ReadHello, EncodeHelloReply,
// ReadHelloReply, EncodeAck, ReadAck):
//
//   - EncodeHello accepts exactly the hellos whose ids pass
//     spec.ValidateProcID, which name no self-loop and whose incarnation
//     is not 0; it refuses others with ErrInvalidFrame. For every hello it
//     accepts with Version 0 or HandshakeVersion, ReadHello returns it
//     with Version set to HandshakeVersion.
//   - EncodeHelloReply never fails. ReadHelloReply of its output returns
//     the reply's normal form: Accepted wins over Stale, Stale over
//     Mismatch; only the fields of the status are kept (accept:
//     Incarnation, Last; stale: Incarnation, Known, Reason; mismatch:
//     Restored, Reason; reject: Reason); a reason is cut to its first
//     MaxReasonLen bytes; an accepted, stale or mismatch reply with
//     incarnation 0 (accepted, stale) or an old Version (1 or 2) becomes
//     a rejection naming the mistake.
//   - Every uint64 round-trips through EncodeAck and ReadAck.
//   - The Read functions are canonical like Decode (what they accept is
//     re-encoded to the bytes they consumed), read exactly one message,
//     refuse a length above MaxControlSize with ErrTooLarge, a message of
//     another kind with ErrKind, a version other than the message's own
//     (HandshakeVersion for hellos and replies, version 1 and 2
//     rejections excepted; Version for acks) with ErrVersion, and report truncation
//     and read errors like ReadFrame. EncodeHello and EncodeHelloReply
//     write any other Version they are given as is (for tests of peers
//     that disagree), and the Read functions refuse it.
//
// Every function is safe for concurrent use; a Reader must not be shared
// by concurrent Read calls.
package wire
