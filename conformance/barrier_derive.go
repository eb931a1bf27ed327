package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// A barrier trace from an outside stream processor need hold only what
// its operators observe: the records and barriers in and out per edge
// (Emit, Process with its record's source and number, RecvBarrier), the
// moments a node snapshots (Inject, or the RecvBarrier that records,
// with a part), the records it persisted (Process logged, a part's
// overtaken by source and number). What the model can derive is
// optional: a record's seq on its edge and its hops round a cycle (seq
// 0), and a part's counts and cuts (a part with no emitted, cnt, out,
// cut_sent and cut_rcvd). DeriveBarrier fills them from the trace alone,
// by tla/BarrierSnapshots.tla's rules (Emit and ProcessV's ghost eseq,
// Route and Fwd's hops, RecordNode's cuts, Restore's reset), before the
// replay; what it derived the report says, since the checks on derived
// values hold by construction.

// BarrierDerived says what DeriveBarrier filled in.
type BarrierDerived struct {
	Seqs, Parts, Overtaken int
	// Unknown lists the records whose seq could not be derived (a record
	// processed off an edge it is not on): the replay names the step.
	Unknown []string
}

// Any reports whether anything was derived.
func (d BarrierDerived) Any() bool { return d.Seqs+d.Parts+d.Overtaken > 0 || len(d.Unknown) > 0 }

// String says what was derived, "" if nothing.
func (d BarrierDerived) String() string {
	if !d.Any() {
		return ""
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{d.Seqs, "record seqs and hops (Message)"}, {d.Parts, "recorded parts' counts and cuts (RecordedState, BarrierConsistentCut)"},
		{d.Overtaken, "overtaken records' seqs (BarrierExactChannelState)"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	s := "derived from the trace (the checks on them hold by construction): " + strings.Join(parts, "; ")
	if len(d.Unknown) > 0 {
		s += "; not derivable: " + strings.Join(d.Unknown, ", ")
	}
	return s
}

// recAt is where a record is: its edge, its hops, its seq there.
type recAt struct {
	edge string
	hops int
	seq  int
}

// recorded is a record in an edge's recorded channel state, as it
// stood on the edge.
type recorded struct {
	k         recKey
	hops, seq int
}

// barrierDeriver is the trace-only state DeriveBarrier keeps.
type barrierDeriver struct {
	g            spec.BarrierGraph
	nsent, nrcvd map[string]int
	emitted, cnt map[string]int
	out          map[recKey]int
	at           map[recKey]recAt
	recq         map[string][]recorded // each edge's recorded channel state
	parts        map[string]*spec.BarrierPart
	d            BarrierDerived
}

// DeriveBarrier returns tr with its missing derivable fields filled in
// (a copy: tr is unchanged), and what it derived.
func DeriveBarrier(tr *spec.BarrierTrace) (*spec.BarrierTrace, BarrierDerived) {
	bd := &barrierDeriver{g: tr.Header.Graph}
	bd.reset()
	out := &spec.BarrierTrace{Header: tr.Header, Lines: tr.Lines, Events: make([]spec.BarrierEvent, len(tr.Events))}
	for i, ev := range tr.Events {
		out.Events[i] = bd.event(ev)
	}
	return out, bd.d
}

// reset empties the state (a run's start).
func (bd *barrierDeriver) reset() {
	bd.nsent, bd.nrcvd, bd.emitted, bd.cnt = map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	bd.out, bd.at, bd.recq, bd.parts = map[recKey]int{}, map[recKey]recAt{}, map[string][]recorded{}, map[string]*spec.BarrierPart{}
}

// event derives ev's missing fields and steps the state.
func (bd *barrierDeriver) event(ev spec.BarrierEvent) spec.BarrierEvent {
	if ev.Part != nil {
		ev.Part = bd.part(ev.Node, ev.Part)
	}
	switch ev.Action {
	case spec.BarrierEmit:
		ev.Rec = bd.emit(ev)
	case spec.BarrierProcess:
		ev.Rec = bd.process(ev)
	case spec.BarrierRestore:
		bd.restore()
	}
	return ev
}

// emit: Emit puts the source's next record on its edge (eseq the
// edge's count of records sent).
func (bd *barrierDeriver) emit(ev spec.BarrierEvent) *spec.BarrierRecord {
	key := spec.BarrierEdgeKey(ev.From, ev.To)
	bd.emitted[ev.Node]++
	bd.nsent[key]++
	r := *ev.Rec
	if r.Seq == 0 {
		r.Seq = bd.nsent[key]
		bd.d.Seqs++
	}
	bd.at[recKey{r.Src, r.I}] = recAt{edge: key, hops: r.Hops, seq: r.Seq}
	return &r
}

// process: ProcessV takes the record off its edge and, at an operator,
// puts it on the edge Route names, a hop further if that is a back-edge
// (Fwd); the sink counts it.
func (bd *barrierDeriver) process(ev spec.BarrierEvent) *spec.BarrierRecord {
	key := spec.BarrierEdgeKey(ev.From, ev.To)
	r := *ev.Rec
	k := recKey{r.Src, r.I}
	if r.Seq == 0 {
		bd.fillSeq(&r, key)
	}
	bd.nrcvd[key]++
	bd.cnt[ev.Node]++
	if ev.Logged {
		bd.recq[key] = append(bd.recq[key], recorded{k, r.Hops, r.Seq})
	}
	delete(bd.at, k)
	if bd.g.Kind(ev.Node) == spec.KindSink {
		bd.out[k]++
		return &r
	}
	bd.forward(ev.Node, k, r.Hops)
	return &r
}

// fillSeq gives record r, processed off edge key with no seq, the seq
// and hops it has there; a record the state does not hold there is
// noted as unknown.
func (bd *barrierDeriver) fillSeq(r *spec.BarrierRecord, key string) {
	if a, ok := bd.at[recKey{r.Src, r.I}]; ok && a.edge == key {
		r.Seq, r.Hops = a.seq, a.hops
		bd.d.Seqs++
		return
	}
	bd.d.Unknown = append(bd.d.Unknown, fmt.Sprintf("<<%s, %d>> processed off %s, where it is not", r.Src, r.I, key))
}

// forward puts record k, processed at operator n after hops trips round,
// on the edge Route names (a hop further on a back-edge), with the next
// seq of that edge.
func (bd *barrierDeriver) forward(n string, k recKey, hops int) {
	t, back := bd.route(n, hops)
	bd.nsent[t]++
	if back {
		hops++
	}
	bd.at[k] = recAt{edge: t, hops: hops, seq: bd.nsent[t]}
}

// route mirrors Route(n, r) (tla/BarrierSnapshots.tla lines 86-88): the
// back-edge while the record has gone round fewer than Iter times, else
// the forward output; and whether it is the back-edge.
func (bd *barrierDeriver) route(n string, hops int) (string, bool) {
	var fwd string
	for _, e := range bd.g.Edges {
		switch {
		case e.From != n:
		case e.Back && hops < bd.g.Iter:
			return e.Key(), true
		case !e.Back:
			fwd = e.Key()
		}
	}
	return fwd, false
}

// part fills a stripped part with RecordNode's values (lines 211-218):
// the source's emitted, the node's count, the sink's output, the cuts
// of its outputs and inputs; and the overtaken records' seqs. A part
// given whole is kept as it is.
func (bd *barrierDeriver) part(n string, given *spec.BarrierPart) *spec.BarrierPart {
	p := *given
	if p.Emitted == 0 && p.Cnt == 0 && p.Out == nil && p.CutSent == nil && p.CutRcvd == nil {
		bd.fillCounts(n, &p)
		bd.d.Parts++
	}
	p.Overtaken = bd.overtaken(p.Overtaken)
	bd.parts[n] = &p
	return &p
}

// fillCounts sets p's counts and cuts from the state.
func (bd *barrierDeriver) fillCounts(n string, p *spec.BarrierPart) {
	switch bd.g.Kind(n) {
	case spec.KindSource:
		p.Emitted = bd.emitted[n]
	case spec.KindSink:
		p.Cnt = bd.cnt[n]
		for k, c := range bd.out {
			p.Out = append(p.Out, spec.BarrierCount{Src: k.Src, I: k.I, N: c})
		}
		spec.SortBarrierCounts(p.Out)
	default:
		p.Cnt = bd.cnt[n]
	}
	bd.fillCuts(n, p)
}

// fillCuts sets p's cuts from the state: the records sent on each of
// node n's outputs and received on each of its inputs.
func (bd *barrierDeriver) fillCuts(n string, p *spec.BarrierPart) {
	for _, e := range bd.g.Edges {
		if e.From == n {
			setCut(&p.CutSent, e.Key(), bd.nsent[e.Key()])
		}
		if e.To == n {
			setCut(&p.CutRcvd, e.Key(), bd.nrcvd[e.Key()])
		}
	}
}

// setCut sets (*m)[key] = v, making the map.
func setCut(m *map[string]int, key string, v int) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key] = v
}

// overtaken fills the seqs and hops of the records a barrier overtook
// (the records on the edge then) and adds them to the edge's recorded
// channel state.
func (bd *barrierDeriver) overtaken(ov map[string][]spec.BarrierRecord) map[string][]spec.BarrierRecord {
	if ov == nil {
		return nil
	}
	out := make(map[string][]spec.BarrierRecord, len(ov))
	for _, key := range slices.Sorted(maps.Keys(ov)) {
		for _, r := range ov[key] {
			k := recKey{r.Src, r.I}
			if a, ok := bd.at[k]; ok && a.edge == key && r.Seq == 0 {
				r.Seq, r.Hops = a.seq, a.hops
				bd.d.Overtaken++
			}
			out[key] = append(out[key], r)
			bd.recq[key] = append(bd.recq[key], recorded{k, r.Hops, r.Seq})
		}
	}
	return out
}

// restore mirrors Restore (lines 265-275): every count and cut back to
// the recorded parts', the edges holding their recorded channel state.
func (bd *barrierDeriver) restore() {
	parts, recq := bd.parts, bd.recq
	bd.reset()
	for n, p := range parts {
		bd.emitted[n], bd.cnt[n] = p.Emitted, p.Cnt
		maps.Copy(bd.nsent, p.CutSent)
		maps.Copy(bd.nrcvd, p.CutRcvd)
		for _, c := range p.Out {
			bd.out[recKey{c.Src, c.I}] = c.N
		}
	}
	for key, rs := range recq {
		for _, r := range rs {
			bd.at[r.k] = recAt{edge: key, hops: r.hops, seq: r.seq}
		}
	}
}
