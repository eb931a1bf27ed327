package tlcmodel

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Raw is a TLC model read without interpreting its constants: the model
// of a spec module whose Go model is not package model's (model/barrier
// reads tla/BarrierSnapshots.tla's models this way).
type Raw struct {
	Name          string // the model's module
	SpecModule    string // the spec module it extends
	Spec          string // SPECIFICATION
	Invariants    []string
	Properties    []string
	CheckDeadlock bool
	Constants     map[string]Const
}

// Const is a constant's value (int64, string, bool, or what Set, Tuple and
// Record take apart) and where it was written.
type Const struct {
	Value Value
	File  string
	Line  int
}

// Errorf is an error at the line that assigns c.
func (c Const) Errorf(name, format string, args ...any) error {
	return &Error{c.File, c.Line, name + ": " + fmt.Sprintf(format, args...)}
}

// Set returns the elements of a set value, in a fixed order.
func Set(v Value) ([]Value, bool) {
	s, ok := v.(setV)
	return s, ok
}

// Tuple returns the elements of a tuple value.
func Tuple(v Value) ([]Value, bool) {
	t, ok := v.(tupleV)
	return t, ok
}

// Record returns the fields of a record value.
func Record(v Value) (map[string]Value, bool) {
	r, ok := v.(recordV)
	if !ok {
		return nil, false
	}
	m := make(map[string]Value, len(r.keys))
	for i, k := range r.keys {
		m[k] = r.vals[i]
	}
	return m, true
}

// Describe says what kind of value v is, for error messages.
func Describe(v Value) string { return describe(v) }

// LoadRaw reads the TLC model cfgPath and the module of the same base name
// beside it, which must extend specModule, whose CONSTANTS are
// constants: each must be assigned, and none other.
func LoadRaw(cfgPath, specModule string, constants []string) (*Raw, error) {
	src, tlaPath, msrc, err := readModel(cfgPath)
	if err != nil {
		return nil, err
	}
	cf, err := parseCfg(cfgPath, string(src))
	if err != nil {
		return nil, err
	}
	mod, err := parseModule(tlaPath, string(msrc))
	if err != nil {
		return nil, err
	}
	if err := checkModuleName(mod, tlaPath); err != nil {
		return nil, err
	}
	if mod.other != specModule {
		return nil, &Error{tlaPath, 0, fmt.Sprintf("%s does not extend %s (EXTENDS %s)", mod.name, specModule, strings.Join(mod.extends, ", "))}
	}
	r := &Raw{Name: mod.name, SpecModule: specModule, Spec: cf.spec, Invariants: cf.invariants,
		Properties: cf.properties, CheckDeadlock: cf.checkDeadlock, Constants: map[string]Const{}}
	for _, c := range cf.constants {
		if !slices.Contains(constants, c.name) {
			return nil, &Error{cf.file, c.line, fmt.Sprintf("unknown constant %s (%s declares %s)", c.name, specModule, strings.Join(constants, ", "))}
		}
		if c.ref == "" {
			r.Constants[c.name] = Const{c.value, cf.file, c.line}
			continue
		}
		d, ok := mod.defs[c.ref]
		if !ok {
			return nil, &Error{cf.file, c.line, fmt.Sprintf("%s <- %s: %s is not defined in %s", c.name, c.ref, c.ref, mod.file)}
		}
		r.Constants[c.name] = Const{d.val, mod.file, d.line}
	}
	for _, name := range constants {
		if _, ok := r.Constants[name]; !ok {
			return nil, &Error{cf.file, cf.constLine, fmt.Sprintf("constant %s is not assigned", name)}
		}
	}
	return r, nil
}

// SpecModule returns the spec module the model cfgPath's module extends:
// a Chandy-Lamport module (Load reads the model) or one LoadRaw reads.
func SpecModule(cfgPath string) (string, error) {
	tlaPath := strings.TrimSuffix(cfgPath, filepath.Ext(cfgPath)) + ".tla"
	msrc, err := os.ReadFile(tlaPath)
	if err != nil {
		return "", fmt.Errorf("model: %s needs its module %s: %w", cfgPath, tlaPath, err)
	}
	mod, err := parseModule(tlaPath, string(msrc))
	if err != nil {
		return "", err
	}
	if mod.other != "" {
		return mod.other, nil
	}
	for _, e := range mod.extends {
		if _, ok := specModules[e]; ok {
			return e, nil
		}
	}
	return "", &Error{tlaPath, 0, "EXTENDS names no spec module"}
}

// readModel reads the TLC model cfgPath and the module of the same base
// name beside it.
func readModel(cfgPath string) (cfgSrc []byte, tlaPath string, tlaSrc []byte, err error) {
	cfgSrc, err = os.ReadFile(cfgPath)
	if err != nil {
		return nil, "", nil, fmt.Errorf("model: %w", err)
	}
	tlaPath = strings.TrimSuffix(cfgPath, filepath.Ext(cfgPath)) + ".tla"
	tlaSrc, err = os.ReadFile(tlaPath)
	if err != nil {
		return nil, "", nil, fmt.Errorf("model: %s needs its module %s: %w", cfgPath, tlaPath, err)
	}
	return cfgSrc, tlaPath, tlaSrc, nil
}
