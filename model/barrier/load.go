package barrier

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
)

// SpecModule is the spec module this package mirrors.
const SpecModule = "BarrierSnapshots"

// AdaptiveModule is the module extending it with the adaptive mode
// (adaptive.go), which this package mirrors too.
const AdaptiveModule = "BarrierAdaptive"

// IsSpecModule reports whether mod is one of the spec modules this
// package mirrors: a TLC model extending it is Load's.
func IsSpecModule(mod string) bool { return mod == SpecModule || mod == AdaptiveModule }

// constNames are the CONSTANTS of tla/BarrierSnapshots.tla (lines 43-52);
// adaptiveConstNames adds those of tla/BarrierAdaptive.tla (lines 46-48).
var (
	constNames         = []string{"Src", "Op", "Snk", "Edge", "Back", "Budget", "Cap", "Iter", "Mode"}
	adaptiveConstNames = append(slices.Clone(constNames), "ForceAligned", "MaxTimeouts")
)

// Load reads a TLC model of tla/BarrierSnapshots.tla or
// tla/BarrierAdaptive.tla (a .cfg file and the module of the same base
// name beside it, tlcmodel.LoadRaw) into a Config. Errors name the file
// and line at fault.
func Load(cfgPath string) (*Config, error) {
	raw, err := tlcmodel.LoadRaw(cfgPath)
	if err != nil {
		return nil, err
	}
	return FromRaw(raw)
}

// FromRaw builds the Config of a parsed TLC model of
// tla/BarrierSnapshots.tla or tla/BarrierAdaptive.tla: its constants in
// the shapes the spec declares, checked against its ASSUME (NewConfig),
// each error at the line at fault.
func FromRaw(raw *tlcmodel.Raw) (*Config, error) {
	adaptive, err := checkModule(raw)
	if err != nil {
		return nil, err
	}
	c := consts(raw.Constants)
	k, err := c.constants()
	if err != nil {
		return nil, err
	}
	if adaptive {
		if k.ForceAligned, k.MaxTimeouts, err = c.adaptive(); err != nil {
			return nil, err
		}
	}
	cfg, err := NewConfig(k, Variant(raw.Spec), props(raw.Invariants), props(raw.Properties))
	if err != nil {
		var ce *ConstantError
		if errors.As(err, &ce) {
			return nil, c[ce.Constant].Errorf(ce.Constant, "%s", ce.Msg)
		}
		return nil, &tlcmodel.Error{File: raw.File, Msg: err.Error()}
	}
	cfg.Name = raw.Name
	cfg.CheckDeadlock = raw.CheckDeadlock
	return cfg, nil
}

// checkModule checks that raw extends one of the modules this package
// mirrors, declares its constants and names one of its specifications;
// it reports whether that is tla/BarrierAdaptive.tla.
func checkModule(raw *tlcmodel.Raw) (bool, error) {
	if !IsSpecModule(raw.SpecModule) {
		return false, &tlcmodel.Error{File: raw.Module, Msg: fmt.Sprintf("%s does not extend %s (EXTENDS %s)", raw.Name, SpecModule, strings.Join(raw.Extends, ", "))}
	}
	adaptive := raw.SpecModule == AdaptiveModule
	names := constNames
	if adaptive {
		names = adaptiveConstNames
	}
	if err := raw.Declares(names); err != nil {
		return false, err
	}
	if Variant(raw.Spec).Adaptive() != adaptive {
		return false, &tlcmodel.Error{File: raw.File, Msg: fmt.Sprintf("SPECIFICATION %s is not one of %s.tla's", raw.Spec, raw.SpecModule)}
	}
	return adaptive, nil
}

// adaptive reads the constants of tla/BarrierAdaptive.tla (lines 46-48):
// ForceAligned, a set of edges, and MaxTimeouts, a natural number.
func (c consts) adaptive() ([][2]string, int, error) {
	fa, err := c.pairSet("ForceAligned")
	if err != nil {
		return nil, 0, err
	}
	n, ok := c["MaxTimeouts"].Value.(int64)
	if !ok || n < 0 || n > 64 {
		return nil, 0, c["MaxTimeouts"].Errorf("MaxTimeouts", "want a natural number of at most 64, not %s", tlcmodel.Describe(c["MaxTimeouts"].Value))
	}
	return fa, int(n), nil
}

// consts are a model's constants by name.
type consts map[string]tlcmodel.Const

// constants reads each constant in the shape the spec declares (lines
// 43-52); what the ASSUME says of them is NewConfig's to check.
func (c consts) constants() (Constants, error) {
	var k Constants
	var err error
	steps := []func() error{
		func() error { k.Src, err = c.strSet("Src"); return err },
		func() error { k.Op, err = c.strSet("Op"); return err },
		func() error { k.Snk, err = c.str("Snk"); return err },
		func() error { k.Edge, err = c.pairSet("Edge"); return err },
		func() error { k.Back, err = c.pairSet("Back"); return err },
		func() error { k.Budget, err = c.budget(); return err },
		func() error { k.Cap, err = c.small("Cap"); return err },
		func() error { k.Iter, err = c.small("Iter"); return err },
		func() error { k.Mode, err = c.mode(); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return k, err
		}
	}
	return k, nil
}

// str reads a node name (a string).
func (c consts) str(name string) (string, error) {
	s, ok := c[name].Value.(string)
	if !ok {
		return "", c[name].Errorf(name, "want a node name (a string), not %s", tlcmodel.Describe(c[name].Value))
	}
	return s, nil
}

// budget reads Budget, a record [s |-> n, ...].
func (c consts) budget() (map[string]int, error) {
	rec, ok := tlcmodel.Record(c["Budget"].Value)
	if !ok {
		return nil, c["Budget"].Errorf("Budget", "want a record [s |-> n, ...], not %s", tlcmodel.Describe(c["Budget"].Value))
	}
	out := map[string]int{}
	for s, v := range rec {
		n, ok := v.(int64)
		if !ok {
			return nil, c["Budget"].Errorf("Budget", "Budget[%q] must be an integer, not %s", s, tlcmodel.Describe(v))
		}
		out[s] = int(n)
	}
	return out, nil
}

// small reads a small integer (Cap, Iter).
func (c consts) small(name string) (int, error) {
	n, ok := c[name].Value.(int64)
	if !ok || n > 1<<20 {
		return 0, c[name].Errorf(name, "want a small integer, not %s", tlcmodel.Describe(c[name].Value))
	}
	return int(n), nil
}

// mode reads Mode \in {"aligned", "unaligned"} (line 71).
func (c consts) mode() (Mode, error) {
	switch c["Mode"].Value {
	case spec.ModeAligned:
		return Aligned, nil
	case spec.ModeUnaligned:
		return Unaligned, nil
	}
	return Aligned, c["Mode"].Errorf("Mode", `want "aligned" or "unaligned"`)
}

func props(names []string) []spec.Property {
	ps := make([]spec.Property, len(names))
	for i, n := range names {
		ps[i] = spec.Property(n)
	}
	return ps
}

// strSet reads a set of strings.
func (c consts) strSet(name string) ([]string, error) {
	set, ok := tlcmodel.Set(c[name].Value)
	if !ok {
		return nil, c[name].Errorf(name, "want a set of node names, not %s", tlcmodel.Describe(c[name].Value))
	}
	out := make([]string, len(set))
	for i, v := range set {
		s, ok := v.(string)
		if !ok {
			return nil, c[name].Errorf(name, "want a set of node names (strings), but it holds %s", tlcmodel.Describe(v))
		}
		out[i] = s
	}
	return out, nil
}

// pairSet reads a set of pairs of strings.
func (c consts) pairSet(name string) ([][2]string, error) {
	set, ok := tlcmodel.Set(c[name].Value)
	if !ok {
		return nil, c[name].Errorf(name, "want a set of pairs <<m, n>>, not %s", tlcmodel.Describe(c[name].Value))
	}
	out := make([][2]string, len(set))
	for i, v := range set {
		p, ok := pair(v)
		if !ok {
			return nil, c[name].Errorf(name, "want a set of pairs <<m, n>> of node names, but it holds %s", tlcmodel.Describe(v))
		}
		out[i] = p
	}
	return out, nil
}

// pair is v as a pair of strings <<m, n>>.
func pair(v tlcmodel.Value) ([2]string, bool) {
	t, ok := tlcmodel.Tuple(v)
	if !ok || len(t) != 2 {
		return [2]string{}, false
	}
	a, okA := t[0].(string)
	b, okB := t[1].(string)
	return [2]string{a, b}, okA && okB
}
