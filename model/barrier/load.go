package barrier

import (
	"errors"

	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
)

// SpecModule is the spec module this package mirrors.
const SpecModule = "BarrierSnapshots"

// constNames are the CONSTANTS of tla/BarrierSnapshots.tla (lines 43-52).
var constNames = []string{"Src", "Op", "Snk", "Edge", "Back", "Budget", "Cap", "Iter", "Mode"}

// Load reads a TLC model of tla/BarrierSnapshots.tla (a .cfg file and the
// module of the same base name beside it) into a Config. Errors name the
// file and line at fault.
func Load(cfgPath string) (*Config, error) {
	raw, err := tlcmodel.LoadRaw(cfgPath, SpecModule, constNames)
	if err != nil {
		return nil, err
	}
	c := raw.Constants
	var k Constants
	if k.Src, err = strSet(c, "Src"); err != nil {
		return nil, err
	}
	if k.Op, err = strSet(c, "Op"); err != nil {
		return nil, err
	}
	snk, ok := c["Snk"].Value.(string)
	if !ok {
		return nil, c["Snk"].Errorf("Snk", "want a node name (a string), not %s", tlcmodel.Describe(c["Snk"].Value))
	}
	k.Snk = snk
	if k.Edge, err = pairSet(c, "Edge"); err != nil {
		return nil, err
	}
	if k.Back, err = pairSet(c, "Back"); err != nil {
		return nil, err
	}
	rec, ok := tlcmodel.Record(c["Budget"].Value)
	if !ok {
		return nil, c["Budget"].Errorf("Budget", "want a record [s |-> n, ...], not %s", tlcmodel.Describe(c["Budget"].Value))
	}
	k.Budget = map[string]int{}
	for s, v := range rec {
		n, ok := v.(int64)
		if !ok {
			return nil, c["Budget"].Errorf("Budget", "Budget[%q] must be an integer, not %s", s, tlcmodel.Describe(v))
		}
		k.Budget[s] = int(n)
	}
	for _, name := range []string{"Cap", "Iter"} {
		n, ok := c[name].Value.(int64)
		if !ok || n > 1<<20 {
			return nil, c[name].Errorf(name, "want a small integer, not %s", tlcmodel.Describe(c[name].Value))
		}
		if name == "Cap" {
			k.Cap = int(n)
		} else {
			k.Iter = int(n)
		}
	}
	switch c["Mode"].Value {
	case "aligned":
		k.Mode = Aligned
	case "unaligned":
		k.Mode = Unaligned
	default:
		return nil, c["Mode"].Errorf("Mode", `want "aligned" or "unaligned"`)
	}
	cfg, err := NewConfig(k, Variant(raw.Spec), props(raw.Invariants), props(raw.Properties))
	if err != nil {
		var ce *ConstantError
		if errors.As(err, &ce) {
			return nil, c[ce.Constant].Errorf(ce.Constant, "%s", ce.Msg)
		}
		return nil, &tlcmodel.Error{File: cfgPath, Msg: err.Error()}
	}
	cfg.Name = raw.Name
	cfg.CheckDeadlock = raw.CheckDeadlock
	return cfg, nil
}

func props(names []string) []spec.Property {
	ps := make([]spec.Property, len(names))
	for i, n := range names {
		ps[i] = spec.Property(n)
	}
	return ps
}

// strSet reads a set of strings.
func strSet(c map[string]tlcmodel.Const, name string) ([]string, error) {
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
func pairSet(c map[string]tlcmodel.Const, name string) ([][2]string, error) {
	set, ok := tlcmodel.Set(c[name].Value)
	if !ok {
		return nil, c[name].Errorf(name, "want a set of pairs <<m, n>>, not %s", tlcmodel.Describe(c[name].Value))
	}
	out := make([][2]string, len(set))
	for i, v := range set {
		t, ok := tlcmodel.Tuple(v)
		if ok && len(t) == 2 {
			a, okA := t[0].(string)
			b, okB := t[1].(string)
			if okA && okB {
				out[i] = [2]string{a, b}
				continue
			}
		}
		return nil, c[name].Errorf(name, "want a set of pairs <<m, n>> of node names, but it holds %s", tlcmodel.Describe(v))
	}
	return out, nil
}
