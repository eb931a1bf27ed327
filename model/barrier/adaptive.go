package barrier

import (
	"fmt"
	"math/bits"
	"slices"
)

// This file mirrors tla/BarrierAdaptive.tla, the adaptive mode: a
// checkpoint starts aligned and an operator whose alignment times out
// switches it to unaligned. Line numbers refer to that module.

// SnapType mirrors Type (line 54): the type of a node's snapshot, or
// none yet.
type SnapType uint8

// The snapshot types.
const (
	TypeNone SnapType = iota
	TypeAligned
	TypeUnaligned
)

func (t SnapType) String() string {
	switch t {
	case TypeAligned:
		return "aligned"
	case TypeUnaligned:
		return "unaligned"
	}
	return "none"
}

// adaptiveFlags are the arguments the variant passes to NextA (lines
// 121-127): persist, honour, late, stale.
type adaptiveFlags struct {
	persist, honour, late, stale bool
}

func (v Variant) adaptiveFlags() adaptiveFlags {
	return adaptiveFlags{
		persist: v != VariantAdaptiveNoPersist,
		honour:  v != VariantAdaptiveForceSwitch,
		late:    v == VariantAdaptiveLateTimeout,
		stale:   v == VariantAdaptiveStaleType,
	}
}

// adaptiveConstants checks the constants of lines 46-52 against the ASSUME
// and indexes ForceAligned; a model of tla/BarrierSnapshots.tla has none.
func (cfg *Config) adaptiveConstants(k Constants) error {
	cfg.ForceAligned = make([]bool, len(cfg.Edges))
	if !cfg.Variant.Adaptive() {
		if len(k.ForceAligned) != 0 || k.MaxTimeouts != 0 {
			return &ConstantError{"ForceAligned", fmt.Sprintf("ForceAligned and MaxTimeouts are constants of tla/BarrierAdaptive.tla, not of %s", cfg.Variant)}
		}
		return nil
	}
	if cfg.Mode != Aligned {
		return &ConstantError{"Mode", `an adaptive snapshot starts aligned: Mode must be "aligned"`}
	}
	if k.MaxTimeouts < 0 {
		return &ConstantError{"MaxTimeouts", fmt.Sprintf("must be a natural number, not %d", k.MaxTimeouts)}
	}
	cfg.MaxTimeouts = k.MaxTimeouts
	return cfg.indexForceAligned(k.ForceAligned)
}

// indexForceAligned checks ForceAligned \subseteq Edge \ Back (line 50)
// and indexes it.
func (cfg *Config) indexForceAligned(edges [][2]string) error {
	for _, e := range edges {
		i, ok := cfg.EdgeIndex(e[0], e[1])
		if !ok || cfg.Back[i] {
			return &ConstantError{"ForceAligned", fmt.Sprintf("<<%q, %q>> is not an edge of Edge \\ Back", e[0], e[1])}
		}
		cfg.ForceAligned[i] = true
	}
	return nil
}

// modeType is the type of n's snapshot its mode says (mode[n], line 57).
func modeType(switched uint64, n int) SnapType {
	if switched&(1<<n) != 0 {
		return TypeUnaligned
	}
	return TypeAligned
}

// recvBarrierA mirrors RecvBarrierA(e) (lines 88-95): RecvBarrierV(e,
// TRUE, TRUE), and a node recording on this barrier reports its mode and
// freezes whether it was aligned.
func recvBarrierA(cfg *Config, st *State, e int) (*State, Conjunct) {
	ns, k := recvBarrier(cfg, st, e, true, true)
	if k != Enabled {
		return nil, k
	}
	if n := cfg.Edges[e][1]; !st.Has(n) && ns.Has(n) {
		ns.Reported[n] = modeType(st.Switched, n)
		if cfg.aligned(n, ns.Bar[n], true) {
			ns.CutAligned |= 1 << n
		}
	}
	return ns, Enabled
}

// timeoutEnabled checks TimeoutV's enabling conjuncts (lines 108-114) in
// order: the first false one, or Enabled.
func timeoutEnabled(cfg *Config, st *State, n int, f adaptiveFlags) Conjunct {
	switch {
	case !f.late && st.Has(n):
		return AlreadyRecorded
	case st.Bar[n] == 0:
		return NotBlocked
	case st.Switched&(1<<n) != 0:
		return AlreadySwitched
	case bits.OnesCount64(st.Switched) >= cfg.MaxTimeouts:
		return TimeoutsSpent
	case f.honour && cfg.feedsForceAligned(n):
		return FeedsForceAligned
	case f.honour && !cfg.forceAlignedIn(n, st.Bar[n]):
		return ForceAlignedPending
	}
	return Enabled
}

// feedsForceAligned reports Out(n) \cap ForceAligned # {} (line 112).
func (cfg *Config) feedsForceAligned(n int) bool {
	for _, e := range cfg.out[n] {
		if cfg.ForceAligned[e] {
			return true
		}
	}
	return false
}

// forceAlignedIn reports In(n) \cap ForceAligned \subseteq b (line 113).
func (cfg *Config) forceAlignedIn(n int, b uint64) bool {
	for _, e := range cfg.in[n] {
		if cfg.ForceAligned[e] && b&(1<<e) == 0 {
			return false
		}
	}
	return true
}

// timeout mirrors TimeoutV(n, persist, honour, late, stale) (lines
// 99-115): n records, its inputs start recording or are done, its
// barrier overtakes its outputs' queues, and it switches and reports.
func timeout(cfg *Config, st *State, n int) (*State, Conjunct) {
	f := cfg.Variant.adaptiveFlags()
	if k := timeoutEnabled(cfg, st, n, f); k != Enabled {
		return nil, k
	}
	ns := st.Clone()
	recordNode(cfg, st, ns, n)                     // line 115
	startRecording(cfg, ns, n, st.Bar[n])          // lines 116-118
	sendBarriers(cfg, ns, n, f.persist, Unaligned) // line 119
	ns.Switched |= 1 << n                          // line 120
	ns.Reported[n] = TypeUnaligned                 // line 121
	if f.stale {
		ns.Reported[n] = modeType(st.Switched, n)
	}
	if cfg.aligned(n, st.Bar[n], true) { // line 122
		ns.CutAligned |= 1 << n
	} else {
		ns.CutAligned &^= 1 << n
	}
	return ns, Enabled
}

// barrierPos mirrors BarrierPos(e) (lines 129-130), 1-based: the
// position of the barrier in e's queue, 0 if none.
func barrierPos(q []Item) int {
	for j, it := range q {
		if it.Barrier {
			return j + 1
		}
	}
	return 0
}

// queued mirrors Queued(n, honour) (lines 135-136): n's outputs (honour:
// not force-aligned) whose barrier is still queued behind records, as an
// edge set.
func (cfg *Config) queued(st *State, n int, honour bool) uint64 {
	var es uint64
	for _, e := range cfg.out[n] {
		if barrierPos(st.Q[e]) > 1 && !(honour && cfg.ForceAligned[e]) {
			es |= 1 << e
		}
	}
	return es
}

// timeoutOutEnabled checks TimeoutOutV's enabling conjuncts (lines
// 161-164) in order: the first false one, or Enabled.
func timeoutOutEnabled(cfg *Config, st *State, n int, f adaptiveFlags) Conjunct {
	switch {
	case !st.Has(n):
		return NotRecorded
	case st.Switched&(1<<n) != 0:
		return AlreadySwitched
	case bits.OnesCount64(st.Switched) >= cfg.MaxTimeouts:
		return TimeoutsSpent
	case cfg.queued(st, n, f.honour) == 0:
		return NothingQueued
	}
	return Enabled
}

// timeoutOut mirrors TimeoutOutV(n, persist, honour, stale) (lines
// 159-173): on each output in Queued(n, honour) n's barrier overtakes the
// records ahead of it, persisted as the edge's channel state (persist); n
// switches and reports, and its snapshot is no longer aligned.
func timeoutOut(cfg *Config, st *State, n int) (*State, Conjunct) {
	f := cfg.Variant.adaptiveFlags()
	if k := timeoutOutEnabled(cfg, st, n, f); k != Enabled {
		return nil, k
	}
	es := cfg.queued(st, n, f.honour)
	ns := st.Clone()
	for e := range cfg.Edges {
		if es&(1<<e) == 0 {
			continue
		}
		j := barrierPos(st.Q[e]) - 1
		ahead := st.Q[e][:j]
		ns.Q[e] = slices.Concat([]Item{{Barrier: true}}, ahead, st.Q[e][j+1:]) // lines 165-167
		if f.persist {
			ns.RecQ[e] = append(ns.RecQ[e], ahead...) // line 168
		}
	}
	ns.Switched |= 1 << n // line 169
	if cfg.Kind[n] == Source {
		return ns, Enabled // lines 170-171: a source reports nothing
	}
	ns.Reported[n] = TypeUnaligned // line 170
	if f.stale {
		ns.Reported[n] = modeType(st.Switched, n)
	}
	ns.CutAligned &^= 1 << n // line 171
	return ns, Enabled
}

// adaptiveParams is params for the actions of NextA (lines 179-186):
// EmitA(s), InjectA(s), ProcessA(e, log), RecvBarrierA(e),
// TimeoutV(n, persist, honour, late, stale), TimeoutOutV(n, persist,
// honour, stale), RestoreA.
func (a Action) adaptiveParams(cfg *Config) (string, [][2]string) {
	f := cfg.Variant.adaptiveFlags()
	switch a.Kind {
	case ActEmit:
		return "EmitA", [][2]string{{"s", fmt.Sprintf("%q", cfg.Nodes[a.Node])}}
	case ActInject:
		return "InjectA", [][2]string{{"s", fmt.Sprintf("%q", cfg.Nodes[a.Node])}}
	case ActProcess:
		return "ProcessA", [][2]string{{"e", cfg.EdgeName(a.Edge)}, {"log", tlaBool(f.persist)}}
	case ActRecvBarrier:
		return "RecvBarrierA", [][2]string{{"e", cfg.EdgeName(a.Edge)}}
	case ActTimeout:
		return "TimeoutV", [][2]string{{"n", fmt.Sprintf("%q", cfg.Nodes[a.Node])}, {"persist", tlaBool(f.persist)},
			{"honour", tlaBool(f.honour)}, {"late", tlaBool(f.late)}, {"stale", tlaBool(f.stale)}}
	case ActTimeoutOut:
		return "TimeoutOutV", [][2]string{{"n", fmt.Sprintf("%q", cfg.Nodes[a.Node])}, {"persist", tlaBool(f.persist)},
			{"honour", tlaBool(f.honour)}, {"stale", tlaBool(f.stale)}}
	}
	return "RestoreA", nil
}

// AdaptiveTypeOK mirrors AdaptiveTypeOK (lines 216-221): BarrierTypeOK,
// and the new variables in their domains (the Go types give the rest):
// only nodes that are not sources report or are aligned, and a source
// that switched has recorded.
func AdaptiveTypeOK(cfg *Config, st *State) bool {
	if !TypeOK(cfg, st) {
		return false
	}
	for n, k := range cfg.Kind {
		if k == Source && !sourceTypeOK(st, n) || st.Reported[n] > TypeUnaligned {
			return false
		}
	}
	all := uint64(1)<<len(cfg.Nodes) - 1
	return (st.Switched|st.CutAligned)&^all == 0
}

// sourceTypeOK is AdaptiveTypeOK for source n: outside the domains of
// reported and cutAligned, switched only if it recorded (line 221).
func sourceTypeOK(st *State, n int) bool {
	bit := uint64(1) << n
	return st.CutAligned&bit == 0 && st.Reported[n] == TypeNone && (st.Switched&bit == 0 || st.Has(n))
}

// UnswitchedNoChannelState mirrors UnswitchedNoChannelState (lines
// 165-166): an edge that is not a back-edge and neither of whose ends
// switched records nothing.
func UnswitchedNoChannelState(cfg *Config, st *State) bool {
	for e, ends := range cfg.Edges {
		sw := st.Switched&(1<<ends[0]|1<<ends[1]) != 0
		if !cfg.Back[e] && !sw && len(st.RecQ[e]) != 0 {
			return false
		}
	}
	return true
}

// ForceAlignedNoChannelState mirrors ForceAlignedNoChannelState (line
// 169).
func ForceAlignedNoChannelState(cfg *Config, st *State) bool {
	for e, fa := range cfg.ForceAligned {
		if fa && len(st.RecQ[e]) != 0 {
			return false
		}
	}
	return true
}

// ReportedTypeTaken mirrors ReportedTypeTaken (line 234), with TakenType
// (line 71).
func ReportedTypeTaken(cfg *Config, st *State) bool {
	for n, k := range cfg.Kind {
		if k == Source || !st.Has(n) {
			continue
		}
		if st.Reported[n] != TakenType(st, n) {
			return false
		}
	}
	return true
}

// timeoutWhy says what the state holds instead of TimeoutV's false
// conjunct k.
func timeoutWhy(cfg *Config, st *State, n int, k Conjunct) string {
	if k == TimeoutsSpent {
		return fmt.Sprintf("%d of MaxTimeouts = %d alignments have timed out", bits.OnesCount64(st.Switched), cfg.MaxTimeouts)
	}
	if f, ok := timeoutWhyFormat[k]; ok {
		return fmt.Sprintf(f, cfg.Nodes[n])
	}
	return ""
}

// timeoutWhyFormat is timeoutWhy's words for each conjunct of TimeoutV
// and TimeoutOutV that names the node alone.
var timeoutWhyFormat = map[Conjunct]string{
	NotBlocked:          "no input of %s is blocked: no barrier has arrived",
	AlreadySwitched:     "%s has already switched to unaligned",
	FeedsForceAligned:   "%s feeds a force-aligned edge: it aligns however long it takes",
	ForceAlignedPending: "the barrier of a force-aligned input of %s has not arrived",
	NotRecorded:         "%s has not recorded: it is still aligning",
	NothingQueued:       "no output of %s it may overtake holds records ahead of its barrier",
}

// timeoutBound checks NextA's quantifiers (lines 184-185): TimeoutV
// names a node of NonSrc, TimeoutOutV one of Node, of an adaptive model.
func (cfg *Config) timeoutBound(a Action) Conjunct {
	switch {
	case a.Kind == ActTimeout && !cfg.timeoutNode(a.Node):
		return NoNonSrc
	case a.Kind == ActTimeoutOut && !(cfg.Variant.Adaptive() && a.Node >= 0 && a.Node < len(cfg.Nodes)):
		return NoNode
	}
	return Enabled
}

// timeoutNode reports whether n \in NonSrc in an adaptive model: the
// quantifier of TimeoutV's disjunct of NextA (line 184).
func (cfg *Config) timeoutNode(n int) bool {
	return cfg.Variant.Adaptive() && n >= 0 && n < len(cfg.Nodes) && cfg.Kind[n] != Source
}

// noNonSrcWhy says why a TimeoutV instance names no node of NonSrc, or a
// TimeoutOutV instance none of Node.
func (cfg *Config) noNonSrcWhy(n int) string {
	switch {
	case !cfg.Variant.Adaptive():
		return fmt.Sprintf("%s has no timeouts (tla/BarrierAdaptive.tla's specifications do)", cfg.Variant)
	case n < 0 || n >= len(cfg.Nodes):
		return fmt.Sprintf("the model has no node %d", n)
	}
	return fmt.Sprintf("%s is a source", cfg.Nodes[n])
}
