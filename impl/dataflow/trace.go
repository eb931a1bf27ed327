package dataflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/markerwave/markerwave/spec"
)

// A barrier trace is a run of the dataflow core in JSON Lines
// (traces/README.md, "Barrier traces"; traces/trace.schema.json): a
// header with the graph, then one event a line, one per step of a node
// (Emit, Inject, Process, RecvBarrier, named as the actions of
// tla/BarrierSnapshots.tla) or of the whole cluster (Restore), in an
// order consistent with causality: the order the steps were taken in.
// A node's part of the snapshot is on the step it recorded in (Inject,
// or the RecvBarrier that recorded), and the records it logged on its
// inputs are the Process steps marked logged.

// TraceFormat is the format tag of a barrier trace's header.
const TraceFormat = "markerwave-barrier-trace/1"

// TraceHeader is a barrier trace's first line.
type TraceHeader struct {
	Format string     `json:"format"`
	Graph  TraceGraph `json:"graph"`
	// Drained claims the run ended with every buffer empty and every
	// source's budget emitted.
	Drained bool   `json:"drained,omitempty"`
	Source  string `json:"source,omitempty"`
	Note    string `json:"note,omitempty"`
}

// TraceGraph is a Graph by names.
type TraceGraph struct {
	Nodes []TraceNode `json:"nodes"`
	Edges []TraceEdge `json:"edges"`
	Cap   int         `json:"cap"`
	Iter  int         `json:"iter"`
	Mode  string      `json:"mode"` // Mode.String()
	// Successive: the sources inject snapshot after snapshot
	// (Graph.Successive).
	Successive bool `json:"successive,omitempty"`
}

// TraceNode is a NodeSpec by names: Kind is "source", "operator" or
// "sink".
type TraceNode struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Budget int    `json:"budget,omitempty"`
}

// TraceEdge is an EdgeSpec by names.
type TraceEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Back bool   `json:"back,omitempty"`
}

// TraceRecord is a record (an Item that is not a barrier): its source,
// its number there, its hops round a cycle, its sequence number on the
// edge it travels, and its payload (not checked).
type TraceRecord struct {
	Src  string `json:"src"`
	I    int    `json:"i"`
	Hops int    `json:"hops,omitempty"`
	Seq  int    `json:"seq"`
	Val  int64  `json:"val,omitempty"`
}

// TraceCount is how many times the sink received record <<Src, I>>.
type TraceCount struct {
	Src string `json:"src"`
	I   int    `json:"i"`
	N   int    `json:"n"`
}

// TracePart is a node's Part when it recorded, by names: its counts (a
// source's emitted, another node's processed; the sink's output), the
// sequence numbers of its outputs and inputs at its cut (keyed "A->B"),
// and the records its barrier overtook on each output (unaligned). The
// Logic's state is not in the trace.
type TracePart struct {
	Emitted   int                      `json:"emitted,omitempty"`
	Cnt       int                      `json:"cnt,omitempty"`
	Out       []TraceCount             `json:"out,omitempty"`
	CutSent   map[string]int           `json:"cut_sent,omitempty"`
	CutRcvd   map[string]int           `json:"cut_rcvd,omitempty"`
	Overtaken map[string][]TraceRecord `json:"overtaken,omitempty"`
}

// The actions of a barrier trace's events.
const (
	TraceEmit        = "Emit"
	TraceInject      = "Inject"
	TraceProcess     = "Process"
	TraceRecvBarrier = "RecvBarrier"
	TraceRestore     = "Restore"
)

// TraceEvent is one step: Action, the node that took it (none for
// Restore), the edge <<From, To>> it put its record on (Emit) or took
// its item off (Process, RecvBarrier), the record (Emit, Process),
// Logged when the record joined the edge's channel state (Process), and
// the node's part when it recorded in this step (Inject, RecvBarrier).
type TraceEvent struct {
	Action string       `json:"action"`
	Node   string       `json:"node,omitempty"`
	From   string       `json:"from,omitempty"`
	To     string       `json:"to,omitempty"`
	Rec    *TraceRecord `json:"rec,omitempty"`
	Logged bool         `json:"logged,omitempty"`
	Part   *TracePart   `json:"part,omitempty"`
}

// EdgeKey is edge <<from, to>>'s key in a TracePart: "from->to".
func EdgeKey(from, to string) string { return from + "->" + to }

// Trace returns g by names, for a trace's header.
func (g *Graph) Trace() TraceGraph {
	tg := TraceGraph{Cap: g.Cap, Iter: g.Iter, Mode: g.Mode.String(), Successive: g.Successive}
	for _, n := range g.Nodes {
		tg.Nodes = append(tg.Nodes, TraceNode{Name: n.Name, Kind: n.Kind.String(), Budget: n.Budget})
	}
	for _, e := range g.Edges {
		tg.Edges = append(tg.Edges, TraceEdge{From: g.Nodes[e.From].Name, To: g.Nodes[e.To].Name, Back: e.Back})
	}
	return tg
}

func (k Kind) String() string {
	switch k {
	case Source:
		return "source"
	case Operator:
		return "operator"
	case Sink:
		return "sink"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Graph checks tg (NewGraph) and returns it indexed.
func (tg TraceGraph) Graph() (*Graph, error) {
	g := Graph{Cap: tg.Cap, Iter: tg.Iter, Successive: tg.Successive}
	modes := map[string]Mode{Aligned.String(): Aligned, Unaligned.String(): Unaligned, ChandyLamport.String(): ChandyLamport}
	m, ok := modes[tg.Mode]
	if !ok {
		return nil, graphErr("unknown mode %q (want aligned, unaligned or chandy-lamport)", tg.Mode)
	}
	g.Mode = m
	kinds := map[string]Kind{"source": Source, "operator": Operator, "sink": Sink}
	idx := map[string]int{}
	for _, n := range tg.Nodes {
		if err := spec.ValidateProcID(spec.ProcID(n.Name)); err != nil {
			return nil, graphErr("node %q: a name is a letter, then up to 63 of [A-Za-z0-9_.-]", n.Name)
		}
		k, ok := kinds[n.Kind]
		if !ok {
			return nil, graphErr("node %q has unknown kind %q (want source, operator or sink)", n.Name, n.Kind)
		}
		idx[n.Name] = len(g.Nodes)
		g.Nodes = append(g.Nodes, NodeSpec{Name: n.Name, Kind: k, Budget: n.Budget})
	}
	for _, e := range tg.Edges {
		a, okA := idx[e.From]
		b, okB := idx[e.To]
		if !okA || !okB {
			return nil, graphErr("edge %s joins a node the graph does not have", EdgeKey(e.From, e.To))
		}
		g.Edges = append(g.Edges, EdgeSpec{From: a, To: b, Back: e.Back})
	}
	return NewGraph(g)
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
func NewTracer(w io.Writer, g *Graph, h TraceHeader) (*Tracer, error) {
	t := &Tracer{w: bufio.NewWriter(w)}
	h.Format, h.Graph = TraceFormat, g.Trace()
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
	t.Write(TraceEvent{Action: TraceRestore})
	t.Attach(c)
}

// Write writes event ev.
func (t *Tracer) Write(ev TraceEvent) {
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
func (n *Node) traceEvent(st Step, e int, it Item, logLen []int) TraceEvent {
	g := n.g
	ev := TraceEvent{Action: st.Action.String(), Node: g.Nodes[n.id].Name}
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
	if st.Recorded {
		ev.Part = g.tracePart(n.part)
	}
	return ev
}

func (g *Graph) traceRecord(it Item) TraceRecord {
	return TraceRecord{Src: g.Nodes[it.Src].Name, I: it.I, Hops: it.Hops, Seq: it.Seq, Val: it.Val}
}

func (g *Graph) edgeKey(e int) string { return g.edgeKeyOf(g.Edges[e]) }

// tracePart is part p by names.
func (g *Graph) tracePart(p *Part) *TracePart {
	tp := &TracePart{Emitted: p.Emitted, Cnt: p.Cnt, CutSent: map[string]int{}, CutRcvd: map[string]int{}}
	for k, c := range p.Out {
		if c > 0 {
			tp.Out = append(tp.Out, TraceCount{Src: g.Nodes[k.Src].Name, I: k.I, N: c})
		}
	}
	SortCounts(tp.Out)
	for e, s := range p.CutSent {
		tp.CutSent[g.edgeKey(e)] = s
	}
	for e, s := range p.CutRcvd {
		tp.CutRcvd[g.edgeKey(e)] = s
	}
	for e, its := range p.Overtaken {
		if tp.Overtaken == nil {
			tp.Overtaken = map[string][]TraceRecord{}
		}
		for _, it := range its {
			tp.Overtaken[g.edgeKey(e)] = append(tp.Overtaken[g.edgeKey(e)], g.traceRecord(it))
		}
	}
	return tp
}

// SortCounts puts a sink's output in order: by source, then number.
func SortCounts(cs []TraceCount) {
	slices.SortFunc(cs, func(a, b TraceCount) int {
		if a.Src != b.Src {
			if a.Src < b.Src {
				return -1
			}
			return 1
		}
		return a.I - b.I
	})
}

// Trace is a barrier trace as read: its header, its graph, its events
// and the file line of each.
type Trace struct {
	Header TraceHeader
	Graph  *Graph
	Events []TraceEvent
	Lines  []int
}

// IsTrace reports whether first, a trace's first line, is a barrier
// trace's header.
func IsTrace(first []byte) bool {
	var h struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(first, &h) == nil && h.Format == TraceFormat
}

// ReadTrace reads a barrier trace strictly (spec.DecodeStrict): a header
// of this format with a graph NewGraph accepts, then events naming known
// actions, nodes and edges. What the events do is the audit's to judge.
// An error names the line.
func ReadTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), spec.MaxTraceLine)
	tr := &Trace{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if tr.Graph == nil {
			if err := tr.readHeader(b); err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			continue
		}
		var ev TraceEvent
		if err := spec.DecodeStrict(b, &ev); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if err := tr.checkEvent(ev); err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", line, ev.Action, err)
		}
		tr.Events = append(tr.Events, ev)
		tr.Lines = append(tr.Lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if tr.Graph == nil {
		return nil, fmt.Errorf("no header line")
	}
	return tr, nil
}

func (tr *Trace) readHeader(b []byte) error {
	if err := spec.DecodeStrict(b, &tr.Header); err != nil {
		return err
	}
	if tr.Header.Format != TraceFormat {
		return fmt.Errorf("format %q, want %q", tr.Header.Format, TraceFormat)
	}
	g, err := tr.Header.Graph.Graph()
	if err != nil {
		return err
	}
	tr.Graph = g
	return nil
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

// checkEvent checks that ev names a known action, its node, an edge of
// that node, and records from sources.
func (tr *Trace) checkEvent(ev TraceEvent) error {
	g := tr.Graph
	if ev.Action == TraceRestore {
		if ev != (TraceEvent{Action: TraceRestore}) {
			return fmt.Errorf("a Restore has no other field")
		}
		return nil
	}
	n := g.NodeIndex(ev.Node)
	if n < 0 {
		return fmt.Errorf("node %q is not in the graph", ev.Node)
	}
	edge := ev.From != "" || ev.To != ""
	switch ev.Action {
	case TraceEmit, TraceInject:
		if g.Nodes[n].Kind != Source {
			return fmt.Errorf("%q is not a source", ev.Node)
		}
		if ev.Action == TraceEmit && (!edge || ev.From != ev.Node || ev.Rec == nil || ev.Part != nil) {
			return fmt.Errorf("an Emit has its record and the edge from its node it puts it on, and no part")
		}
		if ev.Action == TraceInject && (edge || ev.Rec != nil || ev.Part == nil) {
			return fmt.Errorf("an Inject has no edge and no record, and has its node's part")
		}
	case TraceProcess, TraceRecvBarrier:
		if ev.To != ev.Node {
			return fmt.Errorf("the edge %s does not end at the node %q", EdgeKey(ev.From, ev.To), ev.Node)
		}
		if ev.Action == TraceProcess && (ev.Rec == nil || ev.Part != nil) {
			return fmt.Errorf("a Process has a record and no part")
		}
		if ev.Action == TraceRecvBarrier && ev.Rec != nil {
			return fmt.Errorf("a RecvBarrier has no record")
		}
	default:
		return fmt.Errorf("unknown action (want Emit, Inject, Process, RecvBarrier or Restore)")
	}
	if edge && g.EdgeIndex(ev.From, ev.To) < 0 {
		return fmt.Errorf("the graph has no edge %s", EdgeKey(ev.From, ev.To))
	}
	if ev.Logged && ev.Action != TraceProcess {
		return fmt.Errorf("only a Process logs a record")
	}
	if ev.Rec != nil {
		if err := g.checkRecord(*ev.Rec); err != nil {
			return err
		}
	}
	if ev.Part != nil {
		return g.checkTracePart(n, ev.Part)
	}
	return nil
}

// checkRecord checks that r comes from a source of g, numbered from 1
// there and on its edge, with hops a natural number.
func (g *Graph) checkRecord(r TraceRecord) error {
	if s := g.NodeIndex(r.Src); s < 0 || g.Nodes[s].Kind != Source {
		return fmt.Errorf("the record's source %q is not a source of the graph", r.Src)
	}
	if r.I < 1 || r.Seq < 1 || r.Hops < 0 {
		return fmt.Errorf("the record <<%s, %d>> (hops %d, seq %d): i and seq count from 1, hops from 0", r.Src, r.I, r.Hops, r.Seq)
	}
	return nil
}

// checkTracePart checks that node n's part p has natural counts, cut
// sequence numbers for n's outputs and inputs only, overtaken records
// on its outputs only, and an output of records from the sources.
func (g *Graph) checkTracePart(n int, p *TracePart) error {
	if p.Emitted < 0 || p.Cnt < 0 {
		return fmt.Errorf("the part's counts must be natural numbers")
	}
	ends := func(key string, out bool) bool {
		for _, e := range g.Edges {
			if g.edgeKeyOf(e) == key && (out && e.From == n || !out && e.To == n) {
				return true
			}
		}
		return false
	}
	for key, s := range p.CutSent {
		if !ends(key, true) || s < 0 {
			return fmt.Errorf("cut_sent[%q]: not an output of %s, or negative", key, g.Nodes[n].Name)
		}
	}
	for key, s := range p.CutRcvd {
		if !ends(key, false) || s < 0 {
			return fmt.Errorf("cut_rcvd[%q]: not an input of %s, or negative", key, g.Nodes[n].Name)
		}
	}
	for key, rs := range p.Overtaken {
		if !ends(key, true) {
			return fmt.Errorf("overtaken[%q]: not an output of %s", key, g.Nodes[n].Name)
		}
		for _, r := range rs {
			if err := g.checkRecord(r); err != nil {
				return fmt.Errorf("overtaken[%q]: %w", key, err)
			}
		}
	}
	for _, c := range p.Out {
		if err := g.checkRecord(TraceRecord{Src: c.Src, I: c.I, Seq: 1}); err != nil || c.N < 1 {
			return fmt.Errorf("out: <<%s, %d>> %d times: a record of a source, at least once", c.Src, c.I, c.N)
		}
	}
	return nil
}

func (g *Graph) edgeKeyOf(e EdgeSpec) string {
	return EdgeKey(g.Nodes[e.From].Name, g.Nodes[e.To].Name)
}
