package explorer

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
)

// The page's barrier snapshots: the models of tla/BarrierSnapshots.tla
// (aligned, unaligned, the cyclic variant) and tla/BarrierAdaptive.tla
// (aligned checkpoints that switch to unaligned on a timeout), stepped by
// model/barrier (barrier.Next) as the Chandy-Lamport scenarios are by
// package model.

// The families of barrier specifications: a scenario offers the
// specifications of its module, whose constants it has.
const (
	FamilyBarrier  = "barrier"  // tla/BarrierSnapshots.tla
	FamilyAdaptive = "adaptive" // tla/BarrierAdaptive.tla
)

// BarrierVariant is a barrier specification the page offers, with what it
// demonstrates and, for a broken one, the rule it drops.
type BarrierVariant struct {
	Variant barrier.Variant `json:"variant"`
	Family  string          `json:"family"`
	Title   string          `json:"title"`
	About   string          `json:"about"`
	// Drops is the rule of the positive specification the variant drops,
	// "" for a positive one, and Rule where the spec writes it: the page
	// names them as the cause of what fails.
	Drops string     `json:"drops,omitempty"`
	Rule  spec.Quote `json:"rule"`
}

// BarrierVariants are the barrier specifications the page offers: Spec
// and SpecAdaptive, and the broken protocols of each module.
var BarrierVariants = []BarrierVariant{
	{barrier.VariantSpec, FamilyBarrier, "barrier snapshots", "tla/BarrierSnapshots.tla Spec: aligned (ABS, back-edges logged on a cycle) or unaligned, as the model's Mode says", "", spec.Quote{}},
	{barrier.VariantNoBlock, FamilyBarrier, "alignment without blocking", "SpecNoBlock: an aligning operator goes on taking records off an input whose barrier arrived, so a record sent after the cut is counted before it (BarrierConsistentCut), and a restore applies it twice (BarrierExactlyOnce)",
		"blocking", spec.Quote{TLA: "~(block /\\ Mode = \"aligned\" /\\ n \\notin recorded /\\ e \\in bar[n])", Module: modSnapshots, Line: 193}},
	{barrier.VariantNoLog, FamilyBarrier, "no back-edge logging", "SpecNoLog: on a cycle, the records in flight on the back-edge at the cut are not logged, so the restore loses them (BarrierExactChannelState, BarrierExactlyOnce)",
		"logging the records taken off an input being recorded (the back-edge)", spec.Quote{TLA: "recQ'  = IF log /\\ recChan[e] = \"recording\"", Module: modSnapshots, Line: 204}},
	{barrier.VariantNoPersist, FamilyBarrier, "unaligned, nothing persisted", "SpecNoPersist: an unaligned barrier overtakes the queued records but they are not persisted, so the restore loses them (BarrierExactChannelState, BarrierExactlyOnce)",
		"persisting the buffers an unaligned barrier overtakes", spec.Quote{TLA: "IF e[1] = n /\\ persist THEN recQ[e] \\o qs[e] ELSE recQ[e]", Module: modSnapshots, Line: 227}},
	{barrier.VariantAlignAll, FamilyBarrier, "aligned on back-edges too", "SpecAlignAll: on a cycle an operator waits for the barrier of its back-edge, which comes only after it forwarded its own, so the snapshot never completes (BarriersComplete)",
		"the cyclic variant, aligning on the inputs that are not back-edges", spec.Quote{TLA: "(IF cyclic THEN InF(n) ELSE In(n)) \\subseteq b", Module: modSnapshots, Line: 252}},
	{barrier.VariantAdaptive, FamilyAdaptive, "adaptive (aligned, switching on a timeout)", "tla/BarrierAdaptive.tla SpecAdaptive: a checkpoint starts aligned; an operator whose alignment times out (Timeout) switches to unaligned: its blocked inputs are done, the inputs it waits for are logged, its barrier overtakes its output queue, persisted", "", spec.Quote{}},
	{barrier.VariantAdaptiveNoPersist, FamilyAdaptive, "switch without persisting", "SpecAdaptiveNoPersist: the switch persists neither what its barrier overtakes nor what it takes off the inputs it waited for (BarrierExactChannelState, BarrierExactlyOnce)",
		"persisting on the switch what the barrier overtakes and what is taken off the inputs it waited for", spec.Quote{TLA: "SendBarriers(n, q, persist, \"unaligned\")", Module: modAdaptiveSpec, Line: 119}},
	{barrier.VariantAdaptiveForceSwitch, FamilyAdaptive, "force-aligned edges ignored", "SpecAdaptiveForceSwitch: an operator feeding a force-aligned edge switches, and its barrier persists that edge's queue (ForceAlignedNoChannelState, FLINK-33693)",
		"honouring ForceAligned", spec.Quote{TLA: "IF honour THEN /\\ Out(n) \\cap ForceAligned = {}", Module: modAdaptiveSpec, Line: 112}},
	{barrier.VariantAdaptiveStaleType, FamilyAdaptive, "stale snapshot type", "SpecAdaptiveStaleType: the switched operator reports the type decided before the switch, aligned (ReportedTypeTaken, FLINK-31588)",
		"reporting the type taken, unaligned after the switch", spec.Quote{TLA: "IF stale THEN mode[n] ELSE \"unaligned\"", Module: modAdaptiveSpec, Line: 121}},
	{barrier.VariantAdaptiveLateTimeout, FamilyAdaptive, "a timeout after recording", "SpecAdaptiveLateTimeout: an operator's alignment may time out after it recorded: it records again, later, so its cut takes in records sent after its senders' (BarrierConsistentCut)",
		"timing out only before recording", spec.Quote{TLA: "IF late THEN TRUE ELSE n \\notin recorded", Module: modAdaptiveSpec, Line: 108}},
}

// The modules the rules are quoted from.
const (
	modSnapshots    = "BarrierSnapshots.tla"
	modAdaptiveSpec = "BarrierAdaptive.tla"
)

// barrierVariant finds v among BarrierVariants.
func barrierVariant(v barrier.Variant) (BarrierVariant, bool) {
	i := slices.IndexFunc(BarrierVariants, func(x BarrierVariant) bool { return x.Variant == v })
	if i < 0 {
		return BarrierVariant{}, false
	}
	return BarrierVariants[i], true
}

// positive is the positive specification of v's family: Spec or
// SpecAdaptive.
func positive(v barrier.Variant) barrier.Variant {
	if v.Adaptive() {
		return barrier.VariantAdaptive
	}
	return barrier.VariantSpec
}

// BarrierScenario is one of the page's barrier models: the constants of a
// TLC model of tla/ (Model), opened under Variant, with a scripted run.
type BarrierScenario struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	About  string `json:"about"`
	Model  string `json:"model"`
	Family string `json:"family"`
	// Variant is the specification the scenario opens under.
	Variant barrier.Variant `json:"variant"`
	// Article is the scenario's scripted run (see BarrierToken); Runs,
	// for a broken specification whose counter-example needs a step the
	// positive one does not enable, that run instead.
	Article string                     `json:"article,omitempty"`
	Runs    map[barrier.Variant]string `json:"runs,omitempty"`
	// Graph is the model's graph, as a barrier trace's header holds it.
	Graph spec.BarrierGraph `json:"graph"`
}

// RunFor is the scripted run the page plays under variant v.
func (sc BarrierScenario) RunFor(v barrier.Variant) string {
	if r, ok := sc.Runs[v]; ok {
		return r
	}
	return sc.Article
}

// The backpressure run on the fan-in graph S1, S2 -> X -> K (Cap 1), in
// tokens: S1 emits <<S1, 1>> and injects its barrier behind it (E0.I0);
// X takes the record on to X -> K and S1's barrier (P0.B0): X is
// aligning, S1 -> X blocked; S1 emits <<S1, 2>>, queued behind the
// alignment, S2 emits <<S2, 1>> and its barrier behind it (E0.E1.I1). K
// is slow (the schedule takes none of its steps): X -> K stays full, so X
// cannot take <<S2, 1>> and S2's barrier never reaches it. X's alignment
// times out (T2): S1 -> X is done, S2 -> X recording, and X's barrier
// overtakes <<S1, 1>> on X -> K, persisted. K records on that barrier
// (B2), then takes <<S1, 1>> (P2); X takes <<S2, 1>>, logged as S2 -> X's
// channel state, and S2's barrier (P1.B1): complete. Then the rest
// drains (P2.P0.P2), the graph is restored (R) with <<S1, 1>> back on
// X -> K and <<S2, 1>> on S2 -> X, and the run drains again, each record
// reaching K once (P2.P1.P2.E0.P0.P2).
const backpressureRun = "E0.I0.P0.B0.E0.E1.I1.T2.B2.P2.P1.B1.P2.P0.P2.R.P2.P1.P2.E0.P0.P2"

// barrierSources are the page's barrier scenarios, in the order it lists
// them.
var barrierSources = []BarrierScenario{
	{ID: "backpressure", Title: "Backpressure: the switch (adaptive)", Model: "MCBarrierAdaptiveDAG", Variant: barrier.VariantAdaptive,
		About:   "S1 and S2 feed X, which feeds a slow sink K (buffers of one record). X aligns: S1's barrier is in, S1 -> X blocked, but S2's barrier is queued behind a record X cannot take, since X -> K is full. X's alignment times out: it switches to unaligned, its barrier overtakes the record queued on X -> K (persisted), and the record it was waiting for on S2 -> X is logged as channel state.",
		Article: backpressureRun,
		Runs: map[barrier.Variant]string{
			// X aligns after all (K takes its record, X takes S2's and
			// its barrier, records aligned), takes the blocked <<S1, 2>>,
			// and then its alignment times out.
			barrier.VariantAdaptiveLateTimeout: "E0.I0.P0.B0.E0.E1.I1.P2.P1.B1.P2.B2.P0.T2",
			// Nothing was persisted, so the restore puts nothing back: S1
			// emits <<S1, 2>> again and the run drains without <<S1, 1>>
			// and <<S2, 1>>.
			barrier.VariantAdaptiveNoPersist: "E0.I0.P0.B0.E0.E1.I1.T2.B2.P2.P1.B1.P2.P0.P2.R.E0.P0.P2",
		}},
	{ID: "force-aligned", Title: "A force-aligned edge (adaptive)", Model: "MCBarrierAdaptiveForceSwitch", Variant: barrier.VariantAdaptive,
		About:   "The backpressure run, but X -> K must stay aligned (ForceAligned, FLINK-33693): X feeds it, so its alignment never times out and X waits for S2's barrier, however long K takes. Under SpecAdaptiveForceSwitch the same run switches X and persists X -> K's queue.",
		Article: "E0.I0.P0.B0.E0.E1.I1.P2.P1.B1.P2.B2.P0.P2.R",
		Runs:    map[barrier.Variant]string{barrier.VariantAdaptiveForceSwitch: backpressureRun}},
	{ID: "adaptive-cycle", Title: "Adaptive on a cycle", Model: "MCBarrierAdaptiveCycle", Variant: barrier.VariantAdaptive,
		About:   "S1 and S2 feed A; A and B form a cycle (B -> A the back-edge), B feeds K, each record going round once. A aligns on S1 and S2 (not on the back-edge) and may switch once: in the scripted run B is slow, so A -> B stays full and A's alignment times out, its barrier overtaking S1#1 on A -> B (persisted) and S2#1, which it was waiting for, logged.",
		Article: "E0.I0.P3.B3.E1.I1.T2.B0.P0.P4.P0.B1.P1.B2.P0.P1.P2.P0.P2.B4.R.P0.P1.P0.P2.P4.P0.P1.P0.P2"},
	{ID: "aligned", Title: "Aligned barriers (ABS)", Model: "MCBarrierAlignedDAG", Variant: barrier.VariantSpec,
		About:   "Carbone et al. 2015's aligned barriers on the fan-in graph: X blocks S1 -> X once S1's barrier is in, until S2's arrives; no channel state at all. Under SpecNoBlock X takes the blocked record before it records.",
		Article: "E0.I0.P0.B0.E0.E1.I1.P2.P1.B1.P2.B2.P0.P2.R.E0.P0.P2",
		Runs: map[barrier.Variant]string{
			// X takes <<S1, 2>>, behind S1's barrier, before it records.
			barrier.VariantNoBlock: "E0.I0.P0.B0.E0.P2.P0.E1.I1.P2.P1.B1.P2.B2.R.E0.P0.P2",
		}},
	{ID: "unaligned", Title: "Unaligned checkpoints", Model: "MCBarrierUnalignedDAG", Variant: barrier.VariantSpec,
		About: "Unaligned checkpoints on the fan-in graph: each node records on its first barrier, which overtakes its queued output, persisted as channel state. Under SpecNoPersist the overtaken records are lost.",
		// S1's barrier overtakes <<S1, 1>> (persisted); X records on it
		// and logs S2 -> X until S2's barrier, which overtakes <<S2, 1>>.
		Article: "E0.I0.B0.B2.P0.P2.E1.I1.B1.P1.P2.E0.P0.P2.R.P0.P2.P1.P2.E0.P0.P2",
		// Nothing overtaken was persisted: the restore puts nothing back,
		// and the run drains without <<S1, 1>> and <<S2, 1>>.
		Runs: map[barrier.Variant]string{barrier.VariantNoPersist: "E0.I0.B0.B2.P0.P2.E1.I1.B1.P1.P2.E0.P0.P2.R.E0.P0.P2"}},
	{ID: "aligned-cycle", Title: "Aligned on a cycle", Model: "MCBarrierAlignedCycle", Variant: barrier.VariantSpec,
		About: "S feeds A; A and B form a cycle (B -> A the back-edge), each record going round once before B sends it to K. A aligns on S -> A only and logs the back-edge until its barrier. Under SpecNoLog the back-edge is not logged; under SpecAlignAll A waits for the back-edge's barrier forever.",
		// A records on S's barrier and logs <<S, 1>> and <<S, 2>>, back
		// from B, until B's barrier comes round.
		Article: "E0.P3.P0.E0.I0.P3.B3.P0.B0.P1.B2.P0.P2.P1.P0.P2.B1.R.P1.P0.P2.P1.P0.P2",
		Runs: map[barrier.Variant]string{
			// A waits for B -> A's barrier; the records drain round it.
			barrier.VariantAlignAll: "E0.P3.P0.E0.I0.P3.B3.P0.P1.P0.P2.P1.P0.P2",
			// Nothing logged: the restore puts nothing back on B -> A,
			// and the run has drained without S's records.
			barrier.VariantNoLog: "E0.P3.P0.E0.I0.P3.B3.P0.B0.P1.B2.P0.P2.P1.P0.P2.B1.R",
		}},
}

// BarrierScenarios lists the page's barrier scenarios, their graphs read
// from their TLC models (tla.Models).
func BarrierScenarios() ([]BarrierScenario, error) { return barrierScenarios() }

var barrierScenarios = sync.OnceValues(func() ([]BarrierScenario, error) {
	out := make([]BarrierScenario, 0, len(barrierSources))
	for _, sc := range barrierSources {
		cfg, err := loadBarrierModel(sc.Model)
		if err != nil {
			return nil, err
		}
		sc.Family = FamilyBarrier
		if sc.Variant.Adaptive() {
			sc.Family = FamilyAdaptive
		}
		sc.Graph = barrierGraph(cfg, sc.Variant)
		out = append(out, sc)
	}
	return out, nil
})

// barrierScenario finds barrier scenario id.
func barrierScenario(id string) (BarrierScenario, bool) {
	all, err := BarrierScenarios()
	if err != nil {
		return BarrierScenario{}, false
	}
	i := slices.IndexFunc(all, func(sc BarrierScenario) bool { return sc.ID == id })
	if i < 0 {
		return BarrierScenario{}, false
	}
	return all[i], true
}

// loadBarrierModel reads TLC model name from the embedded tla/ files
// (barrier.FromRaw).
func loadBarrierModel(name string) (*barrier.Config, error) {
	cfgSrc, err := fs.ReadFile(tla.Models, name+".cfg")
	if err != nil {
		return nil, err
	}
	tlaSrc, err := fs.ReadFile(tla.Models, name+".tla")
	if err != nil {
		return nil, err
	}
	raw, err := tlcmodel.ParseRaw("tla/"+name+".cfg", string(cfgSrc), "tla/"+name+".tla", string(tlaSrc))
	if err != nil {
		return nil, err
	}
	return barrier.FromRaw(raw)
}

// barrierConstants reads a model's constants back (barrier.Constants),
// to build it under another specification.
func barrierConstants(cfg *barrier.Config) barrier.Constants {
	k := barrier.Constants{Snk: cfg.Nodes[cfg.Snk()], Budget: map[string]int{}, Cap: cfg.Cap, Iter: cfg.Iter, Mode: cfg.Mode, MaxTimeouts: cfg.MaxTimeouts}
	for n, kind := range cfg.Kind {
		switch kind {
		case barrier.Source:
			k.Src = append(k.Src, cfg.Nodes[n])
			k.Budget[cfg.Nodes[n]] = cfg.Budget[n]
		case barrier.Operator:
			k.Op = append(k.Op, cfg.Nodes[n])
		}
	}
	for e, ends := range cfg.Edges {
		pair := [2]string{cfg.Nodes[ends[0]], cfg.Nodes[ends[1]]}
		k.Edge = append(k.Edge, pair)
		if cfg.Back[e] {
			k.Back = append(k.Back, pair)
		}
		if cfg.ForceAligned[e] {
			k.ForceAligned = append(k.ForceAligned, pair)
		}
	}
	return k
}

// barrierGraph is cfg's graph as a barrier trace's header holds it, for
// specification v.
func barrierGraph(cfg *barrier.Config, v barrier.Variant) spec.BarrierGraph {
	g := spec.BarrierGraph{Cap: cfg.Cap, Iter: cfg.Iter, Mode: cfg.Mode.String()}
	if v.Adaptive() {
		g.Mode = spec.ModeAdaptive
	}
	kinds := map[barrier.NodeKind]string{barrier.Source: spec.KindSource, barrier.Operator: spec.KindOperator, barrier.Sink: spec.KindSink}
	for n, name := range cfg.Nodes {
		g.Nodes = append(g.Nodes, spec.BarrierNode{Name: name, Kind: kinds[cfg.Kind[n]], Budget: cfg.Budget[n]})
	}
	for e, ends := range cfg.Edges {
		g.Edges = append(g.Edges, spec.BarrierEdge{From: cfg.Nodes[ends[0]], To: cfg.Nodes[ends[1]], Back: cfg.Back[e], ForceAligned: cfg.ForceAligned[e]})
	}
	return g
}

// barrierConfig builds scenario sc's model under specification v, which
// must be of its family, checking the spec's invariants (those of its
// positive TLC models: spec.BarrierInvariants, or
// spec.AdaptiveSpecInvariants) and BarriersComplete.
func barrierConfig(sc BarrierScenario, v barrier.Variant) (*barrier.Config, error) {
	bv, ok := barrierVariant(v)
	if !ok || bv.Family != sc.Family {
		return nil, fmt.Errorf("no specification %q for %s: want one of %s", v, sc.ID, strings.Join(familyVariants(sc.Family), ", "))
	}
	base, err := loadBarrierModel(sc.Model)
	if err != nil {
		return nil, err
	}
	invariants := spec.BarrierInvariants
	if v.Adaptive() {
		invariants = spec.AdaptiveSpecInvariants
	}
	return barrier.NewConfig(barrierConstants(base), v, invariants, spec.BarrierTemporal)
}

// familyVariants names the specifications of a family.
func familyVariants(family string) []string {
	var out []string
	for _, x := range BarrierVariants {
		if x.Family == family {
			out = append(out, string(x.Variant))
		}
	}
	return out
}
