package model

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// The canonical encoding of a State for a given Config: the variables in
// declaration order, every number a varint (balances zig-zag), every
// sequence its length then its elements, recorded sets as bit masks and
// recording statuses packed four to a byte. Two states of one model are
// equal (as TLA+ values) iff their encodings are equal, so the explorer
// hashes and compares encodings and stores nothing else.

// AppendEncode appends st's canonical encoding to b.
func AppendEncode(b []byte, cfg *Config, st *State) []byte {
	for _, l := range st.Proc {
		b = appendLocal(b, l)
	}
	for _, ms := range st.Chan {
		b = binary.AppendUvarint(b, uint64(len(ms)))
		for _, m := range ms {
			if m.Kind == KindMarker {
				b = binary.AppendUvarint(b, uint64(m.Snap)+1)
			} else {
				b = append(b, 0)
				b = binary.AppendVarint(b, m.Amt)
				b = binary.AppendUvarint(b, m.Seq)
			}
		}
	}
	for _, x := range st.NSent {
		b = binary.AppendUvarint(b, x)
	}
	for _, g := range st.Got {
		b = appendNats(b, g)
	}
	for _, r := range st.Recorded {
		b = binary.AppendUvarint(b, uint64(r))
	}
	for _, rp := range st.RecProc {
		for _, l := range rp {
			b = appendLocal(b, l)
		}
	}
	for _, rc := range st.RecChan {
		var acc byte
		for i, x := range rc {
			acc |= byte(x) << (2 * uint(i%4))
			if i%4 == 3 {
				b = append(b, acc)
				acc = 0
			}
		}
		if len(rc)%4 != 0 {
			b = append(b, acc)
		}
	}
	for _, rm := range st.RecMsgs {
		for _, ms := range rm {
			b = appendAppMsgs(b, ms)
		}
	}
	for _, cs := range st.CutSent {
		for _, x := range cs {
			b = binary.AppendUvarint(b, x)
		}
	}
	for _, cg := range st.CutGot {
		for _, g := range cg {
			b = appendNats(b, g)
		}
	}
	for _, sh := range st.Pre {
		b = appendShadow(b, sh)
	}
	for _, sh := range st.Post {
		b = appendShadow(b, sh)
	}
	return b
}

// Encode returns st's canonical encoding.
func Encode(cfg *Config, st *State) []byte { return AppendEncode(make([]byte, 0, 256), cfg, st) }

// Key is Encode as a string, for maps.
func Key(cfg *Config, st *State) string { return string(AppendEncode(make([]byte, 0, 256), cfg, st)) }

func appendLocal(b []byte, l spec.LocalState) []byte {
	b = binary.AppendVarint(b, l.Bal)
	b = binary.AppendUvarint(b, uint64(l.Sent))
	return binary.AppendUvarint(b, uint64(l.Rcvd))
}

func appendNats(b []byte, g []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(g)))
	for _, x := range g {
		b = binary.AppendUvarint(b, x)
	}
	return b
}

func appendAppMsgs(b []byte, ms []spec.AppMsg) []byte {
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for _, m := range ms {
		b = binary.AppendVarint(b, m.Amt)
		b = binary.AppendUvarint(b, m.Seq)
	}
	return b
}

func appendShadow(b []byte, sh Shadow) []byte {
	if sh.OK {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	for _, l := range sh.Proc {
		b = appendLocal(b, l)
	}
	for _, ms := range sh.Chan {
		b = appendAppMsgs(b, ms)
	}
	return b
}

// ErrBadEncoding is returned (wrapped) for bytes that are no encoding.
var ErrBadEncoding = errors.New("model: bad state encoding")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: truncated or overlong varint", ErrBadEncoding)
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: truncated or overlong varint", ErrBadEncoding)
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = fmt.Errorf("%w: truncated", ErrBadEncoding)
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

// length reads a sequence length, bounded by the bytes left (every element
// takes at least one byte).
func (d *decoder) length() int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: sequence of %d elements in %d bytes", ErrBadEncoding, n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) local() spec.LocalState {
	return spec.LocalState{Bal: d.varint(), Sent: int(d.uvarint()), Rcvd: int(d.uvarint())}
}

func (d *decoder) nats() []uint64 {
	n := d.length()
	if n == 0 {
		return nil
	}
	g := make([]uint64, n)
	for i := range g {
		g[i] = d.uvarint()
	}
	return g
}

func (d *decoder) appMsgs() []spec.AppMsg {
	n := d.length()
	if n == 0 {
		return nil
	}
	ms := make([]spec.AppMsg, n)
	for i := range ms {
		ms[i] = spec.AppMsg{Amt: d.varint(), Seq: d.uvarint()}
	}
	return ms
}

func (d *decoder) shadow(np, nc int) Shadow {
	sh := Shadow{Proc: make([]spec.LocalState, np), Chan: make([][]spec.AppMsg, nc)}
	switch d.byte() {
	case 0:
	case 1:
		sh.OK = true
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: shadow ok flag is not 0 or 1", ErrBadEncoding)
		}
	}
	for p := range sh.Proc {
		sh.Proc[p] = d.local()
	}
	for c := range sh.Chan {
		sh.Chan[c] = d.appMsgs()
	}
	return sh
}

// Decode is the inverse of Encode. It rejects bytes that are not an
// encoding of a state of cfg's shape (the state need not be reachable).
func Decode(cfg *Config, b []byte) (*State, error) {
	np, nc, ns := cfg.NumProcs(), cfg.NumChans(), cfg.NumSnaps()
	d := &decoder{b: b}
	st := &State{
		Proc:     make([]spec.LocalState, np),
		Chan:     make([][]Msg, nc),
		NSent:    make([]uint64, nc),
		Got:      make([][]uint64, nc),
		Recorded: make([]ProcSet, ns),
		RecProc:  make([][]spec.LocalState, ns),
		RecChan:  make([][]Status, ns),
		RecMsgs:  make([][][]spec.AppMsg, ns),
		CutSent:  make([][]uint64, ns),
		CutGot:   make([][][]uint64, ns),
		Pre:      make([]Shadow, ns),
		Post:     make([]Shadow, ns),
	}
	for p := range st.Proc {
		st.Proc[p] = d.local()
	}
	for c := range st.Chan {
		n := d.length()
		if n == 0 {
			continue
		}
		ms := make([]Msg, n)
		for i := range ms {
			tag := d.uvarint()
			if tag == 0 {
				ms[i] = Msg{Kind: KindApp, AppMsg: spec.AppMsg{Amt: d.varint(), Seq: d.uvarint()}}
			} else {
				if tag > uint64(ns) && d.err == nil {
					d.err = fmt.Errorf("%w: marker of snapshot index %d, only %d snapshots", ErrBadEncoding, tag-1, ns)
				}
				ms[i] = Msg{Kind: KindMarker, Snap: int(tag - 1)}
			}
		}
		st.Chan[c] = ms
	}
	for c := range st.NSent {
		st.NSent[c] = d.uvarint()
	}
	for c := range st.Got {
		st.Got[c] = d.nats()
	}
	for s := range st.Recorded {
		st.Recorded[s] = ProcSet(d.uvarint())
	}
	for s := range st.RecProc {
		rp := make([]spec.LocalState, np)
		for p := range rp {
			rp[p] = d.local()
		}
		st.RecProc[s] = rp
	}
	for s := range st.RecChan {
		rc := make([]Status, nc)
		var acc byte
		for i := range rc {
			if i%4 == 0 {
				acc = d.byte()
			}
			rc[i] = Status(acc >> (2 * uint(i%4)) & 3)
			if rc[i] > Done && d.err == nil {
				d.err = fmt.Errorf("%w: bad recording status", ErrBadEncoding)
			}
		}
		if nc%4 != 0 && acc>>(2*uint(nc%4)) != 0 && d.err == nil {
			d.err = fmt.Errorf("%w: padding bits set", ErrBadEncoding)
		}
		st.RecChan[s] = rc
	}
	for s := range st.RecMsgs {
		rm := make([][]spec.AppMsg, nc)
		for c := range rm {
			rm[c] = d.appMsgs()
		}
		st.RecMsgs[s] = rm
	}
	for s := range st.CutSent {
		cs := make([]uint64, nc)
		for c := range cs {
			cs[c] = d.uvarint()
		}
		st.CutSent[s] = cs
	}
	for s := range st.CutGot {
		cg := make([][]uint64, nc)
		for c := range cg {
			cg[c] = d.nats()
		}
		st.CutGot[s] = cg
	}
	for s := range st.Pre {
		st.Pre[s] = d.shadow(np, nc)
	}
	for s := range st.Post {
		st.Post[s] = d.shadow(np, nc)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadEncoding, len(d.b))
	}
	return st, nil
}
