package tlcmodel

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// Raw is a TLC model as the files write it, its constants not
// interpreted: what a spec's loader (model.Load, barrier.Load) builds its
// Config from. Every name keeps the line that wrote it, for the loader's
// errors.
type Raw struct {
	Name       string   // the model's module
	File       string   // the .cfg file
	Module     string   // the .tla file
	SpecModule string   // the spec module of SpecModules it extends
	Extends    []string // every module it extends, in order
	Spec       string   // SPECIFICATION
	SpecLine   int
	Invariants []string
	InvLines   []int
	Properties []string
	PropLines  []int
	// ConstLine is the line of the CONSTANTS keyword.
	ConstLine     int
	CheckDeadlock bool
	Constants     map[string]Const
	// assigned are the constants the .cfg assigns, in its order, at the
	// .cfg's lines.
	assigned []assignment
}

type assignment struct {
	name string
	line int
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

// RecordKeys returns a record value's keys in the order written.
func RecordKeys(v Value) ([]string, bool) {
	r, ok := v.(recordV)
	return r.keys, ok
}

// Describe says what kind of value v is, for error messages.
func Describe(v Value) string { return describe(v) }

// LoadRaw reads the TLC model cfgPath and the module of the same base
// name beside it (ParseRaw).
func LoadRaw(cfgPath string) (*Raw, error) {
	src, tlaPath, msrc, err := readModel(cfgPath)
	if err != nil {
		return nil, err
	}
	return ParseRaw(cfgPath, string(src), tlaPath, string(msrc))
}

// ParseRaw parses a model's .cfg and .tla contents (the paths are used in
// errors, and the module's name must be the .tla file's base name) and
// gives every constant the .cfg assigns its value: written there (X = v)
// or a definition of the module (X <- Name). Which constants the spec
// declares is checked by Declares.
func ParseRaw(cfgPath, cfgSrc, tlaPath, tlaSrc string) (*Raw, error) {
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
	r := &Raw{Name: mod.name, File: cf.file, Module: mod.file, SpecModule: mod.spec, Extends: mod.extends,
		Spec: cf.spec, SpecLine: cf.specLine, Invariants: cf.invariants, InvLines: cf.invLines,
		Properties: cf.properties, PropLines: cf.propLines, ConstLine: cf.constLine,
		CheckDeadlock: cf.checkDeadlock, Constants: map[string]Const{}}
	return r, r.resolve(cf, mod)
}

// resolve gives each constant of cf its value.
func (r *Raw) resolve(cf *cfgFile, mod *module) error {
	for _, c := range cf.constants {
		r.assigned = append(r.assigned, assignment{c.name, c.line})
		if c.ref == "" {
			r.Constants[c.name] = Const{c.value, cf.file, c.line}
			continue
		}
		d, ok := mod.defs[c.ref]
		if !ok {
			return &Error{cf.file, c.line, fmt.Sprintf("%s <- %s: %s is not defined in %s", c.name, c.ref, c.ref, mod.file)}
		}
		r.Constants[c.name] = Const{d.val, mod.file, d.line}
	}
	return nil
}

// Declares checks the model's constants against those its spec module
// declares: each assigned, none other.
func (r *Raw) Declares(constants []string) error {
	for _, a := range r.assigned {
		if !slices.Contains(constants, a.name) {
			return &Error{r.File, a.line, fmt.Sprintf("unknown constant %s (%s declares %s)", a.name, r.SpecModule, strings.Join(constants, ", "))}
		}
	}
	for _, name := range constants {
		if _, ok := r.Constants[name]; !ok {
			return &Error{r.File, r.ConstLine, fmt.Sprintf("constant %s is not assigned", name)}
		}
	}
	return nil
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

// SpecModule returns the spec module (of SpecModules) the model cfgPath's
// module extends.
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
	return mod.spec, nil
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
