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

// AppendEncode appends st's canonical encoding to b: each variable in
// turn, in the order of the spec's vars.
func AppendEncode(b []byte, cfg *Config, st *State) []byte {
	b = appendProcs(b, st)
	b = appendRecordings(b, st)
	b = appendCuts(b, st)
	if cfg.Faults() { // the variables of tla/ChandyLamportFaults.tla
		b = appendFaults(b, st)
	}
	return b
}

// appendProcs appends proc, chan, nSent and got.
func appendProcs(b []byte, st *State) []byte {
	for _, l := range st.Proc {
		b = appendLocal(b, l)
	}
	for _, ms := range st.Chan {
		b = appendChan(b, ms)
	}
	for _, x := range st.NSent {
		b = binary.AppendUvarint(b, x)
	}
	for _, g := range st.Got {
		b = appendNats(b, g)
	}
	return b
}

// appendChan appends a channel's messages: its length, then 0 and the
// amount and seq of an app message, s+1 for a marker of snapshot s.
func appendChan(b []byte, ms []Msg) []byte {
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for _, m := range ms {
		if m.Kind == KindMarker {
			b = binary.AppendUvarint(b, uint64(m.Snap)+1)
			continue
		}
		b = append(b, 0)
		b = binary.AppendVarint(b, m.Amt)
		b = binary.AppendUvarint(b, m.Seq)
	}
	return b
}

// appendRecordings appends recorded, recProc, recChan and recMsgs.
func appendRecordings(b []byte, st *State) []byte {
	for _, r := range st.Recorded {
		b = appendSet(b, len(st.Proc), r)
	}
	for _, rp := range st.RecProc {
		for _, l := range rp {
			b = appendLocal(b, l)
		}
	}
	for _, rc := range st.RecChan {
		b = appendStatuses(b, rc)
	}
	for _, rm := range st.RecMsgs {
		for _, ms := range rm {
			b = appendAppMsgs(b, ms)
		}
	}
	return b
}

// appendStatuses appends statuses four to a byte, two bits each.
func appendStatuses(b []byte, rc []Status) []byte {
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
	return b
}

// appendCuts appends cutSent, cutGot, pre and post.
func appendCuts(b []byte, st *State) []byte {
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

// appendFaults appends alive, suspected, abortedBy, crashes, inc, base
// and restoredFrom.
func appendFaults(b []byte, st *State) []byte {
	b = appendSet(b, len(st.Proc), st.Alive)
	b = appendSet(b, len(st.Proc), st.Suspected)
	for _, a := range st.AbortedBy {
		b = appendSet(b, len(st.Proc), a)
	}
	b = binary.AppendUvarint(b, uint64(st.Crashes))
	b = binary.AppendUvarint(b, uint64(st.Inc))
	b = appendShadow(b, st.Base)
	return append(b, byte(st.RestoredFrom))
}

// Encode returns st's canonical encoding.
func Encode(cfg *Config, st *State) []byte { return AppendEncode(make([]byte, 0, 256), cfg, st) }

// Key is Encode as a string, for maps.
func Key(cfg *Config, st *State) string { return string(AppendEncode(make([]byte, 0, 256), cfg, st)) }

// appendSet appends a set of processes of a model of np processes: a
// word of 64 processes each, as many as np needs.
func appendSet(b []byte, np int, ps ProcSet) []byte {
	for i := 0; i == 0 || i*64 < np; i++ {
		b = binary.AppendUvarint(b, ps[i])
	}
	return b
}

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

// set decodes appendSet's set of processes.
func (d *decoder) set(np int) ProcSet {
	var ps ProcSet
	for i := 0; i == 0 || i*64 < np; i++ {
		ps[i] = d.uvarint()
	}
	return ps
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

// varint decodes binary.AppendVarint's zig-zag encoding: uvarint's
// number, its low bit the sign (as binary.Varint decodes it).
func (d *decoder) varint() int64 {
	u := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
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

// arena hands out the slices of decoded states from a few large buffers.
// A worker that decodes one state at a time and drops it (and every
// successor computed from it) before decoding the next can reuse one arena
// for all of them; reset makes the buffers reusable. Slices handed out
// have cap == len, so nothing appends into a neighbour.
type arena struct {
	locals  []spec.LocalState
	nats    []uint64
	apps    []spec.AppMsg
	msgs    []Msg
	stats   []Status
	sets    []ProcSet
	shadows []Shadow
	msgSeqs [][]Msg
	natSeqs [][]uint64
	appSeqs [][]spec.AppMsg
	locSeqs [][]spec.LocalState
	statSqs [][]Status
	natSSqs [][][]uint64
	appSSqs [][][]spec.AppMsg
	state   []State
}

func (a *arena) reset() {
	a.locals, a.nats, a.apps, a.msgs, a.stats, a.sets, a.shadows = a.locals[:0], a.nats[:0], a.apps[:0], a.msgs[:0], a.stats[:0], a.sets[:0], a.shadows[:0]
	a.msgSeqs, a.natSeqs, a.appSeqs, a.locSeqs, a.statSqs, a.natSSqs, a.appSSqs, a.state = a.msgSeqs[:0], a.natSeqs[:0], a.appSeqs[:0], a.locSeqs[:0], a.statSqs[:0], a.natSSqs[:0], a.appSSqs[:0], a.state[:0]
}

// take returns n elements from *buf, growing it (into a fresh array, so
// earlier slices stay valid) when it is full.
func take[T any](buf *[]T, n int) []T {
	if n == 0 {
		return nil
	}
	b := *buf
	if cap(b)-len(b) < n {
		b = make([]T, 0, max(2*cap(b), n, 64))
	}
	l := len(b)
	*buf = b[:l+n]
	return b[l : l+n : l+n]
}

func (d *decoder) nats(a *arena) []uint64 {
	n := d.length()
	g := take(&a.nats, n)
	for i := range g {
		g[i] = d.uvarint()
	}
	return g
}

func (d *decoder) appMsgs(a *arena) []spec.AppMsg {
	n := d.length()
	ms := take(&a.apps, n)
	for i := range ms {
		ms[i] = spec.AppMsg{Amt: d.varint(), Seq: d.uvarint()}
	}
	return ms
}

func (d *decoder) shadow(a *arena, np, nc int) Shadow {
	sh := Shadow{Proc: take(&a.locals, np), Chan: take(&a.appSeqs, nc)}
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
		sh.Chan[c] = d.appMsgs(a)
	}
	return sh
}

// Decode is the inverse of Encode. It rejects bytes that are not an
// encoding of a state of cfg's shape (the state need not be reachable).
func Decode(cfg *Config, b []byte) (*State, error) { return new(arena).decode(cfg, b) }

func (a *arena) decode(cfg *Config, b []byte) (*State, error) {
	d := &decoder{b: b}
	st := a.newState(cfg)
	a.decodeProcs(d, cfg, st)
	a.decodeSnaps(d, cfg, st)
	if cfg.Faults() {
		a.decodeFaults(d, cfg, st)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrBadEncoding, len(d.b))
	}
	return st, nil
}

// newState takes a state of cfg's shape from the arena, its variables
// to be decoded.
func (a *arena) newState(cfg *Config) *State {
	np, nc, ns := cfg.NumProcs(), cfg.NumChans(), cfg.NumSnaps()
	st := &take(&a.state, 1)[0]
	*st = State{
		Proc:     take(&a.locals, np),
		Chan:     take(&a.msgSeqs, nc),
		NSent:    take(&a.nats, nc),
		Got:      take(&a.natSeqs, nc),
		Recorded: take(&a.sets, ns),
		RecProc:  take(&a.locSeqs, ns),
		RecChan:  take(&a.statSqs, ns),
		RecMsgs:  take(&a.appSSqs, ns),
		CutSent:  take(&a.natSeqs, ns),
		CutGot:   take(&a.natSSqs, ns),
		Pre:      take(&a.shadows, ns),
		Post:     take(&a.shadows, ns),
	}
	return st
}

// decodeProcs decodes proc, chan, nSent and got.
func (a *arena) decodeProcs(d *decoder, cfg *Config, st *State) {
	for p := range st.Proc {
		st.Proc[p] = d.local()
	}
	for c := range st.Chan {
		st.Chan[c] = a.decodeChan(d, cfg.NumSnaps())
	}
	for c := range st.NSent {
		st.NSent[c] = d.uvarint()
	}
	for c := range st.Got {
		st.Got[c] = d.nats(a)
	}
}

// decodeChan decodes one channel's messages: tag 0 an app message, tag
// s+1 a marker of snapshot index s < ns.
func (a *arena) decodeChan(d *decoder, ns int) []Msg {
	ms := take(&a.msgs, d.length())
	for i := range ms {
		tag := d.uvarint()
		if tag == 0 {
			ms[i] = Msg{Kind: KindApp, AppMsg: spec.AppMsg{Amt: d.varint(), Seq: d.uvarint()}}
			continue
		}
		if tag > uint64(ns) && d.err == nil {
			d.err = fmt.Errorf("%w: marker of snapshot index %d, only %d snapshots", ErrBadEncoding, tag-1, ns)
		}
		ms[i] = Msg{Kind: KindMarker, Snap: int(tag - 1)}
	}
	return ms
}

// decodeSnaps decodes the snapshots' variables, each in turn over Snap.
func (a *arena) decodeSnaps(d *decoder, cfg *Config, st *State) {
	a.decodeRecordings(d, cfg, st)
	a.decodeCuts(d, cfg, st)
}

// decodeRecordings decodes recorded, recProc, recChan and recMsgs.
func (a *arena) decodeRecordings(d *decoder, cfg *Config, st *State) {
	np, nc := cfg.NumProcs(), cfg.NumChans()
	for s := range st.Recorded {
		st.Recorded[s] = d.set(np)
	}
	for s := range st.RecProc {
		st.RecProc[s] = a.decodeLocals(d, np)
	}
	for s := range st.RecChan {
		st.RecChan[s] = a.decodeStatuses(d, nc)
	}
	for s := range st.RecMsgs {
		rm := take(&a.appSeqs, nc)
		for c := range rm {
			rm[c] = d.appMsgs(a)
		}
		st.RecMsgs[s] = rm
	}
}

// decodeCuts decodes cutSent, cutGot, pre and post.
func (a *arena) decodeCuts(d *decoder, cfg *Config, st *State) {
	np, nc := cfg.NumProcs(), cfg.NumChans()
	for s := range st.CutSent {
		cs := take(&a.nats, nc)
		for c := range cs {
			cs[c] = d.uvarint()
		}
		st.CutSent[s] = cs
	}
	for s := range st.CutGot {
		cg := take(&a.natSeqs, nc)
		for c := range cg {
			cg[c] = d.nats(a)
		}
		st.CutGot[s] = cg
	}
	for s := range st.Pre {
		st.Pre[s] = d.shadow(a, np, nc)
	}
	for s := range st.Post {
		st.Post[s] = d.shadow(a, np, nc)
	}
}

// decodeLocals decodes np local states.
func (a *arena) decodeLocals(d *decoder, np int) []spec.LocalState {
	rp := take(&a.locals, np)
	for p := range rp {
		rp[p] = d.local()
	}
	return rp
}

// decodeStatuses decodes nc statuses packed four to a byte, the padding
// bits zero.
func (a *arena) decodeStatuses(d *decoder, nc int) []Status {
	rc := take(&a.stats, nc)
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
	return rc
}

// decodeFaults decodes the faults variables of tla/ChandyLamportFaults.tla.
func (a *arena) decodeFaults(d *decoder, cfg *Config, st *State) {
	st.Alive = d.set(cfg.NumProcs())
	st.Suspected = d.set(cfg.NumProcs())
	st.AbortedBy = take(&a.sets, cfg.NumSnaps())
	for s := range st.AbortedBy {
		st.AbortedBy[s] = d.set(cfg.NumProcs())
	}
	st.Crashes = int(d.uvarint())
	st.Inc = int(d.uvarint())
	st.Base = d.shadow(a, cfg.NumProcs(), cfg.NumChans())
	if st.RestoredFrom = Origin(d.byte()); st.RestoredFrom > OriginIncomplete && d.err == nil {
		d.err = fmt.Errorf("%w: bad restoredFrom", ErrBadEncoding)
	}
}
