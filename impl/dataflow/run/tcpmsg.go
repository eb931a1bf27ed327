package run

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/markerwave/markerwave/impl/dataflow"
)

// The messages of the TCP runtime, carried in the payloads of the
// transport's application frames, several to a frame: each is its edge
// (uvarint), its kind (a byte) and its body:
//
//	msgItems   sender to receiver: n (uvarint), then n items of itemBytes
//	msgRevoke  sender to receiver: no body
//	msgAck     receiver to sender: items taken in all (uvarint), revoked (a byte, 0 or 1)
const (
	msgItems  byte = 1 // items of the queue, in order
	msgRevoke byte = 2 // discard your copies, say what you took
	msgAck    byte = 3 // how many items the receiver took in all; revoked
)

// itemBytes is the size of an item's encoding: flags, Src, I, Hops, Seq,
// Val, Snap.
const itemBytes = 1 + 4 + 4 + 4 + 8 + 8 + 4

func appendItem(b []byte, it dataflow.Item) []byte {
	var f byte
	if it.Barrier {
		f = 1
	}
	b = append(b, f)
	b = binary.BigEndian.AppendUint32(b, uint32(it.Src))
	b = binary.BigEndian.AppendUint32(b, uint32(it.I))
	b = binary.BigEndian.AppendUint32(b, uint32(it.Hops))
	b = binary.BigEndian.AppendUint64(b, uint64(it.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(it.Val))
	return binary.BigEndian.AppendUint32(b, uint32(it.Snap))
}

// readItem decodes the item b starts with (at least itemBytes long).
func readItem(b []byte) (dataflow.Item, error) {
	if b[0] > 1 {
		return dataflow.Item{}, fmt.Errorf("bad item flags %d", b[0])
	}
	return dataflow.Item{Barrier: b[0] == 1, Src: int(int32(binary.BigEndian.Uint32(b[1:]))),
		I: int(int32(binary.BigEndian.Uint32(b[5:]))), Hops: int(int32(binary.BigEndian.Uint32(b[9:]))),
		Seq: int(binary.BigEndian.Uint64(b[13:])), Val: int64(binary.BigEndian.Uint64(b[21:])),
		Snap: int(int32(binary.BigEndian.Uint32(b[29:])))}, nil
}

// appendItems appends the message shipping items on edge e.
func appendItems(b []byte, e int, items []dataflow.Item) []byte {
	b = appendHeader(b, e, msgItems)
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		b = appendItem(b, it)
	}
	return b
}

// appendRevoke appends the message revoking edge e's copies.
func appendRevoke(b []byte, e int) []byte { return appendHeader(b, e, msgRevoke) }

// appendAck appends the message acknowledging took items of edge e.
func appendAck(b []byte, e, took int, revoked bool) []byte {
	b = binary.AppendUvarint(appendHeader(b, e, msgAck), uint64(took))
	if revoked {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendHeader(b []byte, e int, kind byte) []byte {
	return append(binary.AppendUvarint(b, uint64(e)), kind)
}

// msg is one message of a payload: items holds the encodings of the
// items shipped (msgItems), decoded by eachItem without copying them.
type msg struct {
	e       int
	kind    byte
	items   []byte
	took    int
	revoked bool
}

// eachItem decodes m's items, in order, and calls f with each.
func (m msg) eachItem(f func(dataflow.Item)) error {
	for b := m.items; len(b) > 0; b = b[itemBytes:] {
		it, err := readItem(b)
		if err != nil {
			return err
		}
		f(it)
	}
	return nil
}

// nextMsg decodes the message b starts with and returns the rest of b.
// A message that is not whole or names no edge of g is an error (naming
// the edge when it does).
func nextMsg(g *dataflow.Graph, b []byte) (msg, []byte, error) {
	m, b, err := readHeader(g, b)
	if err != nil {
		return m, nil, err
	}
	if b, err = m.readBody(b); err != nil {
		return m, nil, fmt.Errorf("%s: %w", g.EdgeName(m.e), err)
	}
	return m, b, nil
}

// readHeader reads a message's edge and kind off b and returns the rest
// of b.
func readHeader(g *dataflow.Graph, b []byte) (msg, []byte, error) {
	e, n := binary.Uvarint(b)
	if n <= 0 || e >= uint64(len(g.Edges)) {
		return msg{}, nil, fmt.Errorf("a message for no edge of the graph (%d of %d)", e, len(g.Edges))
	}
	m := msg{e: int(e)}
	b = b[n:]
	if len(b) == 0 {
		return m, nil, fmt.Errorf("%s: a message without its kind: %w", g.EdgeName(m.e), io.ErrUnexpectedEOF)
	}
	m.kind = b[0]
	return m, b[1:], nil
}

// readBody reads the body of a message of m's kind off b and returns the
// rest of b.
func (m *msg) readBody(b []byte) ([]byte, error) {
	switch m.kind {
	case msgItems:
		return m.readItems(b)
	case msgRevoke:
		return b, nil
	case msgAck:
		return m.readAck(b)
	}
	return nil, fmt.Errorf("unknown message kind %d", m.kind)
}

func (m *msg) readItems(b []byte) ([]byte, error) {
	k, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n)/itemBytes < k {
		return nil, fmt.Errorf("items cut short: %w", io.ErrUnexpectedEOF)
	}
	b = b[n:]
	m.items, b = b[:k*itemBytes], b[k*itemBytes:]
	return b, nil
}

func (m *msg) readAck(b []byte) ([]byte, error) {
	took, n := binary.Uvarint(b)
	if n <= 0 || len(b) == n {
		return nil, fmt.Errorf("an acknowledgement cut short: %w", io.ErrUnexpectedEOF)
	}
	if b[n] > 1 {
		return nil, fmt.Errorf("an acknowledgement with revoked flag %d", b[n])
	}
	m.took, m.revoked = int(took), b[n] == 1
	return b[n+1:], nil
}
