package dataflow

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/markerwave/markerwave/spec"
)

// A barrier trace (spec.ReadBarrierTrace; traces/README.md, "Barrier
// traces") is written here: a header with the graph, then one event a
// line, one per step of a node or of the whole cluster (Restore), in the
// order the steps were taken. The vocabulary and the reader are spec's.

// Trace returns g by names, for a trace's header.
func (g *Graph) Trace() spec.BarrierGraph {
	tg := spec.BarrierGraph{Cap: g.Cap, Iter: g.Iter, Mode: g.Mode.String(), Successive: g.Successive}
	for _, n := range g.Nodes {
		tg.Nodes = append(tg.Nodes, spec.BarrierNode{Name: n.Name, Kind: n.Kind.String(), Budget: n.Budget})
	}
	for _, e := range g.Edges {
		tg.Edges = append(tg.Edges, spec.BarrierEdge{From: g.Nodes[e.From].Name, To: g.Nodes[e.To].Name, Back: e.Back, ForceAligned: e.ForceAligned})
	}
	return tg
}

func (k Kind) String() string {
	switch k {
	case Source:
		return spec.KindSource
	case Operator:
		return spec.KindOperator
	case Sink:
		return spec.KindSink
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Tracer writes a barrier trace: the header when created, then one line
// per step of every node it is attached to (Attach), in the order the
// steps are taken. A node's step reports to it before it returns, under
// whatever lock the caller holds for the step, so a runtime that locks a
// record's sender and receiver for a hand-over writes a causal order.
// Without a tracer a step costs one nil test.
type Tracer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
	// logLen is the length of each input's log of each node attached,
	// when it last took a step: a Process that lengthens it logged its
	// record (Logged says what the node did, not what it should have).
	logLen map[*Node][]int
}

// NewTracer writes h's header for g to w (h.Format and h.Graph are set
// from g) and returns a tracer writing g's steps after it.
func NewTracer(w io.Writer, g *Graph, h spec.BarrierHeader) (*Tracer, error) {
	t := &Tracer{w: bufio.NewWriter(w)}
	h.Format, h.Graph = spec.BarrierTraceFormat, g.Trace()
	t.line(h)
	return t, t.Flush()
}

// Attach makes every node of c report its steps to t.
func (t *Tracer) Attach(c *Cluster) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.logLen == nil {
		t.logLen = map[*Node][]int{}
	}
	for _, n := range c.Nodes {
		n.tracer = t
		lens := make([]int, len(n.logged))
		for e, l := range n.logged {
			lens[e] = len(l)
		}
		t.logLen[n] = lens
	}
}

// step writes node n's step st.
func (t *Tracer) step(n *Node, st Step, e int, it Item) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line(n.traceEvent(st, e, it, t.logLen[n]))
}

// Restore writes the Restore step (the whole cluster restarted from its
// complete snapshot) and attaches t to the restored cluster c.
func (t *Tracer) Restore(c *Cluster) {
	t.Write(spec.BarrierEvent{Action: spec.BarrierRestore})
	t.Attach(c)
}

// Write writes event ev.
func (t *Tracer) Write(ev spec.BarrierEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line(ev)
}

func (t *Tracer) line(v any) {
	if t.err != nil {
		return
	}
	enc := json.NewEncoder(t.w)
	enc.SetEscapeHTML(false) // "X->K", not "X-\u003eK"
	t.err = enc.Encode(v)
}

// Flush writes what is buffered; it returns the first error writing
// met.
func (t *Tracer) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// observe reports step st of node n, which put record it on output e
// (Emit) or took item it off input e, to n's tracer, if any; it returns
// st.
func (n *Node) observe(st Step, e int, it Item) Step {
	if n.tracer != nil {
		n.tracer.step(n, st, e, it)
	}
	return st
}

// traceEvent is step st as a trace event; logLen is the length of each
// input's log before the step, which it updates.
func (n *Node) traceEvent(st Step, e int, it Item, logLen []int) spec.BarrierEvent {
	g := n.g
	ev := spec.BarrierEvent{Action: st.Action.String(), Node: g.Nodes[n.id].Name}
	if e >= 0 {
		ev.From, ev.To = g.Nodes[g.Edges[e].From].Name, g.Nodes[g.Edges[e].To].Name
	}
	if !it.Barrier {
		r := g.traceRecord(it)
		ev.Rec = &r
	}
	if st.Action == ActProcess { // logged: the step lengthened e's log
		ev.Logged = len(n.logged[e]) > logLen[e]
		logLen[e] = len(n.logged[e])
	}
	if st.Recorded || st.Action == ActTimeoutOut { // TimeoutOut: the part it changed
		ev.Part = g.tracePart(n.part)
	}
	return ev
}

func (g *Graph) traceRecord(it Item) spec.BarrierRecord {
	return spec.BarrierRecord{Src: g.Nodes[it.Src].Name, I: it.I, Hops: it.Hops, Seq: it.Seq, Val: it.Val}
}

func (g *Graph) edgeKey(e int) string { return g.edgeKeyOf(g.Edges[e]) }

// tracePart is part p by names.
func (g *Graph) tracePart(p *Part) *spec.BarrierPart {
	tp := &spec.BarrierPart{Emitted: p.Emitted, Cnt: p.Cnt, CutSent: map[string]int{}, CutRcvd: map[string]int{}}
	if p.Type != TypeNone {
		tp.Type = p.Type.String()
	}
	for k, c := range p.Out.Map() {
		if c > 0 {
			tp.Out = append(tp.Out, spec.BarrierCount{Src: g.Nodes[k.Src].Name, I: k.I, N: c})
		}
	}
	spec.SortBarrierCounts(tp.Out)
	for e, s := range p.CutSent {
		tp.CutSent[g.edgeKey(e)] = s
	}
	for e, s := range p.CutRcvd {
		tp.CutRcvd[g.edgeKey(e)] = s
	}
	tp.Overtaken = g.traceOvertaken(p.Overtaken)
	return tp
}

// traceOvertaken is a part's overtaken records by edge key (nil if none).
func (g *Graph) traceOvertaken(over map[int][]Item) map[string][]spec.BarrierRecord {
	var to map[string][]spec.BarrierRecord
	for e, its := range over {
		if to == nil {
			to = map[string][]spec.BarrierRecord{}
		}
		for _, it := range its {
			to[g.edgeKey(e)] = append(to[g.edgeKey(e)], g.traceRecord(it))
		}
	}
	return to
}

// NodeIndex is the index of node name, -1 if the graph has none.
func (g *Graph) NodeIndex(name string) int {
	return slices.IndexFunc(g.Nodes, func(n NodeSpec) bool { return n.Name == name })
}

// EdgeIndex is the index of edge <<from, to>>, -1 if the graph has none.
func (g *Graph) EdgeIndex(from, to string) int {
	a, b := g.NodeIndex(from), g.NodeIndex(to)
	return slices.IndexFunc(g.Edges, func(e EdgeSpec) bool { return e.From == a && e.To == b })
}

func (g *Graph) edgeKeyOf(e EdgeSpec) string {
	return spec.BarrierEdgeKey(g.Nodes[e.From].Name, g.Nodes[e.To].Name)
}
