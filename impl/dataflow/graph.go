package dataflow

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// Mode is the barrier protocol a cluster runs: the constant Mode of
// tla/BarrierSnapshots.tla (line 52).
type Mode uint8

// The protocols.
const (
	// Aligned is ABS: an operator blocks each input whose barrier has
	// arrived until every input that is not a back-edge has delivered its
	// barrier, records its state, and appends its barrier to every output.
	// Records taken off a back-edge between then and its barrier are
	// logged (the cyclic variant).
	Aligned Mode = iota
	// Unaligned: an operator records on its first barrier, the barrier
	// overtakes its queued output, which is persisted as channel state, and
	// records taken off the other inputs before their barrier are logged.
	Unaligned
	// ChandyLamport is the marker wave of tla/ChandyLamport.tla on the
	// dataflow, for comparison: an operator records on its first barrier
	// like Unaligned, but its barrier goes behind its queued output (FIFO,
	// nothing overtaken), and the records it takes off each other input
	// before that input's barrier are the channel state. Not in
	// tla/BarrierSnapshots.tla: the lockstep covers Aligned and Unaligned
	// only; the restore-and-continue tests cover all three.
	ChandyLamport
	// Adaptive is tla/BarrierAdaptive.tla: a snapshot starts aligned,
	// and an operator whose alignment times out (Timeout, told by its
	// runtime's timer) switches it to unaligned; an operator feeding a
	// force-aligned edge (EdgeSpec.ForceAligned) never switches.
	Adaptive
)

// modeNames names each Mode, as the trace header spells it.
var modeNames = [...]string{Aligned: spec.ModeAligned, Unaligned: spec.ModeUnaligned, ChandyLamport: spec.ModeChandyLamport, Adaptive: spec.ModeAdaptive}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Kind says whether a node is a source, an operator or the sink.
type Kind uint8

// The kinds of node: Src, Op and {Snk} of the spec (lines 44-46).
const (
	Source Kind = iota
	Operator
	Sink
)

// NodeSpec is one node of a Graph. Budget is how many records a source
// emits (Budget[s], line 49); 0 for the other nodes.
type NodeSpec struct {
	Name   string
	Kind   Kind
	Budget int
}

// EdgeSpec is one edge of a Graph: From sends to To. Back marks a
// back-edge closing a cycle (Back, line 48): unbounded, and the records
// on it are on their way round the cycle.
//
// ForceAligned marks an edge that must stay aligned (ForceAligned,
// tla/BarrierAdaptive.tla line 47): in the adaptive mode its sender
// never switches, and its receiver only once its barrier arrived.
type EdgeSpec struct {
	From, To     int
	Back         bool
	ForceAligned bool
}

// Graph is a dataflow graph, the same at every node: the CONSTANTS of
// tla/BarrierSnapshots.tla (lines 43-52), with nodes and edges indexed.
type Graph struct {
	Nodes []NodeSpec
	Edges []EdgeSpec
	Cap   int  // capacity of a buffer that is not a back-edge's
	Iter  int  // how many times a record goes round a cycle
	Mode  Mode // the protocol
	// Successive lets each source inject snapshot after snapshot (ids 1,
	// 2, ...), each a repetition of the spec's one snapshot; false: each
	// source injects once, as in the spec.
	Successive bool

	in, out [][]int // edge indexes of In(n), Out(n)
	fwdOut  [][]int // the forward outputs: FwdOut(n) when there is one
	backOut []int   // BackOut(n)'s edge, -1 if none
}

// ErrGraph is the error NewGraph wraps when a graph breaks the spec's
// ASSUME (lines 62-71): spec's, which states the ASSUME once.
var ErrGraph = spec.ErrBarrierGraph

func graphErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrGraph, fmt.Sprintf(format, a...))
}

// NewGraph checks g against the spec's ASSUME (lines 62-71), as
// spec.BarrierGraph.Check states it, and indexes it; with one
// generalisation: a source or an operator may have several forward
// outputs (a keyed shuffle), its Logic choosing one per record. The
// protocol never looks at routes: barriers go on every output. It copies
// nothing: do not change g after.
func NewGraph(g Graph) (*Graph, error) {
	if err := g.checkEnds(); err != nil {
		return nil, err
	}
	if err := g.Trace().Check(); err != nil {
		return nil, err
	}
	g.index()
	return &g, nil
}

// checkEnds checks that every edge joins two of the graph's nodes, by
// index (Edge \subseteq Node \X Node, line 64), so that the graph has
// names for spec's check.
func (g *Graph) checkEnds() error {
	n := len(g.Nodes)
	for i, e := range g.Edges {
		if e.From < 0 || e.From >= n || e.To < 0 || e.To >= n {
			return graphErr("edge %d joins a node the graph does not have", i)
		}
	}
	return nil
}

// index indexes In(n) and Out(n) (lines 56-57), and splits Out(n) into
// FwdOut(n) and BackOut(n) (lines 59-60): at most one back-edge out, as
// the ASSUME says (line 67).
func (g *Graph) index() {
	n := len(g.Nodes)
	g.in, g.out = make([][]int, n), make([][]int, n)
	g.fwdOut, g.backOut = make([][]int, n), make([]int, n)
	for i, e := range g.Edges {
		g.out[e.From] = append(g.out[e.From], i)
		g.in[e.To] = append(g.in[e.To], i)
	}
	for v := range n {
		g.backOut[v] = -1
		for _, e := range g.out[v] {
			if g.Edges[e].Back {
				g.backOut[v] = e
			} else {
				g.fwdOut[v] = append(g.fwdOut[v], e)
			}
		}
	}
}

// In is In(n) (line 56): the edges into n.
func (g *Graph) In(n int) []int { return g.in[n] }

// Out is Out(n) (line 57): the edges out of n.
func (g *Graph) Out(n int) []int { return g.out[n] }

// EdgeName renders edge e as <<"From", "To">>, as TLC prints it.
func (g *Graph) EdgeName(e int) string {
	return fmt.Sprintf("<<%q, %q>>", g.Nodes[g.Edges[e].From].Name, g.Nodes[g.Edges[e].To].Name)
}

// Route mirrors Route(n, r) (lines 86-88): the edge node n sends a record
// that went round a cycle hops times on. port picks one of several
// forward outputs (a keyed shuffle: the Logic's Route), in the order of
// Out(n); the spec's graphs have one, port 0.
func (g *Graph) Route(n, hops, port int) int {
	if g.backOut[n] >= 0 && hops < g.Iter {
		return g.backOut[n]
	}
	return g.fwdOut[n][port]
}

// Ports is how many forward outputs node n has (1 in the spec's graphs).
func (g *Graph) Ports(n int) int { return len(g.fwdOut[n]) }

// room mirrors Room(e) (line 131), given the length of e's queue.
func (g *Graph) room(e, queued int) bool {
	return g.Edges[e].Back || queued < g.Cap
}

// aligned reports InF(n) \subseteq b (lines 58, 252): every input of n
// that is not a back-edge has delivered its barrier.
func (g *Graph) aligned(n int, bar []bool) bool {
	for _, d := range g.in[n] {
		if !g.Edges[d].Back && !bar[d] {
			return false
		}
	}
	return true
}

// aligns reports whether the graph's protocol starts a snapshot aligned
// (Mode = "aligned": ABS, and the adaptive mode, tla/BarrierAdaptive.tla
// line 52).
func (g *Graph) aligns() bool { return g.Mode == Aligned || g.Mode == Adaptive }

// feedsForceAligned reports Out(n) \cap ForceAligned # {}
// (tla/BarrierAdaptive.tla line 112).
func (g *Graph) feedsForceAligned(n int) bool {
	for _, e := range g.out[n] {
		if g.Edges[e].ForceAligned {
			return true
		}
	}
	return false
}

// forceAlignedIn reports In(n) \cap ForceAligned \subseteq b
// (tla/BarrierAdaptive.tla line 113): every force-aligned input of n has
// delivered its barrier.
func (g *Graph) forceAlignedIn(n int, bar []bool) bool {
	for _, e := range g.in[n] {
		if g.Edges[e].ForceAligned && !bar[e] {
			return false
		}
	}
	return true
}

// Successively returns g with Successive set (g unchanged): the same
// graph, its sources injecting snapshot after snapshot.
func (g *Graph) Successively() *Graph {
	s := *g
	s.Successive = true
	return &s
}
