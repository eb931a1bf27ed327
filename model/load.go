package model

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
)

// specModules are the Chandy-Lamport spec modules of tla/ and the
// specifications each defines (a module also has those of the modules
// it extends).
var specModules = map[string][]Variant{
	"ChandyLamport":          {VariantSpec},
	"ChandyLamportNonFIFO":   {VariantSpec, VariantNonFIFO},
	"ChandyLamportNoRecord":  {VariantSpec, VariantNoRecord},
	"ChandyLamportNoForward": {VariantSpec, VariantNoForward},
	"ChandyLamportLossy":     {VariantSpec, VariantLossy},
	// ChandyLamportFaults defines Spec too (by EXTENDS), but Spec leaves
	// the faults variables unconstrained: TLC cannot check it.
	"ChandyLamportFaults": {VariantFaults, VariantNoDetector, VariantRecoverAny},
}

// constNames are the CONSTANTS of tla/ChandyLamport.tla (lines 22-29);
// faultConstNames those tla/ChandyLamportFaults.tla adds (lines 26-29).
var (
	constNames      = []string{"Proc", "Chan", "InitBal", "Amount", "Budget", "Snap", "Initiator"}
	faultConstNames = []string{"MaxCrash", "MaxRecover", "FalseSuspicion"}
)

// Load reads the TLC model cfgPath (a .cfg file) and the module of the
// same base name beside it (tlcmodel.LoadRaw), and returns the model.
// Errors name the file and line at fault.
func Load(cfgPath string) (*Config, error) {
	raw, err := tlcmodel.LoadRaw(cfgPath)
	if err != nil {
		return nil, err
	}
	return FromRaw(raw)
}

// Parse is Load on file contents; the paths are used in errors and the
// module's name must be the .tla file's base name.
func Parse(cfgPath, cfgSrc, tlaPath, tlaSrc string) (*Config, error) {
	raw, err := tlcmodel.ParseRaw(cfgPath, cfgSrc, tlaPath, tlaSrc)
	if err != nil {
		return nil, err
	}
	return FromRaw(raw)
}

// FromRaw builds the model of a parsed TLC model: its specification, its
// invariants and properties by name, its constants checked against the
// spec's ASSUME (NewConfig), each error at the line at fault.
func FromRaw(raw *tlcmodel.Raw) (*Config, error) {
	if _, ok := specModules[raw.SpecModule]; !ok {
		return nil, &tlcmodel.Error{File: raw.Module, Msg: fmt.Sprintf("%s extends %s, which package model does not check", raw.Name, raw.SpecModule)}
	}
	variant, err := specification(raw)
	if err != nil {
		return nil, err
	}
	if err := checkPropertyNames(raw); err != nil {
		return nil, err
	}
	faults := slices.Contains(raw.Extends, "ChandyLamportFaults")
	if err := raw.Declares(constantNames(faults)); err != nil {
		return nil, err
	}
	cs := consts(raw.Constants)
	k, err := cs.constants(faults)
	if err != nil {
		return nil, err
	}
	cfg, err := NewConfig(k, variant, props(raw.Invariants), props(raw.Properties))
	if err != nil {
		return nil, cs.placeError(err, raw)
	}
	cfg.Name = raw.Name
	cfg.CheckDeadlock = raw.CheckDeadlock
	return cfg, nil
}

// specification is the .cfg's SPECIFICATION, which the module (through
// EXTENDS) must define.
func specification(raw *tlcmodel.Raw) (Variant, error) {
	have := map[Variant]bool{}
	for _, e := range raw.Extends {
		for _, v := range specModules[e] {
			have[v] = true
		}
	}
	variant := Variant(raw.Spec)
	if variant.Valid() && have[variant] {
		return variant, nil
	}
	names := slices.Sorted(maps.Keys(have))
	return "", &tlcmodel.Error{File: raw.File, Line: raw.SpecLine, Msg: fmt.Sprintf("SPECIFICATION %s is not defined by %s (EXTENDS %s defines %s)",
		raw.Spec, raw.Name, strings.Join(raw.Extends, ", "), joinVariants(names))}
}

func joinVariants(vs []Variant) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// checkPropertyNames: every INVARIANT is a state invariant of the model and every
// PROPERTY a temporal property.
func checkPropertyNames(raw *tlcmodel.Raw) error {
	for i, name := range raw.Invariants {
		if _, ok := InvariantByName(spec.Property(name)); !ok {
			return &tlcmodel.Error{File: raw.File, Line: raw.InvLines[i], Msg: fmt.Sprintf("unknown invariant %s (known: %s)", name, spec.JoinProperties(spec.StateInvariants))}
		}
	}
	for i, name := range raw.Properties {
		if !spec.Property(name).IsTemporal() {
			return &tlcmodel.Error{File: raw.File, Line: raw.PropLines[i], Msg: fmt.Sprintf("unknown property %s (known: %s)", name, spec.JoinProperties(spec.TemporalProperties))}
		}
	}
	return nil
}

// constantNames are the constants the module declares (through EXTENDS).
func constantNames(faults bool) []string {
	if faults {
		return slices.Concat(constNames, faultConstNames)
	}
	return constNames
}

// consts are the model's constants by name.
type consts map[string]tlcmodel.Const

// bad is an error in constant name, at the line that assigns it.
func (cs consts) bad(name, format string, args ...any) error {
	return cs[name].Errorf(name, format, args...)
}

// placeError puts an error of NewConfig at the line of the constant it
// names, else at the CONSTANTS line.
func (cs consts) placeError(err error, raw *tlcmodel.Raw) error {
	var ce *ConstantError
	if errors.As(err, &ce) {
		if c, ok := cs[ce.Constant]; ok {
			return &tlcmodel.Error{File: c.File, Line: c.Line, Msg: err.Error()}
		}
	}
	return &tlcmodel.Error{File: raw.File, Line: raw.ConstLine, Msg: err.Error()}
}

// constants checks each constant's shape and converts it; faults: the
// module is tla/ChandyLamportFaults.tla's, with its three constants more.
func (cs consts) constants(faults bool) (Constants, error) {
	var k Constants
	var err error
	if k.Topo, err = cs.topology(); err != nil {
		return k, err
	}
	if k.InitBal, err = cs.procFunc("InitBal", k.Topo); err != nil {
		return k, err
	}
	if k.Budget, err = cs.budget(k.Topo); err != nil {
		return k, err
	}
	if k.Amount, err = cs.posInts("Amount"); err != nil {
		return k, err
	}
	if k.Snap, err = cs.snaps(); err != nil {
		return k, err
	}
	if k.Initiator, err = cs.initiator(k.Topo, k.Snap); err != nil || !faults {
		return k, err
	}
	return k, cs.faultConstants(&k)
}

// budget is Budget \in [Proc -> Nat].
func (cs consts) budget(topo *spec.Topology) (map[spec.ProcID]int, error) {
	budget, err := cs.procFunc("Budget", topo)
	if err != nil {
		return nil, err
	}
	out := map[spec.ProcID]int{}
	for p, b := range budget {
		out[p] = int(b)
	}
	return out, nil
}

// snaps is Snap \subseteq Nat \ {0}.
func (cs consts) snaps() ([]spec.SnapID, error) {
	ns, err := cs.posInts("Snap")
	var out []spec.SnapID
	for _, s := range ns {
		out = append(out, spec.SnapID(s))
	}
	return out, err
}

// faultConstants sets MaxCrash, MaxRecover \in Nat and FalseSuspicion \in
// BOOLEAN (tla/ChandyLamportFaults.tla line 31).
func (cs consts) faultConstants(k *Constants) error {
	for _, nc := range []struct {
		name string
		dst  *int
	}{{"MaxCrash", &k.MaxCrash}, {"MaxRecover", &k.MaxRecover}} {
		n, ok := cs[nc.name].Value.(int64)
		if !ok || n < 0 || n > 1<<20 {
			return cs.bad(nc.name, "want a natural number (at most 2^20), got %s", tlcmodel.Describe(cs[nc.name].Value))
		}
		*nc.dst = int(n)
	}
	b, ok := cs["FalseSuspicion"].Value.(bool)
	if !ok {
		return cs.bad("FalseSuspicion", "want TRUE or FALSE, got %s", tlcmodel.Describe(cs["FalseSuspicion"].Value))
	}
	k.FalseSuspicion = b
	return nil
}

// topology is Proc (a non-empty set of strings) and Chan (a set of pairs
// <<p, q>>), checked against the ASSUME of the spec.
func (cs consts) topology() (*spec.Topology, error) {
	procs, err := cs.procs()
	if err != nil {
		return nil, err
	}
	chans, err := cs.chans()
	if err != nil {
		return nil, err
	}
	topo, err := spec.NewTopology(procs, chans)
	if err != nil {
		return nil, cs.bad("Chan", "%v (the spec ASSUMEs Chan \\subseteq Proc \\X Proc, no self-loops, strongly connected)", err)
	}
	return topo, nil
}

// procs is Proc, a non-empty set of strings.
func (cs consts) procs() ([]spec.ProcID, error) {
	set, ok := tlcmodel.Set(cs["Proc"].Value)
	if !ok || len(set) == 0 {
		return nil, cs.bad("Proc", "want a non-empty set of process names, got %s", tlcmodel.Describe(cs["Proc"].Value))
	}
	var procs []spec.ProcID
	for _, x := range set {
		s, ok := x.(string)
		if !ok {
			return nil, cs.bad("Proc", "want strings, got %s", tlcmodel.Describe(x))
		}
		procs = append(procs, spec.ProcID(s))
	}
	return procs, nil
}

// chans is Chan, a set of pairs of strings.
func (cs consts) chans() ([]spec.Channel, error) {
	set, ok := tlcmodel.Set(cs["Chan"].Value)
	if !ok {
		return nil, cs.bad("Chan", "want a set of pairs <<p, q>>, got %s", tlcmodel.Describe(cs["Chan"].Value))
	}
	var chans []spec.Channel
	for _, x := range set {
		tp, ok := tlcmodel.Tuple(x)
		if !ok || len(tp) != 2 {
			return nil, cs.bad("Chan", "want pairs <<p, q>>, got %s", tlcmodel.Describe(x))
		}
		a, ok1 := tp[0].(string)
		b, ok2 := tp[1].(string)
		if !ok1 || !ok2 {
			return nil, cs.bad("Chan", "want pairs of process names")
		}
		chans = append(chans, spec.Channel{From: spec.ProcID(a), To: spec.ProcID(b)})
	}
	return chans, nil
}

// procFunc is constant name as a function [Proc -> Nat], written as a
// record [P1 |-> n, ...].
func (cs consts) procFunc(name string, topo *spec.Topology) (map[spec.ProcID]int64, error) {
	keys, ok := tlcmodel.RecordKeys(cs[name].Value)
	if !ok {
		return nil, cs.bad(name, "want a record [P1 |-> n, ...] over Proc, got %s", tlcmodel.Describe(cs[name].Value))
	}
	r, _ := tlcmodel.Record(cs[name].Value)
	out := map[spec.ProcID]int64{}
	for _, k := range keys {
		n, ok := r[k].(int64)
		if !ok || n < 0 {
			return nil, cs.bad(name, "%s |-> must be a natural number", k)
		}
		if !topo.Has(spec.ProcID(k)) {
			return nil, cs.bad(name, "%s is not a process", k)
		}
		out[spec.ProcID(k)] = n
	}
	if len(out) != len(topo.Procs) {
		return nil, cs.bad(name, "want an entry for every process of Proc (%d), got %d", len(topo.Procs), len(out))
	}
	return out, nil
}

// posInts is constant name as a finite set of positive integers.
func (cs consts) posInts(name string) ([]int64, error) {
	s, ok := tlcmodel.Set(cs[name].Value)
	if !ok {
		return nil, cs.bad(name, "want a finite set of positive integers, got %s", tlcmodel.Describe(cs[name].Value))
	}
	var out []int64
	for _, x := range s {
		n, ok := x.(int64)
		if !ok || n <= 0 {
			return nil, cs.bad(name, "want positive integers only (the spec ASSUMEs %s \\subseteq Nat \\ {0})", name)
		}
		out = append(out, n)
	}
	return out, nil
}

// initiator is Initiator \in [Snap -> Proc], written as a tuple (a
// function on 1..n).
func (cs consts) initiator(topo *spec.Topology, snaps []spec.SnapID) (map[spec.SnapID]spec.ProcID, error) {
	tp, ok := tlcmodel.Tuple(cs["Initiator"].Value)
	if !ok {
		return nil, cs.bad("Initiator", "want a tuple <<p1, p2, ...>> (a function on 1..n = Snap), got %s", tlcmodel.Describe(cs["Initiator"].Value))
	}
	domain := fmt.Sprintf("its domain 1..%d is not Snap (the spec ASSUMEs Initiator \\in [Snap -> Proc])", len(tp))
	if len(tp) != len(snaps) {
		return nil, cs.bad("Initiator", "%s", domain)
	}
	out := map[spec.SnapID]spec.ProcID{}
	for i, x := range tp {
		s, ok := x.(string)
		if !ok || !topo.Has(spec.ProcID(s)) {
			return nil, cs.bad("Initiator", "entry %d is not a process", i+1)
		}
		out[spec.SnapID(i+1)] = spec.ProcID(s)
	}
	for _, s := range snaps {
		if _, ok := out[s]; !ok {
			return nil, cs.bad("Initiator", "%s", domain)
		}
	}
	return out, nil
}

// props converts the names of a model file's INVARIANT or PROPERTY section.
func props(names []string) []spec.Property {
	ps := make([]spec.Property, len(names))
	for i, n := range names {
		ps[i] = spec.Property(n)
	}
	return ps
}
