package barrier

import (
	"fmt"
	"slices"

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

// NewConfig checks k against the spec's ASSUME (lines 62-71) and indexes
// it; invariants and properties must be the spec's.
func NewConfig(k Constants, variant Variant, invariants, properties []spec.Property) (*Config, error) {
	temporal, unchecked, err := checkNames(variant, invariants, properties)
	if err != nil {
		return nil, err
	}
	cfg := &Config{Cap: k.Cap, Iter: k.Iter, Mode: k.Mode, Variant: variant,
		Invariants: invariants, Properties: temporal, Unchecked: unchecked}
	idx := map[string]int{}
	for _, step := range []func() error{
		func() error { return cfg.addNodes(k, idx) },
		func() error { return cfg.addEdges(k.Edge, idx) },
		func() error { return cfg.markBack(k.Back) },
		cfg.shape,
		func() error { return cfg.budgets(k.Budget, idx) },
		func() error { return checkBounds(k) },
		func() error { return cfg.adaptiveConstants(k) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
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
// operators, then the sink, each by name, into idx; the sets are
// disjoint (lines 62-63) and hold at most 64 nodes.
func (cfg *Config) addNodes(k Constants, idx map[string]int) error {
	if len(k.Src) == 0 {
		return &ConstantError{"Src", "no source"}
	}
	for _, set := range []struct {
		constant string
		names    []string
		kind     NodeKind
	}{{"Src", k.Src, Source}, {"Op", k.Op, Operator}, {"Snk", []string{k.Snk}, Sink}} {
		if err := cfg.addKind(set.constant, set.names, set.kind, idx); err != nil {
			return err
		}
	}
	if len(cfg.Nodes) > 64 {
		return &ConstantError{"Op", fmt.Sprintf("%d nodes: the model handles at most 64", len(cfg.Nodes))}
	}
	cfg.snk = len(cfg.Nodes) - 1
	return nil
}

// addKind adds the nodes of one kind, sorted by name.
func (cfg *Config) addKind(constant string, names []string, kind NodeKind, idx map[string]int) error {
	names = slices.Clone(names)
	slices.Sort(names)
	for _, n := range names {
		if _, dup := idx[n]; dup {
			return &ConstantError{constant, fmt.Sprintf("node %q is in Src, Op or Snk twice", n)}
		}
		idx[n] = len(cfg.Nodes)
		cfg.Nodes = append(cfg.Nodes, n)
		cfg.Kind = append(cfg.Kind, kind)
	}
	return nil
}

// addEdges indexes Edge, sorted by the endpoints' names: Edge \subseteq
// Node \X Node, no self-loop (line 64), at most 64 edges.
func (cfg *Config) addEdges(edge [][2]string, idx map[string]int) error {
	edges := slices.Clone(edge)
	slices.SortFunc(edges, func(a, b [2]string) int {
		if c := compareStr(a[0], b[0]); c != 0 {
			return c
		}
		return compareStr(a[1], b[1])
	})
	edges = slices.Compact(edges)
	if len(edges) > 64 {
		return &ConstantError{"Edge", fmt.Sprintf("%d edges: the model handles at most 64", len(edges))}
	}
	n := len(cfg.Nodes)
	cfg.in, cfg.out = make([][]int, n), make([][]int, n)
	for i, e := range edges {
		a, okA := idx[e[0]]
		b, okB := idx[e[1]]
		if !okA || !okB {
			return &ConstantError{"Edge", fmt.Sprintf("<<%q, %q>> joins a node that is in neither Src, Op nor Snk", e[0], e[1])}
		}
		if a == b {
			return &ConstantError{"Edge", fmt.Sprintf("<<%q, %q>> is a self-loop", e[0], e[1])}
		}
		cfg.Edges = append(cfg.Edges, [2]int{a, b})
		cfg.out[a] = append(cfg.out[a], i)
		cfg.in[b] = append(cfg.in[b], i)
	}
	return nil
}

// markBack marks Back \subseteq Edge (line 65).
func (cfg *Config) markBack(back [][2]string) error {
	cfg.Back = make([]bool, len(cfg.Edges))
	for _, e := range back {
		i, ok := cfg.EdgeIndex(e[0], e[1])
		if !ok {
			return &ConstantError{"Back", fmt.Sprintf("<<%q, %q>> is not in Edge", e[0], e[1])}
		}
		cfg.Back[i] = true
	}
	return nil
}

// budgets sets Budget \in [Src -> Nat] (line 70) and numbers Key: the
// records of source s are keyBase[s] .. keyBase[s]+Budget[s]-1.
func (cfg *Config) budgets(budget map[string]int, idx map[string]int) error {
	n := len(cfg.Nodes)
	cfg.Budget, cfg.keyBase = make([]int, n), make([]int, n)
	for s, kind := range cfg.Kind {
		if kind != Source {
			continue
		}
		b, ok := budget[cfg.Nodes[s]]
		if !ok || b < 0 {
			return &ConstantError{"Budget", fmt.Sprintf("Budget[%q] must be a natural number", cfg.Nodes[s])}
		}
		cfg.Budget[s] = b
		cfg.keyBase[s] = cfg.numKeys
		cfg.numKeys += b
	}
	for name := range budget {
		if i, ok := idx[name]; !ok || cfg.Kind[i] != Source {
			return &ConstantError{"Budget", fmt.Sprintf("%q is not a source", name)}
		}
	}
	return nil
}

// checkBounds: Cap \in Nat \ {0}, Iter \in Nat (line 70).
func checkBounds(k Constants) error {
	if k.Cap < 1 {
		return &ConstantError{"Cap", fmt.Sprintf("must be at least 1, not %d", k.Cap)}
	}
	if k.Iter < 0 {
		return &ConstantError{"Iter", fmt.Sprintf("must be a natural number, not %d", k.Iter)}
	}
	return nil
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

// shape checks the ASSUME's conditions on the graph (lines 66-69) and
// computes FwdOut and BackOut.
func (cfg *Config) shape() error {
	n := len(cfg.Nodes)
	cfg.fwdOut, cfg.backOut = make([]int, n), make([]int, n)
	for v := range n {
		fwd, back, inF := cfg.degree(v)
		if err := cfg.checkShape(v, len(fwd), len(back), inF); err != nil {
			return err
		}
		cfg.fwdOut[v], cfg.backOut[v] = -1, -1
		if len(fwd) == 1 {
			cfg.fwdOut[v] = fwd[0]
		}
		if len(back) == 1 {
			cfg.backOut[v] = back[0]
		}
	}
	return nil
}

// degree is node v's forward and back outputs and its number of inputs
// that are not back-edges (InF, line 59).
func (cfg *Config) degree(v int) (fwd, back []int, inF int) {
	for _, e := range cfg.out[v] {
		if cfg.Back[e] {
			back = append(back, e)
		} else {
			fwd = append(fwd, e)
		}
	}
	for _, e := range cfg.in[v] {
		if !cfg.Back[e] {
			inF++
		}
	}
	return fwd, back, inF
}

// checkShape checks node v's line of the ASSUME (lines 66-69), given its
// numbers of forward and back outputs and of inputs not back-edges.
func (cfg *Config) checkShape(v, fwd, back, inF int) error {
	ok := map[NodeKind]bool{
		Source:   len(cfg.in[v]) == 0 && fwd == 1 && back == 0,
		Operator: fwd == 1 && back <= 1 && inF > 0,
		Sink:     len(cfg.out[v]) == 0 && inF > 0,
	}[cfg.Kind[v]]
	if ok {
		return nil
	}
	return &ConstantError{"Edge", fmt.Sprintf(shapeWant[cfg.Kind[v]], cfg.Nodes[v])}
}

// shapeWant is checkShape's words for a node of each kind.
var shapeWant = map[NodeKind]string{
	Source:   "source %q must have no input and one output, not a back-edge",
	Operator: "operator %q must have one output that is not a back-edge, at most one back-edge out, and an input that is not a back-edge",
	Sink:     "the sink %q must have no output and an input that is not a back-edge",
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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
