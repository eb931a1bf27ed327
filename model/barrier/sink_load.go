package barrier

import (
	"errors"
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
)

// sinkConstNames are the CONSTANTS of tla/BarrierSink.tla: those of
// tla/BarrierSnapshots.tla and the three bounds (lines 59-62).
var sinkConstNames = append(slices.Clone(constNames), "MaxCkpt", "MaxRestores", "MaxAborts")

// LoadSink reads a TLC model of tla/BarrierSink.tla (a .cfg file and the
// module of the same base name beside it) into a SinkConfig. Errors name
// the file and line at fault.
func LoadSink(cfgPath string) (*SinkConfig, error) {
	raw, err := tlcmodel.LoadRaw(cfgPath)
	if err != nil {
		return nil, err
	}
	return SinkFromRaw(raw)
}

// SinkFromRaw builds the SinkConfig of a parsed TLC model of
// tla/BarrierSink.tla, each error at the line at fault.
func SinkFromRaw(raw *tlcmodel.Raw) (*SinkConfig, error) {
	if !IsSinkModule(raw.SpecModule) {
		return nil, &tlcmodel.Error{File: raw.Module, Msg: fmt.Sprintf("%s does not extend %s", raw.Name, SinkModule)}
	}
	if err := raw.Declares(sinkConstNames); err != nil {
		return nil, err
	}
	c := consts(raw.Constants)
	base, err := c.sinkBase(raw)
	if err != nil {
		return nil, err
	}
	cfg := &SinkConfig{Base: base, Variant: SinkVariant(raw.Spec), CheckDeadlock: raw.CheckDeadlock,
		Invariants: props(raw.Invariants), Properties: props(raw.Properties)}
	base.Name = raw.Name
	if err := c.bounds(cfg); err != nil {
		return nil, err
	}
	if err := cfg.checkNames(); err != nil {
		return nil, &tlcmodel.Error{File: raw.File, Line: raw.SpecLine, Msg: err.Error()}
	}
	return cfg, nil
}

// sinkBase is the Config of the graph's constants (tla/BarrierSnapshots.tla's),
// checked against both modules' ASSUME, an error at the line at fault.
func (c consts) sinkBase(raw *tlcmodel.Raw) (*Config, error) {
	k, err := c.constants()
	if err != nil {
		return nil, err
	}
	base, err := NewConfig(k, VariantSpec, nil, nil)
	if err == nil {
		err = sinkAssume(base)
	}
	var ce *ConstantError
	if errors.As(err, &ce) {
		return nil, c[ce.Constant].Errorf(ce.Constant, "%s", ce.Msg)
	}
	if err != nil {
		return nil, &tlcmodel.Error{File: raw.File, Msg: err.Error()}
	}
	return base, nil
}

// sinkAssume checks what the ASSUME of lines 64-65 says of the graph:
// Mode = "aligned"; and what the Go state's bit sets need: at most 64
// keys.
func sinkAssume(base *Config) error {
	if base.Mode != Aligned {
		return &ConstantError{"Mode", `the sink's output is its pre-barrier input: Mode must be "aligned"`}
	}
	if base.numKeys > 64 {
		return &ConstantError{"Budget", fmt.Sprintf("at most 64 records in all, not %d", base.numKeys)}
	}
	return nil
}

// bounds reads MaxCkpt, MaxRestores and MaxAborts (lines 59-62, 64).
func (c consts) bounds(cfg *SinkConfig) error {
	for _, b := range []struct {
		name string
		min  int64
		dst  *int
	}{{"MaxCkpt", 1, &cfg.MaxCkpt}, {"MaxRestores", 0, &cfg.MaxRestores}, {"MaxAborts", 0, &cfg.MaxAborts}} {
		n, ok := c[b.name].Value.(int64)
		if !ok {
			return c[b.name].Errorf(b.name, "want an integer in %d..60, not %s", b.min, tlcmodel.Describe(c[b.name].Value))
		}
		if n < b.min || n > 60 {
			return c[b.name].Errorf(b.name, "want an integer in %d..60, not %d", b.min, n)
		}
		*b.dst = int(n)
	}
	return nil
}

// checkNames: the specification is one of lines 274-287, the invariants
// and properties are the spec's (spec.SinkInvariants, spec.SinkTemporal).
func (cfg *SinkConfig) checkNames() error {
	f, ok := cfg.Variant.flags()
	if !ok {
		return fmt.Errorf("unknown specification %q (want SpecSink, SpecSinkArrival, SpecSinkNoAbort, SpecSinkForget, SpecSinkSilent or SpecSinkNoNotify)", cfg.Variant)
	}
	cfg.flags = f
	for _, p := range cfg.Invariants {
		if !slices.Contains(spec.SinkInvariants, p) {
			return fmt.Errorf("unknown invariant %s (known: %s)", p, spec.JoinProperties(spec.SinkInvariants))
		}
	}
	for _, p := range cfg.Properties {
		if !slices.Contains(spec.SinkTemporal, p) {
			return fmt.Errorf("unknown property %s (known: %s)", p, spec.JoinProperties(spec.SinkTemporal))
		}
	}
	return nil
}
