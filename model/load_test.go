package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/model/tlcmodel"
	"github.com/markerwave/markerwave/spec"
)

const goodCfg = `\* a comment
CONSTANTS
    Proc      <- MCProc
    Chan      <- MCChan
    InitBal   <- MCInitBal
    Amount    <- MCAmount
    Budget    <- MCBudget
    Snap      <- MCSnap
    Initiator <- MCInitiator
SPECIFICATION Spec
INVARIANTS
    TypeOK
    ConsistentCut
PROPERTIES
    SnapshotsComplete
CHECK_DEADLOCK FALSE
`

const goodTLA = `---- MODULE MCX ----
(* a (* nested *) comment *)
EXTENDS ChandyLamport, TLC

MCProc      == {"P1", "P2"}
MCChan      == {<<"P1", "P2">>,
                <<"P2", "P1">>}   \* two channels
MCInitBal   == [P1 |-> 100, P2 |-> 50]
MCAmount    == {30}
MCBudget    == [P2 |-> 1, P1 |-> 2]
MCSnap      == 1..1
MCInitiator == <<"P1">>
====
`

func TestParseModelGood(t *testing.T) {
	cfg, err := Parse("MCX.cfg", goodCfg, "MCX.tla", goodTLA)
	require.NoError(t, err)
	assert.Equal(t, "MCX", cfg.Name)
	assert.Equal(t, VariantSpec, cfg.Variant)
	assert.Equal(t, []spec.ProcID{"P1", "P2"}, cfg.Topo.Procs)
	assert.Equal(t, []int64{100, 50}, cfg.InitBal)
	assert.Equal(t, []int{2, 1}, cfg.Budget)
	assert.Equal(t, []int64{30}, cfg.Amount)
	assert.Equal(t, []spec.SnapID{1}, cfg.Snap)
	assert.Equal(t, []int{0}, cfg.Initiator)
	assert.Equal(t, []spec.Property{spec.PropTypeOK, spec.PropConsistentCut}, cfg.Invariants)
	assert.Equal(t, []spec.Property{spec.PropSnapshotsComplete}, cfg.Properties)
	assert.False(t, cfg.CheckDeadlock)
	assert.Equal(t, int64(150), cfg.TotalMoney())
	assert.Equal(t, 3, cfg.MaxRcvd())

	// Constants given by value in the .cfg, and the same counts as the
	// module form (this is MCTwoBank).
	byValue := `CONSTANTS Proc = {"P1", "P2"} Chan = {<<"P1", "P2">>, <<"P2", "P1">>}
InitBal = [P1 |-> 100, P2 |-> 50] Amount = {30} Budget = [P1 |-> 2, P2 |-> 1]
Snap = {1} Initiator = <<"P1">>
SPECIFICATION Spec INVARIANT TypeOK`
	cfg2, err := Parse("MCX.cfg", byValue, "MCX.tla", goodTLA)
	require.NoError(t, err)
	r, err := Explore(cfg2, Options{})
	require.NoError(t, err)
	tb := loadTLA(t, "MCTwoBank")
	r2, err := Explore(tb, Options{})
	require.NoError(t, err)
	assert.Equal(t, r2.Distinct, r.Distinct)
	assert.Equal(t, r2.Generated, r.Generated)
}

func TestLoadEveryTLAModel(t *testing.T) {
	want := map[string]Variant{"MCTwoBank": VariantSpec, "MCRing": VariantSpec, "MCConcurrent": VariantSpec, "MCLarge": VariantSpec,
		"MCNonFIFO": VariantNonFIFO, "MCNoRecord": VariantNoRecord, "MCNoForward": VariantNoForward}
	for name, v := range want {
		cfg := loadTLA(t, name)
		assert.Equal(t, v, cfg.Variant, name)
		assert.Equal(t, name, cfg.Name)
	}
	_, err := Load("../tla/NoSuch.cfg")
	assert.ErrorContains(t, err, "NoSuch.cfg")
}

// Every error names the file and the line at fault.
func TestParseModelErrors(t *testing.T) {
	replace := func(src, old, new string) string {
		out := ""
		found := false
		for i := 0; i+len(old) <= len(src); i++ {
			if src[i:i+len(old)] == old {
				out = src[:i] + new + src[i+len(old):]
				found = true
				break
			}
		}
		require.True(t, found, "test bug: %q not in source", old)
		return out
	}
	cases := []struct {
		name     string
		cfg, tla string
		want     string
	}{
		{"unknown invariant", replace(goodCfg, "ConsistentCut", "Bogus"), goodTLA, "MCX.cfg:13: unknown invariant Bogus"},
		{"unknown property", replace(goodCfg, "SnapshotsComplete", "Eventually"), goodTLA, "MCX.cfg:15: unknown property Eventually"},
		{"unknown spec", replace(goodCfg, "SPECIFICATION Spec", "SPECIFICATION SpecNonFIFO"), goodTLA, "MCX.cfg:10: SPECIFICATION SpecNonFIFO is not defined by MCX"},
		{"unsupported keyword", replace(goodCfg, "CHECK_DEADLOCK FALSE", "SYMMETRY Perms"), goodTLA, "MCX.cfg:16: SYMMETRY is not supported"},
		{"no spec", replace(goodCfg, "SPECIFICATION Spec", ""), goodTLA, "MCX.cfg: no SPECIFICATION"},
		{"bad deadlock flag", replace(goodCfg, "CHECK_DEADLOCK FALSE", "CHECK_DEADLOCK maybe"), goodTLA, "MCX.cfg:16: CHECK_DEADLOCK must be TRUE or FALSE"},
		{"unknown constant", replace(goodCfg, "Snap      <- MCSnap", "Snap <- MCSnap\n    Foo <- MCSnap"), goodTLA, "MCX.cfg:9: unknown constant Foo"},
		{"missing constant", replace(goodCfg, "    Snap      <- MCSnap\n", ""), goodTLA, "MCX.cfg:2: constant Snap is not assigned"},
		{"undefined ref", replace(goodCfg, "<- MCBudget", "<- MCBudgets"), goodTLA, "MCX.cfg:7: Budget <- MCBudgets: MCBudgets is not defined in MCX.tla"},
		{"garbage in cfg", goodCfg + "\n%%\n", goodTLA, "MCX.cfg:18: unexpected character"},
		{"unterminated comment", goodCfg + "\n(* oops\n", goodTLA, "MCX.cfg:18: unterminated (* comment"},
		{"module name", goodCfg, replace(goodTLA, "MODULE MCX", "MODULE MCY"), "MCX.tla:1: module is named MCY"},
		{"no extends", goodCfg, replace(goodTLA, "EXTENDS ChandyLamport, TLC", ""), "MCX.tla:5: expected EXTENDS"},
		{"unknown extends", goodCfg, replace(goodTLA, "EXTENDS ChandyLamport, TLC", "EXTENDS ChandyLamport, Bags"), "MCX.tla:3: EXTENDS Bags: unknown module"},
		{"bad expression", goodCfg, replace(goodTLA, "{30}", "{30 + 1}"), "MCX.tla:9: unexpected character '+'"},
		{"unsupported function", goodCfg, replace(goodTLA, "[P2 |-> 1, P1 |-> 2]", "[p \\in MCProc |-> 1]"), "MCX.tla:10: expected |-> after field p (only records [k |-> v, ...] are supported)"},
		{"operator definition", goodCfg, replace(goodTLA, "MCSnap      == 1..1", "F(x) == x\nMCSnap == 1..1"), "MCX.tla:11: operator definition F(...) is not supported"},
		{"unknown name", goodCfg, replace(goodTLA, "MCSnap      == 1..1", "MCSnap      == Nat"), "MCX.tla:11: unknown name Nat"},
		{"no end", goodCfg, replace(goodTLA, "====\n", ""), "MCX.tla:13: missing ===="},
		{"unterminated string", goodCfg, replace(goodTLA, `<<"P1">>`, `<<"P1>>`), "MCX.tla:12: unterminated string"},
		{"proc not strings", goodCfg, replace(goodTLA, `MCProc      == {"P1", "P2"}`, `MCProc      == {1, 2}`), "MCX.tla:5: Proc: want strings"},
		{"not strongly connected", goodCfg, replace(goodTLA, `,
                <<"P2", "P1">>}`, `}`), "MCX.tla:6: Chan: topology: not strongly connected"},
		{"self loop", goodCfg, replace(goodTLA, `<<"P2", "P1">>}`, `<<"P2", "P1">>, <<"P1", "P1">>}`), "MCX.tla:6: Chan: topology: channel P1->P1 is a self-loop"},
		{"initbal domain", goodCfg, replace(goodTLA, "[P1 |-> 100, P2 |-> 50]", "[P1 |-> 100]"), "MCX.tla:8: InitBal: want an entry for every process"},
		{"negative balance", goodCfg, replace(goodTLA, "[P1 |-> 100, P2 |-> 50]", "[P1 |-> -1, P2 |-> 50]"), "MCX.tla:8: InitBal: P1 |-> must be a natural number"},
		{"zero amount", goodCfg, replace(goodTLA, "{30}", "{0, 30}"), "MCX.tla:9: Amount: want positive integers only"},
		{"initiator domain", goodCfg, replace(goodTLA, `<<"P1">>`, `<<"P1", "P2">>`), "MCX.tla:12: Initiator: its domain 1..2 is not Snap"},
		{"initiator not a process", goodCfg, replace(goodTLA, `<<"P1">>`, `<<"P9">>`), "MCX.tla:12: Initiator: entry 1 is not a process"},
		{"duplicate definition", goodCfg, replace(goodTLA, "MCSnap      == 1..1", "MCSnap == 1..1\nMCSnap == 1..1"), "MCX.tla:12: MCSnap defined twice"},
		{"trailing junk", goodCfg, replace(goodTLA, "MCAmount    == {30}", "MCAmount    == {30} }"), "MCX.tla:9: unexpected \"}\" after the definition of MCAmount"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("MCX.cfg", c.cfg, "MCX.tla", c.tla)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// Load pairs a .cfg with the .tla of the same base name.
func TestLoadModelFromFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MCX.cfg"), []byte(goodCfg), 0o644))
	_, err := Load(filepath.Join(dir, "MCX.cfg"))
	assert.ErrorContains(t, err, "needs its module")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MCX.tla"), []byte(goodTLA), 0o644))
	cfg, err := Load(filepath.Join(dir, "MCX.cfg"))
	require.NoError(t, err)
	assert.Equal(t, "MCX", cfg.Name)
}

// A model whose balances sum past int64 is refused, naming InitBal at its
// line, instead of failing TypeOK on an overflow.
func TestParseOverflow(t *testing.T) {
	big := strings.Replace(goodTLA, "[P1 |-> 100, P2 |-> 50]", "[P1 |-> 9223372036854775807, P2 |-> 1]", 1)
	require.NotEqual(t, goodTLA, big)
	_, err := Parse("MCX.cfg", goodCfg, "MCX.tla", big)
	var e *tlcmodel.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "MCX.tla", e.File)
	assert.Contains(t, err.Error(), "InitBal sums past 9223372036854775807")
}

// The faults and lossy modules' models: every one loads with its
// specification and constants, and the three constants are checked at
// their lines.
func TestParseFaultsModels(t *testing.T) {
	want := map[string]Variant{"MCFaultsTwoBank": VariantFaults, "MCFaultsRing": VariantFaults,
		"MCFaultsTwoSnap": VariantFaults, "MCFaultsNoDetector": VariantNoDetector,
		"MCFaultsRecoverAny": VariantRecoverAny, "MCFaultsRecoverAnyReach": VariantRecoverAny,
		"MCLossy": VariantLossy, "MCLossyConservation": VariantLossy}
	for name, v := range want {
		cfg := loadTLA(t, name)
		assert.Equal(t, v, cfg.Variant, name)
	}
	ring := loadTLA(t, "MCFaultsRing")
	assert.Equal(t, 1, ring.MaxCrash)
	assert.Equal(t, 1, ring.MaxRecover)
	assert.True(t, ring.FalseSuspicion)
	assert.Equal(t, 2, loadTLA(t, "MCFaultsTwoSnap").MaxRecover)

	faultsCfg := strings.Replace(goodCfg, "    Initiator <- MCInitiator\n",
		"    Initiator <- MCInitiator\n    MaxCrash = 1\n    MaxRecover = 1\n    FalseSuspicion = FALSE\n", 1)
	faultsCfg = strings.Replace(faultsCfg, "SPECIFICATION Spec", "SPECIFICATION SpecFaults", 1)
	faultsCfg = strings.Replace(faultsCfg, "SnapshotsComplete", "SnapshotsEnd", 1)
	faultsTLA := strings.Replace(goodTLA, "EXTENDS ChandyLamport, TLC", "EXTENDS ChandyLamportFaults, TLC", 1)
	cfg, err := Parse("MCX.cfg", faultsCfg, "MCX.tla", faultsTLA)
	require.NoError(t, err)
	assert.Equal(t, VariantFaults, cfg.Variant)
	cases := []struct{ name, cfg, tla, want string }{
		{"faults constant in base module", strings.NewReplacer("SpecFaults", "Spec", "SnapshotsEnd", "SnapshotsComplete").Replace(faultsCfg), goodTLA,
			"MCX.cfg:10: unknown constant MaxCrash"},
		{"missing faults constant", strings.Replace(faultsCfg, "    MaxRecover = 1\n", "", 1), faultsTLA, "constant MaxRecover is not assigned"},
		{"not a boolean", strings.Replace(faultsCfg, "FalseSuspicion = FALSE", "FalseSuspicion = 1", 1), faultsTLA, "MCX.cfg:12: FalseSuspicion: want TRUE or FALSE"},
		{"negative bound", strings.Replace(faultsCfg, "MaxCrash = 1", "MaxCrash = -1", 1), faultsTLA, "MCX.cfg:10: MaxCrash: want a natural number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("MCX.cfg", c.cfg, "MCX.tla", c.tla)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
