package model

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/markerwave/markerwave/spec"
)

// Variant names the behaviour specification a model checks: the Spec of
// tla/ChandyLamport.tla or one of the counter-example specs of the variant
// modules, which differ from it only in their next-state relation (and
// fairness).
type Variant string

const (
	// VariantSpec is Spec == Init /\ [][Next]_vars /\ Fairness
	// (tla/ChandyLamport.tla lines 249-260).
	VariantSpec Variant = "Spec"
	// VariantNonFIFO is SpecNonFIFO (tla/ChandyLamportNonFIFO.tla): any
	// queued message may be received; no fairness.
	VariantNonFIFO Variant = "SpecNonFIFO"
	// VariantNoRecord is SpecNoRecord (tla/ChandyLamportNoRecord.tla):
	// RecvAppNoRecord replaces RecvApp; no fairness.
	VariantNoRecord Variant = "SpecNoRecord"
	// VariantNoForward is SpecNoForward (tla/ChandyLamportNoForward.tla):
	// RecvMarkerNoForward replaces RecvMarker; weak fairness on RecvApp and
	// RecvMarkerNoForward.
	VariantNoForward Variant = "SpecNoForward"
	// VariantLossy is SpecLossy (tla/ChandyLamportLossy.tla): Next or Lose,
	// a channel losing its head; the fairness of Spec.
	VariantLossy Variant = "SpecLossy"
	// VariantFaults is SpecFaults (tla/ChandyLamportFaults.tla line 231):
	// crashes, a failure detector, aborts and rollback recovery.
	VariantFaults Variant = "SpecFaults"
	// VariantNoDetector is SpecNoDetector (tla/ChandyLamportFaults.tla
	// line 232): crashes but nothing ever suspected.
	VariantNoDetector Variant = "SpecNoDetector"
	// VariantRecoverAny is SpecRecoverAny (tla/ChandyLamportFaults.tla
	// line 233): RecoverAny in place of Recover; no fairness.
	VariantRecoverAny Variant = "SpecRecoverAny"
)

// Valid reports whether v is one of the eight specifications.
func (v Variant) Valid() bool {
	switch v {
	case VariantSpec, VariantNonFIFO, VariantNoRecord, VariantNoForward, VariantLossy:
		return true
	}
	return v.Faults()
}

// Faults reports whether v is a specification of
// tla/ChandyLamportFaults.tla.
func (v Variant) Faults() bool {
	return v == VariantFaults || v == VariantNoDetector || v == VariantRecoverAny
}

// Constants are the CONSTANTS of tla/ChandyLamport.tla (lines 22-29) in Go
// form. Snap is DOMAIN Initiator when left nil.
type Constants struct {
	Topo      *spec.Topology              // Proc and Chan
	InitBal   map[spec.ProcID]int64       // [Proc -> Nat]
	Amount    []int64                     // a finite set of positive amounts
	Budget    map[spec.ProcID]int         // [Proc -> Nat]
	Snap      []spec.SnapID               // a finite set of positive ids
	Initiator map[spec.SnapID]spec.ProcID // [Snap -> Proc]

	// The constants of tla/ChandyLamportFaults.tla (lines 26-29), read
	// only by its specifications.
	MaxCrash       int  // how many crashes a behaviour may have
	MaxRecover     int  // how many recoveries
	FalseSuspicion bool // may the failure detector suspect a live process?
}

// Config is one model: the constants (in dense, sorted form: processes and
// channels indexed as in Topo, snapshots as in Snap), the specification
// variant, and what to check (the .cfg's INVARIANTS and PROPERTIES, in
// order). Build it with NewConfig or Load; it is read-only afterwards.
type Config struct {
	Name      string
	Topo      *spec.Topology // Proc = Topo.Procs, Chan = Topo.Chans (both sorted)
	InitBal   []int64        // by process index
	Amount    []int64        // sorted ascending
	Budget    []int          // by process index
	Snap      []spec.SnapID  // sorted ascending
	Initiator []int          // by snapshot index: the initiator's process index
	Variant   Variant
	// MaxCrash, MaxRecover and FalseSuspicion are the faults constants
	// (Constants), for the specifications of tla/ChandyLamportFaults.tla.
	MaxCrash       int
	MaxRecover     int
	FalseSuspicion bool
	Invariants     []spec.Property
	Properties     []spec.Property
	CheckDeadlock  bool

	// Derived from the constants.
	from, to   []int   // channel index -> sender, receiver process index
	in, out    [][]int // process index -> incoming, outgoing channel indexes
	chanIdx    []int   // from*nProc+to -> channel index or -1
	totalMoney int64   // TotalMoney (line 93)
	maxRcvd    int     // MaxRcvd (line 342)
	longSeqs   *longSeqs
}

// ConstantError is an error of NewConfig in one of the spec's constants.
type ConstantError struct {
	Constant string // Proc, Chan, InitBal, Amount, Budget, Snap or Initiator
	Msg      string
}

func (e *ConstantError) Error() string { return "model: " + e.Msg }

func constErr(name, format string, args ...any) error {
	return &ConstantError{Constant: name, Msg: fmt.Sprintf(format, args...)}
}

// MaxProcs bounds the number of processes (recorded sets are bit masks).
const MaxProcs = 128

// NewConfig validates k against the ASSUME of tla/ChandyLamport.tla (lines
// 42-50; the topology itself checks ids, self-loops and strong
// connectivity) and the names to check, and returns the model. An error in
// a constant is a *ConstantError naming it.
func NewConfig(k Constants, v Variant, invariants, properties []spec.Property) (*Config, error) {
	if k.Topo == nil {
		return nil, fmt.Errorf("model: no topology")
	}
	if !v.Valid() {
		return nil, fmt.Errorf("model: unknown specification %q (want Spec, SpecNonFIFO, SpecNoRecord, SpecNoForward, SpecLossy, SpecFaults, SpecNoDetector or SpecRecoverAny)", string(v))
	}
	if np := len(k.Topo.Procs); np > MaxProcs {
		return nil, constErr("Proc", "%d processes, at most %d supported", np, MaxProcs)
	}
	if err := checkNames(v, invariants, properties); err != nil {
		return nil, err
	}
	if k.MaxCrash < 0 || k.MaxRecover < 0 {
		return nil, constErr("MaxCrash", "MaxCrash = %d and MaxRecover = %d must be natural numbers", k.MaxCrash, k.MaxRecover)
	}
	cfg := &Config{Topo: k.Topo, Variant: v, Invariants: slices.Clone(invariants), Properties: slices.Clone(properties),
		MaxCrash: k.MaxCrash, MaxRecover: k.MaxRecover, FalseSuspicion: k.FalseSuspicion,
		longSeqs: &longSeqs{seqs: map[*uint64]*longSeq{}}}
	for _, step := range []func(Constants) error{cfg.setProcFuncs, cfg.setAmount, cfg.setSnaps} {
		if err := step(k); err != nil {
			return nil, err
		}
	}
	cfg.index()
	return cfg, nil
}

// checkNames: the invariants and properties are the model's, and defined
// by the variant's module: the faults properties by
// tla/ChandyLamportFaults.tla only, and SnapshotsComplete, which a
// recovery or an abort may falsify, by the fault-free ones only.
func checkNames(v Variant, invariants, properties []spec.Property) error {
	for _, name := range invariants {
		if _, ok := invariantFuncs[name]; !ok {
			return fmt.Errorf("model: unknown invariant %q (known: %s)", name, knownInvariants())
		}
		if name.Faults() && !v.Faults() {
			return fmt.Errorf("model: invariant %s is defined by ChandyLamportFaults.tla, not by the module of %s", name, v)
		}
	}
	for _, name := range properties {
		if !name.IsTemporal() {
			return fmt.Errorf("model: unknown property %q (known: %s)", name, spec.JoinProperties(spec.TemporalProperties))
		}
		if name.Faults() != v.Faults() {
			return fmt.Errorf("model: property %s is not checked of %s (SnapshotsEnd is the faults module's liveness, SnapshotsComplete the others')", name, v)
		}
	}
	return nil
}

// setProcFuncs sets InitBal \in [Proc -> Nat] and Budget \in [Proc ->
// Nat], and their sums TotalMoney and MaxRcvd.
func (cfg *Config) setProcFuncs(k Constants) error {
	t := cfg.Topo
	if err := checkDomain("InitBal", k.InitBal, t); err != nil {
		return err
	}
	if err := checkDomain("Budget", k.Budget, t); err != nil {
		return err
	}
	cfg.InitBal = make([]int64, len(t.Procs))
	cfg.Budget = make([]int, len(t.Procs))
	for i, p := range t.Procs {
		if k.InitBal[p] < 0 {
			return constErr("InitBal", "InitBal[%q] = %d is not a natural number", string(p), k.InitBal[p])
		}
		if k.Budget[p] < 0 {
			return constErr("Budget", "Budget[%q] = %d is not a natural number", string(p), k.Budget[p])
		}
		// Go's integers are bounded where TLA+'s are not: every sum of
		// balances (TotalMoney, line 93) and of budgets (MaxRcvd, line
		// 342) the model forms must fit, or TypeOK fails on an overflow.
		if cfg.totalMoney > math.MaxInt64-k.InitBal[p] {
			return constErr("InitBal", "InitBal sums past %d (the largest 64-bit integer): the model cannot represent TotalMoney", int64(math.MaxInt64))
		}
		if cfg.maxRcvd > math.MaxInt32-k.Budget[p] {
			return constErr("Budget", "Budget sums past %d: the model cannot count that many messages", math.MaxInt32)
		}
		cfg.InitBal[i] = k.InitBal[p]
		cfg.Budget[i] = k.Budget[p]
		cfg.totalMoney += k.InitBal[p]
		cfg.maxRcvd += k.Budget[p]
	}
	return nil
}

// setAmount sets Amount \subseteq Nat \ {0}, sorted.
func (cfg *Config) setAmount(k Constants) error {
	for _, a := range k.Amount {
		if a <= 0 {
			return constErr("Amount", "Amount holds %d, want positive amounts only", a)
		}
	}
	cfg.Amount = slices.Clone(k.Amount)
	slices.Sort(cfg.Amount)
	cfg.Amount = slices.Compact(cfg.Amount)
	return nil
}

// isAmount reports a \in Amount (a binary search of the sorted Amount:
// TypeOK asks it of every message in every channel and shadow after
// every step, and a map's hashing cost more).
func (cfg *Config) isAmount(a int64) bool {
	_, ok := slices.BinarySearch(cfg.Amount, a)
	return ok
}

// setSnaps sets Snap \subseteq Nat \ {0} (DOMAIN Initiator when k.Snap is
// nil), sorted, and Initiator \in [Snap -> Proc].
func (cfg *Config) setSnaps(k Constants) error {
	snaps := k.Snap
	if snaps == nil {
		for s := range k.Initiator {
			snaps = append(snaps, s)
		}
	}
	seen := map[spec.SnapID]bool{}
	for _, s := range snaps {
		if s == 0 {
			return constErr("Snap", "Snap holds 0, want positive ids only")
		}
		if !seen[s] {
			seen[s] = true
			cfg.Snap = append(cfg.Snap, s)
		}
	}
	sort.Slice(cfg.Snap, func(i, j int) bool { return cfg.Snap[i] < cfg.Snap[j] })
	if len(k.Initiator) != len(cfg.Snap) {
		return constErr("Initiator", "Initiator's domain has %d ids, Snap has %d: want Initiator \\in [Snap -> Proc]", len(k.Initiator), len(cfg.Snap))
	}
	for _, s := range cfg.Snap {
		p, ok := k.Initiator[s]
		if !ok {
			return constErr("Initiator", "Initiator has no entry for snapshot %d", s)
		}
		pi := cfg.Topo.ProcIndex(p)
		if pi < 0 {
			return constErr("Initiator", "Initiator[%d] = %q is not a process", s, string(p))
		}
		cfg.Initiator = append(cfg.Initiator, pi)
	}
	return nil
}

// index derives the channel and process indexes the actions use.
func (cfg *Config) index() {
	t := cfg.Topo
	np, nc := len(t.Procs), len(t.Chans)
	cfg.from = make([]int, nc)
	cfg.to = make([]int, nc)
	cfg.in = make([][]int, np)
	cfg.out = make([][]int, np)
	cfg.chanIdx = make([]int, np*np)
	for i := range cfg.chanIdx {
		cfg.chanIdx[i] = -1
	}
	for ci, c := range t.Chans {
		f, g := t.ProcIndex(c.From), t.ProcIndex(c.To)
		cfg.from[ci], cfg.to[ci] = f, g
		cfg.out[f] = append(cfg.out[f], ci)
		cfg.in[g] = append(cfg.in[g], ci)
		cfg.chanIdx[f*np+g] = ci
	}
}

// checkDomain: the function m has exactly the processes as its domain.
func checkDomain[V any](name string, m map[spec.ProcID]V, t *spec.Topology) error {
	for p := range m {
		if !t.Has(p) {
			return constErr(name, "%s has an entry for %q, which is not a process", name, string(p))
		}
	}
	if len(m) != len(t.Procs) {
		return constErr(name, "%s has %d entries, want one for each of the %d processes", name, len(m), len(t.Procs))
	}
	return nil
}

// NumProcs, NumChans and NumSnaps are |Proc|, |Chan| and |Snap|.
func (cfg *Config) NumProcs() int { return len(cfg.Topo.Procs) }

// NumChans is |Chan|.
func (cfg *Config) NumChans() int { return len(cfg.Topo.Chans) }

// NumSnaps is |Snap|.
func (cfg *Config) NumSnaps() int { return len(cfg.Snap) }

// TotalMoney mirrors TotalMoney == SumOver(InitBal, Proc) (line 93).
func (cfg *Config) TotalMoney() int64 { return cfg.totalMoney }

// MaxRcvd mirrors MaxRcvd == SumOver(Budget, Proc) (line 342).
func (cfg *Config) MaxRcvd() int { return cfg.maxRcvd }

// ChanIndex is the index of channel <<p, q>>, or -1 if it is not in Chan.
func (cfg *Config) ChanIndex(p, q spec.ProcID) int {
	pi, qi := cfg.Topo.ProcIndex(p), cfg.Topo.ProcIndex(q)
	if pi < 0 || qi < 0 {
		return -1
	}
	return cfg.chanIdx[pi*len(cfg.Topo.Procs)+qi]
}

// SnapIndex is the index of snapshot id s in Snap, or -1.
func (cfg *Config) SnapIndex(s spec.SnapID) int {
	for i, x := range cfg.Snap {
		if x == s {
			return i
		}
	}
	return -1
}

// Fair reports whether the variant's specification has weak fairness on
// the receive actions (Spec, SpecNoForward, SpecLossy, SpecFaults and
// SpecNoDetector do; the other three have no fairness conjunct).
func (cfg *Config) Fair() bool {
	switch cfg.Variant {
	case VariantSpec, VariantNoForward, VariantLossy, VariantFaults, VariantNoDetector:
		return true
	}
	return false
}

// Faults reports whether the model is of tla/ChandyLamportFaults.tla.
func (cfg *Config) Faults() bool { return cfg.Variant.Faults() }

// detector reports whether the variant's next-state relation has the
// failure detector (Detector, tla/ChandyLamportFaults.tla lines 212-215).
func (cfg *Config) detector() bool {
	return cfg.Variant == VariantFaults || cfg.Variant == VariantRecoverAny
}
