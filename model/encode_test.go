package model

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

// genConfig draws a small model: a ring or complete graph of 2-4
// processes, small balances, budgets and amounts, 1-2 snapshots, any
// variant.
func genConfig(t *rapid.T) *Config {
	n := rapid.IntRange(2, 4).Draw(t, "procs")
	topo := spec.Ring(n)
	if rapid.Bool().Draw(t, "complete") {
		topo = spec.Complete(n)
	}
	k := Constants{Topo: topo, InitBal: map[spec.ProcID]int64{}, Budget: map[spec.ProcID]int{}, Initiator: map[spec.SnapID]spec.ProcID{}}
	for _, p := range topo.Procs {
		k.InitBal[p] = int64(rapid.IntRange(0, 3).Draw(t, "bal"))
		k.Budget[p] = rapid.IntRange(0, 2).Draw(t, "budget")
	}
	k.Amount = []int64{1}
	if rapid.Bool().Draw(t, "amount2") {
		k.Amount = append(k.Amount, 2)
	}
	for s := 1; s <= rapid.IntRange(1, 2).Draw(t, "snaps"); s++ {
		k.Initiator[spec.SnapID(s)] = rapid.SampledFrom(topo.Procs).Draw(t, "initiator")
	}
	v := rapid.SampledFrom([]Variant{VariantSpec, VariantNonFIFO, VariantNoRecord, VariantNoForward,
		VariantFaults, VariantNoDetector, VariantRecoverAny}).Draw(t, "variant")
	if v.Faults() {
		k.MaxCrash = rapid.IntRange(0, 2).Draw(t, "crashes")
		k.MaxRecover = rapid.IntRange(0, 2).Draw(t, "recoveries")
		k.FalseSuspicion = rapid.Bool().Draw(t, "falseSuspicion")
	}
	cfg, err := NewConfig(k, v, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Along random behaviours of random models: the encoding round-trips,
// actions leave their input alone, every step decreases the progress
// measure, TypeOK holds, for Spec every invariant of ChandyLamport.tla
// holds, and for SpecFaults and SpecNoDetector every invariant of
// ChandyLamportFaults.tla and every one of ChandyLamport.tla it keeps (all
// but the theorem's, which TheoremUnlessAborted restates).
func TestRandomWalkProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := genConfig(t)
		st := Init(cfg)
		for i := 0; i < 40; i++ {
			enc := Encode(cfg, st)
			back, err := Decode(cfg, enc)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if Key(cfg, back) != string(enc) || FormatState(cfg, back) != FormatState(cfg, st) {
				t.Fatalf("round trip changed the state:\n%s\nvs\n%s", FormatState(cfg, st), FormatState(cfg, back))
			}
			if !TypeOK(cfg, st) {
				t.Fatalf("TypeOK fails:\n%s", FormatState(cfg, st))
			}
			for name, f := range invariantFuncs {
				if mustHold(cfg.Variant, name) && !f(cfg, st) {
					t.Fatalf("%s fails in %s:\n%s", name, cfg.Variant, FormatState(cfg, st))
				}
			}
			next := Next(cfg, st)
			if string(enc) != Key(cfg, st) {
				t.Fatalf("computing successors modified the state")
			}
			if len(next) == 0 {
				break
			}
			m := progressMeasure(cfg, st)
			for _, tr := range next {
				if !progressMeasure(cfg, tr.State).less(m) {
					t.Fatalf("%s does not decrease the measure", tr.Label)
				}
			}
			st = next[rapid.IntRange(0, len(next)-1).Draw(t, "pick")].State
		}
	})
}

// mustHold says whether invariant name holds of every state of variant v.
func mustHold(v Variant, name spec.Property) bool {
	switch v {
	case VariantSpec:
		return !name.Faults()
	case VariantFaults, VariantNoDetector:
		switch name {
		case spec.PropSnapshotReachable, spec.PropCurrentReachable, spec.PropChandyLamportTheorem:
			return false
		}
		return true
	}
	return false
}

func TestDecodeRejectsGarbage(t *testing.T) {
	cfg := loadTLA(t, "MCConcurrent")
	st := Init(cfg)
	st, _ = Initiate(cfg, st, 2)
	st, _ = SendApp(cfg, st, "P1", "P2", 1)
	enc := Encode(cfg, st)
	for i := 0; i < len(enc); i++ {
		_, err := Decode(cfg, enc[:i])
		assert.ErrorIs(t, err, ErrBadEncoding, "prefix of %d bytes", i)
	}
	_, err := Decode(cfg, append(append([]byte(nil), enc...), 0))
	assert.ErrorIs(t, err, ErrBadEncoding)
	back, err := Decode(cfg, enc)
	require.NoError(t, err)
	assert.Equal(t, enc, Encode(cfg, back))
}

func FuzzDecode(f *testing.F) {
	cfg, err := Load("../tla/MCConcurrent.cfg")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(Encode(cfg, Init(cfg)))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := Decode(cfg, b)
		if err != nil {
			return
		}
		again, err := Decode(cfg, Encode(cfg, st))
		if err != nil || Key(cfg, again) != Key(cfg, st) {
			t.Fatalf("re-encoding is not stable: %v", err)
		}
	})
}

// decoder.varint is binary.Varint: every int64 back from
// binary.AppendVarint, a truncated one an error.
func TestDecoderVarint(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, -65, 12345, -12345, math.MaxInt64, math.MinInt64} {
		d := decoder{b: binary.AppendVarint(nil, v)}
		if got := d.varint(); got != v || d.err != nil || len(d.b) != 0 {
			t.Errorf("varint of %d: %d, %v, %d bytes left", v, got, d.err, len(d.b))
		}
	}
	d := decoder{b: binary.AppendVarint(nil, math.MinInt64)[:3]}
	if d.varint(); !errors.Is(d.err, ErrBadEncoding) {
		t.Errorf("a truncated varint: %v", d.err)
	}
}
