package export

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// builder writes traces by hand: it runs the Chandy-Lamport rules just far
// enough to give each event its local state, message number, first flag
// and vector clock (spec.VectorClock Tick on local steps, Merge on
// receives; markers carry the clock of the step that sent them).
type builder struct {
	t      testing.TB
	top    *spec.Topology
	state  map[spec.ProcID]spec.LocalState
	vc     map[spec.ProcID]spec.VectorClock
	seq    map[spec.ProcID]uint64
	nSent  map[spec.Channel]uint64
	chans  map[spec.Channel][]inFlight
	rec    map[spec.SnapID]map[spec.ProcID]bool
	header spec.Header
	events []spec.Event
}

type inFlight struct {
	marker bool
	snap   spec.SnapID
	amt    int64
	seq    uint64
	vc     spec.VectorClock
}

func newBuilder(t testing.TB, top *spec.Topology, bal map[spec.ProcID]int64) *builder {
	b := &builder{t: t, top: top, state: map[spec.ProcID]spec.LocalState{}, vc: map[spec.ProcID]spec.VectorClock{},
		seq: map[spec.ProcID]uint64{}, nSent: map[spec.Channel]uint64{}, chans: map[spec.Channel][]inFlight{},
		rec:    map[spec.SnapID]map[spec.ProcID]bool{},
		header: spec.Header{Topology: top, InitBal: bal, Budget: map[spec.ProcID]int{}, Snaps: map[spec.SnapID]spec.ProcID{}}}
	for _, p := range top.Procs {
		b.state[p] = spec.LocalState{Bal: bal[p]}
		b.vc[p] = make(spec.VectorClock, len(top.Procs))
	}
	return b
}

func (b *builder) emit(e spec.Event, vc spec.VectorClock) {
	b.vc[e.Proc] = vc
	b.seq[e.Proc]++
	e.Seq = b.seq[e.Proc]
	e.After = b.state[e.Proc]
	e.VC = append([]uint64(nil), vc...)
	require.NoError(b.t, e.Validate(b.top), "builder produced an invalid event %s", e)
	b.events = append(b.events, e)
}

func (b *builder) send(p, q spec.ProcID, amt int64) *builder {
	c := spec.Channel{From: p, To: q}
	vc := b.vc[p].Tick(b.top.ProcIndex(p))
	b.nSent[c]++
	b.chans[c] = append(b.chans[c], inFlight{amt: amt, seq: b.nSent[c], vc: vc})
	st := b.state[p]
	st.Bal -= amt
	st.Sent++
	b.state[p] = st
	b.header.Budget[p]++
	b.emit(spec.Event{Proc: p, Action: spec.SendApp, From: p, To: q, Amount: amt, Msg: b.nSent[c]}, vc)
	return b
}

// take removes the i-th frame of c (0 is the head; other positions break
// FIFO, for the negative traces).
func (b *builder) take(c spec.Channel, i int) inFlight {
	require.Less(b.t, i, len(b.chans[c]), "nothing at position %d of %s", i, c)
	m := b.chans[c][i]
	b.chans[c] = append(b.chans[c][:i:i], b.chans[c][i+1:]...)
	return m
}

func (b *builder) recv(p, q spec.ProcID) *builder { return b.recvAt(p, q, 0) }

func (b *builder) recvAt(p, q spec.ProcID, i int) *builder {
	c := spec.Channel{From: p, To: q}
	m := b.take(c, i)
	require.False(b.t, m.marker, "%s: a marker at position %d", c, i)
	vc := b.vc[q].Merge(m.vc, b.top.ProcIndex(q))
	st := b.state[q]
	st.Bal += m.amt
	st.Rcvd++
	b.state[q] = st
	b.emit(spec.Event{Proc: q, Action: spec.RecvApp, From: p, To: q, Amount: m.amt, Msg: m.seq}, vc)
	return b
}

func (b *builder) markers(p spec.ProcID, s spec.SnapID, vc spec.VectorClock) {
	if b.rec[s] == nil {
		b.rec[s] = map[spec.ProcID]bool{}
	}
	b.rec[s][p] = true
	for _, c := range b.top.Out(p) {
		b.chans[c] = append(b.chans[c], inFlight{marker: true, snap: s, vc: vc})
	}
}

func (b *builder) initiate(p spec.ProcID, s spec.SnapID) *builder {
	vc := b.vc[p].Tick(b.top.ProcIndex(p))
	b.header.Snaps[s] = p
	b.markers(p, s, vc)
	b.emit(spec.Event{Proc: p, Action: spec.Initiate, Snap: s}, vc)
	return b
}

func (b *builder) recvMarker(p, q spec.ProcID) *builder {
	c := spec.Channel{From: p, To: q}
	m := b.take(c, 0)
	require.True(b.t, m.marker, "%s: head is not a marker", c)
	vc := b.vc[q].Merge(m.vc, b.top.ProcIndex(q))
	first := !b.rec[m.snap][q]
	if first {
		b.markers(q, m.snap, vc)
	}
	b.emit(spec.Event{Proc: q, Action: spec.RecvMarker, From: p, To: q, Snap: m.snap, First: first}, vc)
	return b
}

func (b *builder) trace() spec.Trace {
	// The clocks must be those of a real run: MergeCausal accepts the
	// per-process logs.
	logs := map[spec.ProcID][]spec.Event{}
	for _, e := range b.events {
		logs[e.Proc] = append(logs[e.Proc], e)
	}
	_, err := spec.MergeCausal(b.top, logs)
	require.NoError(b.t, err)
	return spec.Trace{Header: b.header, Events: append([]spec.Event(nil), b.events...)}
}

// twoBank is the article's two accounts, $100 and $50, with money in flight
// at the cut: P1 sends $30, P2 sends $20, P1 initiates (records $70), P1
// receives the $20 while recording P2->P1, P2 receives the $30, then the
// marker (records $60), and P2's marker closes P2->P1. Recorded: $70 + $60
// + $20 in flight = $150.
func twoBank(t *testing.T) spec.Trace {
	return newBuilder(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50}).
		send("P1", "P2", 30).
		send("P2", "P1", 20).
		initiate("P1", 1).
		recv("P2", "P1").
		recv("P1", "P2").
		recvMarker("P1", "P2").
		recvMarker("P2", "P1").
		trace()
}

// tokenRing is the article's three-process ring with one token (one unit
// of money) starting at P3: P1 initiates, P2 records, P3 passes the token
// to P1 before the marker reaches it, so the token is in flight on P3->P1
// at the cut and recorded as that channel's state: exactly one token.
func tokenRing(t *testing.T) spec.Trace {
	return newBuilder(t, spec.Ring(3), map[spec.ProcID]int64{"P3": 1}).
		initiate("P1", 1).
		recvMarker("P1", "P2").
		send("P3", "P1", 1).
		recvMarker("P2", "P3").
		recv("P3", "P1").
		recvMarker("P3", "P1").
		send("P1", "P2", 1).
		recv("P1", "P2").
		trace()
}

// nonFIFO breaks FIFO: P1 initiates, then sends $30, which overtakes the
// marker; P2 receives it before the marker, so P2 records $80 while P1
// recorded $100: the article's orphan message ($180).
func nonFIFO(t *testing.T) spec.Trace {
	return newBuilder(t, spec.Complete(2), map[spec.ProcID]int64{"P1": 100, "P2": 50}).
		initiate("P1", 1).
		send("P1", "P2", 30).
		recvAt("P1", "P2", 1).
		recvMarker("P1", "P2").
		recvMarker("P2", "P1").
		trace()
}

func TestBuilderTraces(t *testing.T) {
	for name, tr := range map[string]spec.Trace{"twoBank": twoBank(t), "tokenRing": tokenRing(t), "nonFIFO": nonFIFO(t)} {
		a, err := Analyze(tr)
		require.NoError(t, err, name)
		require.Empty(t, a.Problems, name)
		require.Len(t, a.Cuts, 1, name)
		require.True(t, a.Cuts[0].Complete, name)
	}
}
