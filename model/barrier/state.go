package barrier

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// Item mirrors an element of an edge's queue (tla/BarrierSnapshots.tla
// lines 78-79): a barrier, or Rec(src, i, hops, eseq).
type Item struct {
	Barrier bool
	Src     int // the source's node index
	I       int // the record's number at its source
	Hops    int // times round a cycle
	ESeq    int // ghost: its number on the edge it travels
}

// Status mirrors Status (line 82), an edge's recording status: the same
// three values as in tla/ChandyLamport.tla, spec's one type.
type Status = spec.Status

// The statuses.
const (
	Idle      = spec.Idle
	Recording = spec.Recording
	Done      = spec.Done
)

// App mirrors the application state of lines 116-121 (InitApp,
// RecordedApp, the shadow pre): per node and per edge, indexed as in
// Config. Emitted is meaningful for sources, Cnt for the other nodes, Out
// is indexed by Key.
type App struct {
	OK      bool
	Emitted []int
	Cnt     []int
	Out     []int
	Q       [][]Item
}

// State mirrors the variables of tla/BarrierSnapshots.tla (lines 93-110).
// Per-node slices have one entry per node (0 where the TLA+ function's
// domain leaves the node out); node sets are bit masks of node indexes,
// edge sets of edge indexes.
type State struct {
	Emitted  []int
	Q        [][]Item
	Cnt      []int
	Out      []int
	Bar      []uint64
	Recorded uint64
	RecOff   []int
	RecCnt   []int
	RecOut   []int
	RecChan  []Status
	RecQ     [][]Item
	NSent    []int
	NRcvd    []int
	CutSent  []int
	CutRcvd  []int
	Pre      App
	Restored bool
	// The variables tla/BarrierAdaptive.tla adds (lines 56-59), left at
	// their initial values by the models of tla/BarrierSnapshots.tla:
	// Switched is mode (the nodes whose mode is "unaligned"), Reported is
	// reported, CutAligned the ghost cutAligned (a node set).
	Switched   uint64
	Reported   []SnapType
	CutAligned uint64
}

func cloneQ(q [][]Item) [][]Item {
	c := make([][]Item, len(q))
	for i, x := range q {
		c[i] = slices.Clone(x)
	}
	return c
}

func (a App) clone() App {
	return App{OK: a.OK, Emitted: slices.Clone(a.Emitted), Cnt: slices.Clone(a.Cnt),
		Out: slices.Clone(a.Out), Q: cloneQ(a.Q)}
}

// Clone returns a deep copy of st.
func (st *State) Clone() *State {
	return &State{
		Emitted: slices.Clone(st.Emitted), Q: cloneQ(st.Q), Cnt: slices.Clone(st.Cnt),
		Out: slices.Clone(st.Out), Bar: slices.Clone(st.Bar), Recorded: st.Recorded,
		RecOff: slices.Clone(st.RecOff), RecCnt: slices.Clone(st.RecCnt), RecOut: slices.Clone(st.RecOut),
		RecChan: slices.Clone(st.RecChan), RecQ: cloneQ(st.RecQ),
		NSent: slices.Clone(st.NSent), NRcvd: slices.Clone(st.NRcvd),
		CutSent: slices.Clone(st.CutSent), CutRcvd: slices.Clone(st.CutRcvd),
		Pre: st.Pre.clone(), Restored: st.Restored,
		Switched: st.Switched, Reported: slices.Clone(st.Reported), CutAligned: st.CutAligned,
	}
}

// Has reports whether node n has recorded.
func (st *State) Has(n int) bool { return st.Recorded&(1<<n) != 0 }

// Encoding. Every field in a fixed order, numbers as uvarints, sequences
// length first: two states are equal iff their encodings are.

func appendInts(b []byte, xs []int) []byte {
	for _, x := range xs {
		b = binary.AppendUvarint(b, uint64(x))
	}
	return b
}

func appendItems(b []byte, q [][]Item) []byte {
	for _, items := range q {
		b = binary.AppendUvarint(b, uint64(len(items)))
		for _, it := range items {
			if it.Barrier {
				b = append(b, 1)
				continue
			}
			b = append(b, 0)
			b = appendInts(b, []int{it.Src, it.I, it.Hops, it.ESeq})
		}
	}
	return b
}

func appendBool(b []byte, x bool) []byte {
	if x {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendEncode appends the canonical encoding of st to b.
func AppendEncode(b []byte, st *State) []byte {
	b = appendInts(b, st.Emitted)
	b = appendItems(b, st.Q)
	b = appendInts(b, st.Cnt)
	b = appendInts(b, st.Out)
	for _, x := range st.Bar {
		b = binary.AppendUvarint(b, x)
	}
	b = binary.AppendUvarint(b, st.Recorded)
	b = appendInts(b, st.RecOff)
	b = appendInts(b, st.RecCnt)
	b = appendInts(b, st.RecOut)
	for _, s := range st.RecChan {
		b = append(b, byte(s))
	}
	b = appendItems(b, st.RecQ)
	b = appendInts(b, st.NSent)
	b = appendInts(b, st.NRcvd)
	b = appendInts(b, st.CutSent)
	b = appendInts(b, st.CutRcvd)
	b = appendBool(b, st.Pre.OK)
	b = appendInts(b, st.Pre.Emitted)
	b = appendInts(b, st.Pre.Cnt)
	b = appendInts(b, st.Pre.Out)
	b = appendItems(b, st.Pre.Q)
	b = appendBool(b, st.Restored)
	b = binary.AppendUvarint(b, st.Switched)
	for _, t := range st.Reported {
		b = append(b, byte(t))
	}
	return binary.AppendUvarint(b, st.CutAligned)
}

// Key is the canonical encoding of st as a string.
func Key(st *State) string { return string(AppendEncode(nil, st)) }

var errCorrupt = errors.New("barrier: corrupt state encoding")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) ints(n int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = int(d.uint())
	}
	return xs
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.err = errCorrupt
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *decoder) items(n int) [][]Item {
	q := make([][]Item, n)
	for e := range q {
		l := int(d.uint())
		if d.err != nil || l > len(d.b) {
			d.err = errCorrupt
			return q
		}
		for range l {
			if d.byte() == 1 {
				q[e] = append(q[e], Item{Barrier: true})
				continue
			}
			x := d.ints(4)
			q[e] = append(q[e], Item{Src: x[0], I: x[1], Hops: x[2], ESeq: x[3]})
		}
	}
	return q
}

// Decode is the inverse of AppendEncode for cfg's states.
func Decode(cfg *Config, b []byte) (*State, error) {
	n, e, k := len(cfg.Nodes), len(cfg.Edges), cfg.numKeys
	d := &decoder{b: b}
	st := &State{}
	st.Emitted = d.ints(n)
	st.Q = d.items(e)
	st.Cnt = d.ints(n)
	st.Out = d.ints(k)
	st.Bar = make([]uint64, n)
	for i := range st.Bar {
		st.Bar[i] = d.uint()
	}
	st.Recorded = d.uint()
	st.RecOff = d.ints(n)
	st.RecCnt = d.ints(n)
	st.RecOut = d.ints(k)
	st.RecChan = make([]Status, e)
	for i := range st.RecChan {
		st.RecChan[i] = Status(d.byte())
	}
	st.RecQ = d.items(e)
	st.NSent = d.ints(e)
	st.NRcvd = d.ints(e)
	st.CutSent = d.ints(e)
	st.CutRcvd = d.ints(e)
	st.Pre.OK = d.byte() == 1
	st.Pre.Emitted = d.ints(n)
	st.Pre.Cnt = d.ints(n)
	st.Pre.Out = d.ints(k)
	st.Pre.Q = d.items(e)
	st.Restored = d.byte() == 1
	st.Switched = d.uint()
	st.Reported = make([]SnapType, n)
	for i := range st.Reported {
		st.Reported[i] = SnapType(d.byte())
	}
	st.CutAligned = d.uint()
	if d.err == nil && len(d.b) != 0 {
		d.err = errCorrupt
	}
	return st, d.err
}
