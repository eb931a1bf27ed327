package barrier

import (
	"fmt"
	"math/bits"
)

// This file mirrors tla/BarrierAdaptive.tla, the adaptive mode: a
// checkpoint starts aligned and an operator whose alignment times out
// switches it to unaligned. Line numbers refer to that module.

// SnapType mirrors Type (line 48): the type of a node's snapshot, or
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

// adaptiveConstants checks the constants of lines 40-46 against the ASSUME
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
	for _, e := range k.ForceAligned {
		i, ok := cfg.EdgeIndex(e[0], e[1])
		if !ok || cfg.Back[i] {
			return &ConstantError{"ForceAligned", fmt.Sprintf("<<%q, %q>> is not an edge of Edge \\ Back", e[0], e[1])}
		}
		cfg.ForceAligned[i] = true
	}
	return nil
}

// modeType is the type of n's snapshot its mode says (mode[n], line 51).
func modeType(switched uint64, n int) SnapType {
	if switched&(1<<n) != 0 {
		return TypeUnaligned
	}
	return TypeAligned
}

// recvBarrierA mirrors RecvBarrierA(e) (lines 80-87): RecvBarrierV(e,
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

// timeoutEnabled checks TimeoutV's enabling conjuncts (lines 100-106) in
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

// feedsForceAligned reports Out(n) \cap ForceAligned # {} (line 104).
func (cfg *Config) feedsForceAligned(n int) bool {
	for _, e := range cfg.out[n] {
		if cfg.ForceAligned[e] {
			return true
		}
	}
	return false
}

// forceAlignedIn reports In(n) \cap ForceAligned \subseteq b (line 105).
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
	recordNode(cfg, st, ns, n)                     // line 107
	startRecording(cfg, ns, n, st.Bar[n])          // lines 108-110
	sendBarriers(cfg, ns, n, f.persist, Unaligned) // line 111
	ns.Switched |= 1 << n                          // line 112
	ns.Reported[n] = TypeUnaligned                 // line 113
	if f.stale {
		ns.Reported[n] = modeType(st.Switched, n)
	}
	if cfg.aligned(n, st.Bar[n], true) { // line 114
		ns.CutAligned |= 1 << n
	} else {
		ns.CutAligned &^= 1 << n
	}
	return ns, Enabled
}

// adaptiveParams is params for the actions of NextA (lines 121-127):
// EmitA(s), InjectA(s), ProcessA(e, log), RecvBarrierA(e),
// TimeoutV(n, persist, honour, late, stale), RestoreA.
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
	}
	return "RestoreA", nil
}

// AdaptiveTypeOK mirrors AdaptiveTypeOK (lines 154-159): BarrierTypeOK,
// and the new variables in their domains (the Go types give the rest):
// only nodes that are not sources switch, report or are aligned.
func AdaptiveTypeOK(cfg *Config, st *State) bool {
	if !TypeOK(cfg, st) {
		return false
	}
	for n, k := range cfg.Kind {
		if k == Source && (st.Switched|st.CutAligned)&(1<<n) != 0 || st.Reported[n] > TypeUnaligned {
			return false
		}
	}
	all := uint64(1)<<len(cfg.Nodes) - 1
	return (st.Switched|st.CutAligned)&^all == 0
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

// ReportedTypeTaken mirrors ReportedTypeTaken (line 172), with TakenType
// (line 63).
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
	name := cfg.Nodes[n]
	switch k {
	case NotBlocked:
		return fmt.Sprintf("no input of %s is blocked: no barrier has arrived", name)
	case AlreadySwitched:
		return fmt.Sprintf("%s has already switched to unaligned", name)
	case TimeoutsSpent:
		return fmt.Sprintf("%d of MaxTimeouts = %d alignments have timed out", bits.OnesCount64(st.Switched), cfg.MaxTimeouts)
	case FeedsForceAligned:
		return fmt.Sprintf("%s feeds a force-aligned edge: it aligns however long it takes", name)
	case ForceAlignedPending:
		return fmt.Sprintf("the barrier of a force-aligned input of %s has not arrived", name)
	}
	return ""
}

// timeoutNode reports whether n \in NonSrc in an adaptive model: the
// quantifier of TimeoutV's disjunct of NextA (line 126).
func (cfg *Config) timeoutNode(n int) bool {
	return cfg.Variant.Adaptive() && n >= 0 && n < len(cfg.Nodes) && cfg.Kind[n] != Source
}

// noNonSrcWhy says why a TimeoutV instance names no node of NonSrc.
func (cfg *Config) noNonSrcWhy(n int) string {
	switch {
	case !cfg.Variant.Adaptive():
		return fmt.Sprintf("%s has no timeouts (tla/BarrierAdaptive.tla's specifications do)", cfg.Variant)
	case n < 0 || n >= len(cfg.Nodes):
		return fmt.Sprintf("the model has no node %d", n)
	}
	return fmt.Sprintf("%s is a source", cfg.Nodes[n])
}
