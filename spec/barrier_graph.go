package spec

import (
	"errors"
	"fmt"
	"slices"
)

// The kinds of a barrier graph's node: Src, Op and {Snk} of
// tla/BarrierSnapshots.tla (lines 44-46).
const (
	KindSource   = "source"
	KindOperator = "operator"
	KindSink     = "sink"
)

// The barrier protocols, the constant Mode of tla/BarrierSnapshots.tla
// (line 52, "aligned" or "unaligned"), and the Chandy-Lamport marker wave
// run on a dataflow for comparison (not in the spec).
const (
	ModeAligned       = "aligned"
	ModeUnaligned     = "unaligned"
	ModeChandyLamport = "chandy-lamport"
	// ModeAdaptive is tla/BarrierAdaptive.tla: a snapshot starts aligned
	// and an operator whose alignment times out switches it to unaligned
	// (its Timeout step); force-aligned edges never switch.
	ModeAdaptive = "adaptive"
)

// BarrierGraph is a dataflow graph by names: the CONSTANTS of
// tla/BarrierSnapshots.tla (lines 43-52), as a barrier trace's header
// carries them.
type BarrierGraph struct {
	Nodes []BarrierNode `json:"nodes"`
	Edges []BarrierEdge `json:"edges"`
	Cap   int           `json:"cap"`
	Iter  int           `json:"iter"`
	Mode  string        `json:"mode"` // ModeAligned, ModeUnaligned, ModeChandyLamport or ModeAdaptive
	// Successive: the sources inject snapshot after snapshot.
	Successive bool `json:"successive,omitempty"`
}

// BarrierNode is one node: Kind is KindSource, KindOperator or KindSink;
// Budget is how many records a source emits (Budget[s], line 49).
type BarrierNode struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Budget int    `json:"budget,omitempty"`
}

// BarrierEdge is edge <<From, To>>; Back marks a back-edge closing a
// cycle (Back, line 48).
//
// ForceAligned marks an edge of the adaptive mode that must stay aligned
// (ForceAligned, tla/BarrierAdaptive.tla line 47): not a back-edge.
type BarrierEdge struct {
	From         string `json:"from"`
	To           string `json:"to"`
	Back         bool   `json:"back,omitempty"`
	ForceAligned bool   `json:"force_aligned,omitempty"`
}

// Key is the edge's key in a BarrierPart: "from->to".
func (e BarrierEdge) Key() string { return BarrierEdgeKey(e.From, e.To) }

// BarrierEdgeKey is edge <<from, to>>'s key in a BarrierPart: "from->to".
func BarrierEdgeKey(from, to string) string { return from + "->" + to }

// ErrBarrierGraph is the error a graph that breaks the spec's ASSUME
// (lines 62-71) wraps.
var ErrBarrierGraph = errors.New("bad barrier graph")

// BarrierGraphError is a graph that breaks the spec's ASSUME (lines
// 62-71): Constant names the constant of tla/BarrierSnapshots.tla at
// fault (Src, Op, Snk, Edge, Budget, Cap, Iter, Mode; Node for a node of
// no kind, ForceAligned for tla/BarrierAdaptive.tla's), so that a TLC
// model's loader can point at its line. It wraps ErrBarrierGraph.
type BarrierGraphError struct {
	Constant string
	Msg      string
}

func (e *BarrierGraphError) Error() string { return ErrBarrierGraph.Error() + ": " + e.Msg }

// Unwrap is ErrBarrierGraph.
func (e *BarrierGraphError) Unwrap() error { return ErrBarrierGraph }

func barrierGraphErr(constant, format string, a ...any) error {
	return &BarrierGraphError{Constant: constant, Msg: fmt.Sprintf(format, a...)}
}

// kindConstant is the constant that holds a node of kind k.
var kindConstant = map[string]string{KindSource: "Src", KindOperator: "Op", KindSink: "Snk"}

// NodeIndex is the index of node name, -1 if the graph has none.
func (g BarrierGraph) NodeIndex(name string) int {
	return slices.IndexFunc(g.Nodes, func(n BarrierNode) bool { return n.Name == name })
}

// EdgeIndex is the index of edge <<from, to>>, -1 if the graph has none.
func (g BarrierGraph) EdgeIndex(from, to string) int {
	return slices.IndexFunc(g.Edges, func(e BarrierEdge) bool { return e.From == from && e.To == to })
}

// Kind is node name's kind, "" if the graph has no such node.
func (g BarrierGraph) Kind(name string) string {
	if n := g.NodeIndex(name); n >= 0 {
		return g.Nodes[n].Kind
	}
	return ""
}

// Check checks g against the spec's ASSUME (lines 62-71), with one
// generalisation: a source or an operator may have several forward
// outputs (a keyed shuffle); and the chandy-lamport mode is allowed. It
// is the one statement of the ASSUME in Go: the trace readers, the
// dataflow's NewGraph and the model's NewConfig (through CheckStrict)
// call it. It adds one rule the ASSUME leaves out: a graph has a source.
func (g BarrierGraph) Check() error {
	for _, step := range []func() error{g.checkConstants, g.checkNodes, g.checkEdges, g.checkForceAligned, g.checkShapes} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkConstants: Cap \in Nat \ {0}, Iter \in Nat, Mode known (lines 70-71).
func (g BarrierGraph) checkConstants() error {
	switch {
	case g.Cap < 1:
		return barrierGraphErr("Cap", "cap must be at least 1, not %d", g.Cap)
	case g.Iter < 0:
		return barrierGraphErr("Iter", "iter must be a natural number, not %d", g.Iter)
	case g.Mode != ModeAligned && g.Mode != ModeUnaligned && g.Mode != ModeChandyLamport && g.Mode != ModeAdaptive:
		return barrierGraphErr("Mode", "unknown mode %q (want aligned, unaligned, chandy-lamport or adaptive)", g.Mode)
	}
	return nil
}

// checkNodes: names distinct and well formed, kinds known, one sink
// (Snk, line 46), budgets natural and only a source's (line 70).
func (g BarrierGraph) checkNodes() error {
	names, kinds := map[string]bool{}, map[string]int{}
	for _, n := range g.Nodes {
		if err := n.check(names); err != nil {
			return err
		}
		kinds[n.Kind]++
	}
	if kinds[KindSource] == 0 {
		return barrierGraphErr("Src", "no source: the graph needs one")
	}
	if kinds[KindSink] != 1 {
		return barrierGraphErr("Snk", "%d sinks: the graph needs exactly one", kinds[KindSink])
	}
	return nil
}

// constant is the constant that holds n: Src, Op or Snk; Node if n has
// no kind of the spec's.
func (n BarrierNode) constant() string {
	if c, ok := kindConstant[n.Kind]; ok {
		return c
	}
	return "Node"
}

// check checks node n, given the names seen before it (which it adds to).
func (n BarrierNode) check(names map[string]bool) error {
	if ValidateProcID(ProcID(n.Name)) != nil {
		return barrierGraphErr(n.constant(), "node %q: a name is a letter, then up to 63 of [A-Za-z0-9_.-]", n.Name)
	}
	if names[n.Name] {
		return barrierGraphErr(n.constant(), "node %q twice", n.Name)
	}
	names[n.Name] = true
	if n.Kind != KindSource && n.Kind != KindOperator && n.Kind != KindSink {
		return barrierGraphErr("Node", "node %q has unknown kind %q (want source, operator or sink)", n.Name, n.Kind)
	}
	if n.Budget < 0 || n.Budget > 0 && n.Kind != KindSource {
		return barrierGraphErr("Budget", "node %q: only a source has a budget, a natural number", n.Name)
	}
	return nil
}

// checkEdges: Edge \subseteq Node \X Node, no self-loop (line 64), each
// edge once.
func (g BarrierGraph) checkEdges() error {
	seen := map[string]bool{}
	for _, e := range g.Edges {
		switch {
		case g.NodeIndex(e.From) < 0 || g.NodeIndex(e.To) < 0:
			return barrierGraphErr("Edge", "edge %s joins a node the graph does not have", e.Key())
		case e.From == e.To:
			return barrierGraphErr("Edge", "edge %s is a self-loop", e.Key())
		case seen[e.Key()]:
			return barrierGraphErr("Edge", "edge %s twice", e.Key())
		}
		seen[e.Key()] = true
	}
	return nil
}

// checkForceAligned: ForceAligned \subseteq Edge \ Back
// (tla/BarrierAdaptive.tla line 50), in the adaptive mode only.
func (g BarrierGraph) checkForceAligned() error {
	for _, e := range g.Edges {
		switch {
		case !e.ForceAligned:
		case e.Back:
			return barrierGraphErr("ForceAligned", "edge %s is a back-edge: it cannot be force-aligned", e.Key())
		case g.Mode != ModeAdaptive:
			return barrierGraphErr("ForceAligned", "edge %s is force-aligned, but only the adaptive mode has force-aligned edges (mode %s)", e.Key(), g.Mode)
		}
	}
	return nil
}

// degree is what the ASSUME counts of a node's edges: its inputs, those
// that are not back-edges (InF), and its outputs, forward and back.
type degree struct{ in, inF, fwd, back int }

func (g BarrierGraph) degree(name string) degree {
	var d degree
	for _, e := range g.Edges {
		if e.To == name {
			d.in++
			d.inF += boolInt(!e.Back)
		}
		if e.From == name {
			d.fwd += boolInt(!e.Back)
			d.back += boolInt(e.Back)
		}
	}
	return d
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CheckStrict is Check without its generalisation, the ASSUME as TLC
// checks it (lines 62-71): a source has one output (Cardinality(Out(s)) =
// 1, line 66) and an operator one that is not a back-edge
// (Cardinality(Out(n) \ Back) = 1, line 67); the chandy-lamport and
// adaptive modes are the caller's to refuse (the model knows aligned and
// unaligned; tla/BarrierAdaptive.tla runs aligned).
func (g BarrierGraph) CheckStrict() error {
	if err := g.Check(); err != nil {
		return err
	}
	for _, n := range g.Nodes {
		if d := g.degree(n.Name); n.Kind != KindSink && d.fwd != 1 {
			return barrierGraphErr("Edge", "%s %q must have one output that is not a back-edge, not %d (lines 66-67)", n.Kind, n.Name, d.fwd)
		}
	}
	return nil
}

// checkShapes: the sources', operators' and sink's edges (lines 66-69).
func (g BarrierGraph) checkShapes() error {
	for _, n := range g.Nodes {
		if err := g.degree(n.Name).check(n); err != nil {
			return err
		}
	}
	return nil
}

// shapes is, for each kind of node, its line of the ASSUME on its edges
// (lines 66-69) and what a node breaking it is told.
var shapes = map[string]struct {
	ok   func(degree) bool
	want string
}{
	KindSource:   {func(d degree) bool { return d.in == 0 && d.fwd > 0 && d.back == 0 }, "source %q must have no input and an output, not a back-edge"},
	KindOperator: {func(d degree) bool { return d.fwd > 0 && d.back <= 1 && d.inF > 0 }, "operator %q must have an output that is not a back-edge, at most one back-edge out, and an input that is not a back-edge"},
	KindSink:     {func(d degree) bool { return d.fwd+d.back == 0 && d.inF > 0 }, "the sink %q must have no output and an input that is not a back-edge"},
}

// check checks node n's edges, counted in d, against its kind's line of
// the ASSUME.
func (d degree) check(n BarrierNode) error {
	if sh := shapes[n.Kind]; !sh.ok(d) {
		return barrierGraphErr("Edge", sh.want, n.Name)
	}
	return nil
}

// In is In(n) (line 56): the edges into node n, in the graph's order.
func (g BarrierGraph) In(n string) []BarrierEdge {
	return slices.DeleteFunc(slices.Clone(g.Edges), func(e BarrierEdge) bool { return e.To != n })
}

// Out is Out(n) (line 57): the edges out of node n, in the graph's order.
func (g BarrierGraph) Out(n string) []BarrierEdge {
	return slices.DeleteFunc(slices.Clone(g.Edges), func(e BarrierEdge) bool { return e.From != n })
}
