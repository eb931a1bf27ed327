package tlcmodel

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
)

// Error is an error in a model file, at a line (0: the whole file).
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Load reads the TLC model cfgPath (a .cfg file) and the module of the same
// base name beside it, and returns the model. Errors name the file and
// line at fault.
func Load(cfgPath string) (*model.Config, error) {
	src, tlaPath, msrc, err := readModel(cfgPath)
	if err != nil {
		return nil, err
	}
	return Parse(cfgPath, string(src), tlaPath, string(msrc))
}

// Parse is Load on file contents; the paths are used in errors and the
// module's name must be the .tla file's base name.
func Parse(cfgPath, cfgSrc, tlaPath, tlaSrc string) (*model.Config, error) {
	cf, err := parseCfg(cfgPath, cfgSrc)
	if err != nil {
		return nil, err
	}
	mod, err := parseModule(tlaPath, tlaSrc)
	if err != nil {
		return nil, err
	}
	if err := checkModuleName(mod, tlaPath); err != nil {
		return nil, err
	}
	if mod.other != "" {
		return nil, &Error{tlaPath, 0, fmt.Sprintf("%s extends %s, which package model does not check (LoadRaw reads it)", mod.name, mod.other)}
	}
	variant, err := specification(cf, mod)
	if err != nil {
		return nil, err
	}
	if err := checkNames(cf); err != nil {
		return nil, err
	}
	consts, err := resolve(cf, mod)
	if err != nil {
		return nil, err
	}
	k, err := consts.constants(mod.faults())
	if err != nil {
		return nil, err
	}
	cfg, err := model.NewConfig(k, variant, props(cf.invariants), props(cf.properties))
	if err != nil {
		return nil, consts.placeError(err, cf)
	}
	cfg.Name = mod.name
	cfg.CheckDeadlock = cf.checkDeadlock
	return cfg, nil
}

// checkModuleName: the module's name is its file's base name, as SANY
// requires.
func checkModuleName(mod *module, tlaPath string) error {
	base := strings.TrimSuffix(filepath.Base(tlaPath), filepath.Ext(tlaPath))
	if mod.name != base {
		return &Error{tlaPath, 1, fmt.Sprintf("module is named %s, but the file is %s.tla", mod.name, base)}
	}
	return nil
}

// specification is the .cfg's SPECIFICATION, which the module (through
// EXTENDS) must define.
func specification(cf *cfgFile, mod *module) (model.Variant, error) {
	variant := model.Variant(cf.spec)
	if variant.Valid() && mod.specs[variant] {
		return variant, nil
	}
	var have []string
	for v := range mod.specs {
		have = append(have, string(v))
	}
	sort.Strings(have)
	return "", &Error{cf.file, cf.specLine, fmt.Sprintf("SPECIFICATION %s is not defined by %s (EXTENDS %s defines %s)",
		cf.spec, mod.name, strings.Join(mod.extends, ", "), strings.Join(have, ", "))}
}

// checkNames: every INVARIANT is a state invariant of the model and every
// PROPERTY a temporal property.
func checkNames(cf *cfgFile) error {
	for i, name := range cf.invariants {
		if _, ok := model.InvariantByName(spec.Property(name)); !ok {
			return &Error{cf.file, cf.invLines[i], fmt.Sprintf("unknown invariant %s (known: %s)", name, spec.JoinProperties(spec.StateInvariants))}
		}
	}
	for i, name := range cf.properties {
		if !spec.Property(name).IsTemporal() {
			return &Error{cf.file, cf.propLines[i], fmt.Sprintf("unknown property %s (known: %s)", name, spec.JoinProperties(spec.TemporalProperties))}
		}
	}
	return nil
}

// constNames are the CONSTANTS of tla/ChandyLamport.tla (lines 22-29);
// faultConstNames those tla/ChandyLamportFaults.tla adds (lines 26-29).
var (
	constNames      = []string{"Proc", "Chan", "InitBal", "Amount", "Budget", "Snap", "Initiator"}
	faultConstNames = []string{"MaxCrash", "MaxRecover", "FalseSuspicion"}
)

// faults reports whether the module extends tla/ChandyLamportFaults.tla.
func (m *module) faults() bool { return slices.Contains(m.extends, "ChandyLamportFaults") }

// constantNames are the constants the module declares (through EXTENDS).
func (m *module) constantNames() []string {
	if m.faults() {
		return slices.Concat(constNames, faultConstNames)
	}
	return constNames
}

// resolved is a constant's value and where it was written.
type resolved struct {
	v    Value
	file string
	line int
}

// consts are the model's constants by name.
type consts map[string]resolved

// resolve gives every constant its value: written in the .cfg (X = v) or
// a definition of the module (X <- Name).
func resolve(cf *cfgFile, mod *module) (consts, error) {
	out := consts{}
	names := mod.constantNames()
	for _, c := range cf.constants {
		if !slices.Contains(names, c.name) {
			return nil, &Error{cf.file, c.line, fmt.Sprintf("unknown constant %s (the spec declares %s)", c.name, strings.Join(names, ", "))}
		}
		if c.ref == "" {
			out[c.name] = resolved{c.value, cf.file, c.line}
			continue
		}
		d, ok := mod.defs[c.ref]
		if !ok {
			return nil, &Error{cf.file, c.line, fmt.Sprintf("%s <- %s: %s is not defined in %s", c.name, c.ref, c.ref, mod.file)}
		}
		out[c.name] = resolved{d.val, mod.file, d.line}
	}
	for _, name := range names {
		if _, ok := out[name]; !ok {
			return nil, &Error{cf.file, cf.constLine, fmt.Sprintf("constant %s is not assigned", name)}
		}
	}
	return out, nil
}

// bad is an error in constant name, at the line that assigns it.
func (cs consts) bad(name, format string, args ...any) error {
	r := cs[name]
	return &Error{r.file, r.line, fmt.Sprintf("%s: ", name) + fmt.Sprintf(format, args...)}
}

// placeError puts an error of model.NewConfig at the line of the constant
// it names, else at the CONSTANTS line.
func (cs consts) placeError(err error, cf *cfgFile) error {
	var ce *model.ConstantError
	if errors.As(err, &ce) {
		if r, ok := cs[ce.Constant]; ok {
			return &Error{r.file, r.line, err.Error()}
		}
	}
	return &Error{cf.file, cf.constLine, err.Error()}
}

// constants checks each constant's shape and converts it; faults: the
// module is tla/ChandyLamportFaults.tla's, with its three constants more.
func (cs consts) constants(faults bool) (model.Constants, error) {
	var k model.Constants
	var err error
	if k.Topo, err = cs.topology(); err != nil {
		return k, err
	}
	if k.InitBal, err = cs.procFunc("InitBal", k.Topo); err != nil {
		return k, err
	}
	budget, err := cs.procFunc("Budget", k.Topo)
	if err != nil {
		return k, err
	}
	k.Budget = map[spec.ProcID]int{}
	for p, b := range budget {
		k.Budget[p] = int(b)
	}
	if k.Amount, err = cs.posInts("Amount"); err != nil {
		return k, err
	}
	snaps, err := cs.posInts("Snap")
	if err != nil {
		return k, err
	}
	for _, s := range snaps {
		k.Snap = append(k.Snap, spec.SnapID(s))
	}
	if k.Initiator, err = cs.initiator(k.Topo, k.Snap); err != nil || !faults {
		return k, err
	}
	return k, cs.faultConstants(&k)
}

// faultConstants sets MaxCrash, MaxRecover \in Nat and FalseSuspicion \in
// BOOLEAN (tla/ChandyLamportFaults.tla line 31).
func (cs consts) faultConstants(k *model.Constants) error {
	for _, nc := range []struct {
		name string
		dst  *int
	}{{"MaxCrash", &k.MaxCrash}, {"MaxRecover", &k.MaxRecover}} {
		n, ok := cs[nc.name].v.(int64)
		if !ok || n < 0 || n > 1<<20 {
			return cs.bad(nc.name, "want a natural number (at most 2^20), got %s", describe(cs[nc.name].v))
		}
		*nc.dst = int(n)
	}
	b, ok := cs["FalseSuspicion"].v.(bool)
	if !ok {
		return cs.bad("FalseSuspicion", "want TRUE or FALSE, got %s", describe(cs["FalseSuspicion"].v))
	}
	k.FalseSuspicion = b
	return nil
}

// topology is Proc (a non-empty set of strings) and Chan (a set of pairs
// <<p, q>>), checked against the ASSUME of the spec.
func (cs consts) topology() (*spec.Topology, error) {
	procSet, ok := cs["Proc"].v.(setV)
	if !ok || len(procSet) == 0 {
		return nil, cs.bad("Proc", "want a non-empty set of process names, got %s", describe(cs["Proc"].v))
	}
	var procs []spec.ProcID
	for _, x := range procSet {
		s, ok := x.(string)
		if !ok {
			return nil, cs.bad("Proc", "want strings, got %s", describe(x))
		}
		procs = append(procs, spec.ProcID(s))
	}
	chanSet, ok := cs["Chan"].v.(setV)
	if !ok {
		return nil, cs.bad("Chan", "want a set of pairs <<p, q>>, got %s", describe(cs["Chan"].v))
	}
	var chans []spec.Channel
	for _, x := range chanSet {
		tp, ok := x.(tupleV)
		if !ok || len(tp) != 2 {
			return nil, cs.bad("Chan", "want pairs <<p, q>>, got %s", describe(x))
		}
		a, ok1 := tp[0].(string)
		b, ok2 := tp[1].(string)
		if !ok1 || !ok2 {
			return nil, cs.bad("Chan", "want pairs of process names")
		}
		chans = append(chans, spec.Channel{From: spec.ProcID(a), To: spec.ProcID(b)})
	}
	topo, err := spec.NewTopology(procs, chans)
	if err != nil {
		return nil, cs.bad("Chan", "%v (the spec ASSUMEs Chan \\subseteq Proc \\X Proc, no self-loops, strongly connected)", err)
	}
	return topo, nil
}

// procFunc is constant name as a function [Proc -> Nat], written as a
// record [P1 |-> n, ...].
func (cs consts) procFunc(name string, topo *spec.Topology) (map[spec.ProcID]int64, error) {
	r, ok := cs[name].v.(recordV)
	if !ok {
		return nil, cs.bad(name, "want a record [P1 |-> n, ...] over Proc, got %s", describe(cs[name].v))
	}
	out := map[spec.ProcID]int64{}
	for i, k := range r.keys {
		n, ok := r.vals[i].(int64)
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
	s, ok := cs[name].v.(setV)
	if !ok {
		return nil, cs.bad(name, "want a finite set of positive integers, got %s", describe(cs[name].v))
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
	tp, ok := cs["Initiator"].v.(tupleV)
	if !ok {
		return nil, cs.bad("Initiator", "want a tuple <<p1, p2, ...>> (a function on 1..n = Snap), got %s", describe(cs["Initiator"].v))
	}
	if len(tp) != len(snaps) {
		return nil, cs.bad("Initiator", "its domain 1..%d is not Snap (the spec ASSUMEs Initiator \\in [Snap -> Proc])", len(tp))
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
			return nil, cs.bad("Initiator", "its domain 1..%d is not Snap (the spec ASSUMEs Initiator \\in [Snap -> Proc])", len(tp))
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
