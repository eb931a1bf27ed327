package barrier

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Mode mirrors the constant Mode of tla/BarrierSnapshots.tla (line 52):
// which protocol every operator runs.
type Mode uint8

// The protocols.
const (
	// Aligned: ABS. An operator blocks each input whose barrier has
	// arrived until every input that is not a back-edge has delivered its
	// barrier, records, and appends its barrier to every output.
	Aligned Mode = iota
	// Unaligned: an operator records on its first barrier, its barrier
	// overtakes its queued output, and the overtaken records join the
	// channel state.
	Unaligned
)

func (m Mode) String() string {
	if m == Aligned {
		return "aligned"
	}
	return "unaligned"
}

// Variant is the specification a model checks: Spec or one of the broken
// protocols of tla/BarrierSnapshots.tla (lines 297-308).
type Variant string

// The specifications of tla/BarrierSnapshots.tla.
const (
	VariantSpec      Variant = "Spec"          // line 297
	VariantNoBlock   Variant = "SpecNoBlock"   // line 301: alignment without blocking
	VariantNoLog     Variant = "SpecNoLog"     // line 304: no back-edge logging
	VariantNoPersist Variant = "SpecNoPersist" // line 306: overtaken buffers not persisted
	VariantAlignAll  Variant = "SpecAlignAll"  // line 308: aligned on back-edges too
)

// The specifications of tla/BarrierAdaptive.tla (lines 195-208): aligned
// checkpoints that switch to unaligned on a timeout (adaptive.go).
const (
	VariantAdaptive            Variant = "SpecAdaptive"            // line 195
	VariantAdaptiveNoPersist   Variant = "SpecAdaptiveNoPersist"   // line 200: the switch persists nothing
	VariantAdaptiveForceSwitch Variant = "SpecAdaptiveForceSwitch" // line 203: ForceAligned ignored
	VariantAdaptiveLateTimeout Variant = "SpecAdaptiveLateTimeout" // line 206: a timeout after recording
	VariantAdaptiveStaleType   Variant = "SpecAdaptiveStaleType"   // line 208: the type decided before the switch reported
)

// Valid reports whether v is one of the specifications.
func (v Variant) Valid() bool {
	switch v {
	case VariantSpec, VariantNoBlock, VariantNoLog, VariantNoPersist, VariantAlignAll:
		return true
	}
	return v.Adaptive()
}

// Adaptive reports whether v is a specification of tla/BarrierAdaptive.tla.
func (v Variant) Adaptive() bool {
	switch v {
	case VariantAdaptive, VariantAdaptiveNoPersist, VariantAdaptiveForceSwitch, VariantAdaptiveLateTimeout, VariantAdaptiveStaleType:
		return true
	}
	return false
}

// flags are the arguments the variant passes to NextV and FairnessV
// (block, log, persist, cyclic). The adaptive variants call ProcessV(e,
// TRUE, persist), InjectV(s, TRUE) and RecvBarrierV(e, TRUE, TRUE)
// (tla/BarrierAdaptive.tla lines 84-92): log is their persist.
func (v Variant) flags() (block, log, persist, cyclic bool) {
	if v.Adaptive() {
		return true, v.adaptiveFlags().persist, true, true
	}
	return v != VariantNoBlock, v != VariantNoLog, v != VariantNoPersist, v != VariantAlignAll
}

// NodeKind says which of Src, Op and {Snk} a node belongs to.
type NodeKind uint8

// The kinds of node.
const (
	Source NodeKind = iota
	Operator
	Sink
)

// Constants are the CONSTANTS of tla/BarrierSnapshots.tla (lines 43-52),
// by name.
type Constants struct {
	Src    []string
	Op     []string
	Snk    string
	Edge   [][2]string
	Back   [][2]string
	Budget map[string]int // Budget[s] for every source
	Cap    int
	Iter   int
	Mode   Mode
	// The constants tla/BarrierAdaptive.tla adds (lines 47-49); zero for
	// a model of tla/BarrierSnapshots.tla.
	ForceAligned [][2]string
	MaxTimeouts  int
}

// ConstantError is a model whose constants break the spec's ASSUME
// (lines 62-71); Constant names the constant at fault.
type ConstantError struct {
	Constant string
	Msg      string
}

func (e *ConstantError) Error() string { return e.Constant + ": " + e.Msg }

// Config is a model of tla/BarrierSnapshots.tla: its constants with every
// node and edge given an index, the specification and the properties to
// check. Nodes are ordered sources, operators, sink (each by name); edges
// by their endpoints' names.
type Config struct {
	Name       string
	Nodes      []string
	Kind       []NodeKind
	Edges      [][2]int
	Back       []bool // Back[e]: e \in Back
	Budget     []int  // per node; 0 for nodes that are not sources
	Cap, Iter  int
	Mode       Mode
	Variant    Variant
	Invariants []spec.Property
	Properties []spec.Property
	// Unchecked are the properties the model names that the explorer
	// does not evaluate: the refinement SnapshotRefinement, which TLC
	// checks (see tla/README.md).
	Unchecked     []spec.Property
	CheckDeadlock bool
	// ForceAligned[e]: e \in ForceAligned; MaxTimeouts: the bound on
	// switches (tla/BarrierAdaptive.tla lines 47-49).
	ForceAligned []bool
	MaxTimeouts  int

	snk     int
	in, out [][]int // the edge indexes of In(n), Out(n)
	fwdOut  []int   // FwdOut(n), -1 for the sink
	backOut []int   // the edge of BackOut(n), -1 if none
	keyBase []int   // the index of Key <<s, 1>> is keyBase[s]
	numKeys int
}

// NewConfig checks k against the spec's ASSUME (lines 62-71: spec's
// BarrierGraph.CheckStrict states it, for every caller) and indexes it;
// invariants and properties must be the spec's.
func NewConfig(k Constants, variant Variant, invariants, properties []spec.Property) (*Config, error) {
	temporal, unchecked, err := checkNames(variant, invariants, properties)
	if err != nil {
		return nil, err
	}
	if err := k.check(); err != nil {
		return nil, err
	}
	cfg := &Config{Cap: k.Cap, Iter: k.Iter, Mode: k.Mode, Variant: variant,
		Invariants: invariants, Properties: temporal, Unchecked: unchecked}
	idx := cfg.addNodes(k)
	cfg.addEdges(k.Edge, idx)
	cfg.markBack(k.Back)
	cfg.shape()
	cfg.budgets(k.Budget)
	if err := cfg.adaptiveConstants(k); err != nil {
		return nil, err
	}
	return cfg, nil
}

// check checks k against the spec's ASSUME (spec.BarrierGraph.CheckStrict,
// its errors naming the constant at fault), what of it k's form can break
// before it is a graph (Back \subseteq Edge, line 65; Budget's domain is
// Src, line 70), and the model's bounds: at most 64 nodes and 64 edges.
func (k Constants) check() error {
	g, err := k.graph()
	if err != nil {
		return err
	}
	if err := g.CheckStrict(); err != nil {
		var ge *spec.BarrierGraphError
		if errors.As(err, &ge) {
			return &ConstantError{ge.Constant, ge.Msg}
		}
		return err
	}
	if len(g.Nodes) > 64 {
		return &ConstantError{"Op", fmt.Sprintf("%d nodes: the model handles at most 64", len(g.Nodes))}
	}
	if len(g.Edges) > 64 {
		return &ConstantError{"Edge", fmt.Sprintf("%d edges: the model handles at most 64", len(g.Edges))}
	}
	return nil
}

// graph is k by names, as spec.BarrierGraph: Edge a set (an edge listed
// twice is one), Back marked on it.
func (k Constants) graph() (spec.BarrierGraph, error) {
	g := spec.BarrierGraph{Cap: k.Cap, Iter: k.Iter, Mode: k.Mode.String()}
	for _, set := range []struct {
		names []string
		kind  string
	}{{k.Src, spec.KindSource}, {k.Op, spec.KindOperator}, {[]string{k.Snk}, spec.KindSink}} {
		for _, n := range set.names {
			g.Nodes = append(g.Nodes, spec.BarrierNode{Name: n, Kind: set.kind, Budget: k.Budget[n]})
		}
	}
	if err := k.checkBudget(); err != nil {
		return g, err
	}
	back := map[[2]string]bool{}
	for _, e := range k.Back {
		if !slices.Contains(k.Edge, e) {
			return g, &ConstantError{"Back", fmt.Sprintf("<<%q, %q>> is not in Edge", e[0], e[1])}
		}
		back[e] = true
	}
	for _, e := range sortedEdges(k.Edge) {
		g.Edges = append(g.Edges, spec.BarrierEdge{From: e[0], To: e[1], Back: back[e]})
	}
	return g, nil
}

// checkBudget: Budget \in [Src -> Nat] (line 70), its domain Src.
func (k Constants) checkBudget() error {
	for _, s := range k.Src {
		if _, ok := k.Budget[s]; !ok {
			return &ConstantError{"Budget", fmt.Sprintf("Budget[%q] must be a natural number", s)}
		}
	}
	for name := range k.Budget {
		if !slices.Contains(k.Src, name) {
			return &ConstantError{"Budget", fmt.Sprintf("%q is not a source", name)}
		}
	}
	return nil
}

// checkNames: the specification, invariants and properties are the
// spec's (lines 297-308, 313-356; tla/BarrierAdaptive.tla's specifications
// and invariants too, lines 194-234). It separates the temporal
// properties the explorer evaluates from the refinement, which it does
// not (unchecked).
func checkNames(variant Variant, invariants, properties []spec.Property) (temporal, unchecked []spec.Property, err error) {
	if !variant.Valid() {
		return nil, nil, fmt.Errorf("barrier: unknown specification %q (want Spec, SpecNoBlock, SpecNoLog, SpecNoPersist, SpecAlignAll or one of SpecAdaptive*)", variant)
	}
	invs := spec.BarrierInvariants
	if variant.Adaptive() {
		invs = slices.Concat(invs, spec.AdaptiveInvariants)
	}
	for _, p := range invariants {
		if !slices.Contains(invs, p) {
			return nil, nil, fmt.Errorf("barrier: unknown invariant %s (known: %s)", p, spec.JoinProperties(invs))
		}
	}
	temporal, unchecked = splitUnchecked(properties)
	for _, p := range temporal {
		if !slices.Contains(spec.BarrierTemporal, p) {
			return nil, nil, fmt.Errorf("barrier: unknown property %s (known: %s, %s)", p, spec.JoinProperties(spec.BarrierTemporal), spec.PropSnapshotRefinement)
		}
	}
	return temporal, unchecked, nil
}

// addNodes indexes Node == Src \cup Op \cup {Snk} (line 54): sources,
// operators, then the sink, each by name; it returns each name's index.
func (cfg *Config) addNodes(k Constants) map[string]int {
	idx := map[string]int{}
	for _, set := range []struct {
		names []string
		kind  NodeKind
	}{{k.Src, Source}, {k.Op, Operator}, {[]string{k.Snk}, Sink}} {
		names := slices.Clone(set.names)
		slices.Sort(names)
		for _, n := range names {
			idx[n] = len(cfg.Nodes)
			cfg.Nodes = append(cfg.Nodes, n)
			cfg.Kind = append(cfg.Kind, set.kind)
		}
	}
	cfg.snk = len(cfg.Nodes) - 1
	return idx
}

// sortedEdges is Edge as a set, sorted by the endpoints' names.
func sortedEdges(edge [][2]string) [][2]string {
	edges := slices.Clone(edge)
	slices.SortFunc(edges, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	return slices.Compact(edges)
}

// addEdges indexes Edge, sorted by the endpoints' names, and In(n) and
// Out(n) (lines 56-57).
func (cfg *Config) addEdges(edge [][2]string, idx map[string]int) {
	n := len(cfg.Nodes)
	cfg.in, cfg.out = make([][]int, n), make([][]int, n)
	for i, e := range sortedEdges(edge) {
		a, b := idx[e[0]], idx[e[1]]
		cfg.Edges = append(cfg.Edges, [2]int{a, b})
		cfg.out[a] = append(cfg.out[a], i)
		cfg.in[b] = append(cfg.in[b], i)
	}
}

// markBack marks Back (line 65).
func (cfg *Config) markBack(back [][2]string) {
	cfg.Back = make([]bool, len(cfg.Edges))
	for _, e := range back {
		i, _ := cfg.EdgeIndex(e[0], e[1])
		cfg.Back[i] = true
	}
}

// budgets sets Budget (line 70) and numbers Key: the records of source s
// are keyBase[s] .. keyBase[s]+Budget[s]-1.
func (cfg *Config) budgets(budget map[string]int) {
	n := len(cfg.Nodes)
	cfg.Budget, cfg.keyBase = make([]int, n), make([]int, n)
	for s, kind := range cfg.Kind {
		if kind == Source {
			cfg.Budget[s] = budget[cfg.Nodes[s]]
			cfg.keyBase[s] = cfg.numKeys
			cfg.numKeys += cfg.Budget[s]
		}
	}
}

// splitUnchecked separates the properties the explorer evaluates from
// the refinement, which it does not.
func splitUnchecked(properties []spec.Property) (evaluated, unchecked []spec.Property) {
	for _, p := range properties {
		if p == spec.PropSnapshotRefinement {
			unchecked = append(unchecked, p)
		} else {
			evaluated = append(evaluated, p)
		}
	}
	return evaluated, unchecked
}

// shape computes FwdOut and BackOut (lines 59-60): one forward output
// and at most one back-edge out, as the ASSUME says (lines 66-67).
func (cfg *Config) shape() {
	n := len(cfg.Nodes)
	cfg.fwdOut, cfg.backOut = make([]int, n), make([]int, n)
	for v := range n {
		cfg.fwdOut[v], cfg.backOut[v] = -1, -1
		for _, e := range cfg.out[v] {
			if cfg.Back[e] {
				cfg.backOut[v] = e
			} else {
				cfg.fwdOut[v] = e
			}
		}
	}
}

// EdgeIndex is the index of edge <<from, to>>.
func (cfg *Config) EdgeIndex(from, to string) (int, bool) {
	for i, e := range cfg.Edges {
		if cfg.Nodes[e[0]] == from && cfg.Nodes[e[1]] == to {
			return i, true
		}
	}
	return 0, false
}

// NodeIndex is the index of node name.
func (cfg *Config) NodeIndex(name string) (int, bool) {
	i := slices.Index(cfg.Nodes, name)
	return i, i >= 0
}

// Snk is the sink's index.
func (cfg *Config) Snk() int { return cfg.snk }

// NumKeys is the size of Key (line 81): every record every source emits.
func (cfg *Config) NumKeys() int { return cfg.numKeys }

// key is the index of Key <<s, i>>.
func (cfg *Config) key(s, i int) int { return cfg.keyBase[s] + i - 1 }

// EdgeName renders edge e as TLC prints it: <<"S1", "X">>.
func (cfg *Config) EdgeName(e int) string {
	return fmt.Sprintf("<<%q, %q>>", cfg.Nodes[cfg.Edges[e][0]], cfg.Nodes[cfg.Edges[e][1]])
}

// route mirrors Route(n, r) (lines 86-88): the edge operator n sends a
// record with hops on.
func (cfg *Config) route(n, hops int) int {
	if cfg.backOut[n] >= 0 && hops < cfg.Iter {
		return cfg.backOut[n]
	}
	return cfg.fwdOut[n]
}
