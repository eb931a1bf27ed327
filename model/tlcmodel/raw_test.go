package tlcmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const rawCfg = `CONSTANTS
    N <- MCN
    Names = {"a", "b"}
SPECIFICATION Spec
INVARIANT Inv
CHECK_DEADLOCK FALSE
`

const rawTLA = `---- MODULE MCR ----
EXTENDS BarrierSnapshots, TLC
MCN == [x |-> 1, y |-> <<2, 3>>]
====
`

// ParseRaw gives each constant its value and the line that wrote it,
// names the spec module, and leaves the constants' meaning to the
// loaders; Declares checks the names against the spec's.
func TestParseRaw(t *testing.T) {
	r, err := ParseRaw("MCR.cfg", rawCfg, "MCR.tla", rawTLA)
	require.NoError(t, err)
	assert.Equal(t, "MCR", r.Name)
	assert.Equal(t, "BarrierSnapshots", r.SpecModule)
	assert.Equal(t, []string{"BarrierSnapshots", "TLC"}, r.Extends)
	assert.Equal(t, "Spec", r.Spec)
	assert.Equal(t, 4, r.SpecLine)
	assert.Equal(t, []string{"Inv"}, r.Invariants)
	assert.False(t, r.CheckDeadlock)
	n := r.Constants["N"]
	assert.Equal(t, "MCR.tla", n.File)
	assert.Equal(t, 3, n.Line)
	rec, ok := Record(n.Value)
	require.True(t, ok)
	assert.Equal(t, int64(1), rec["x"])
	tp, ok := Tuple(rec["y"])
	require.True(t, ok)
	assert.Equal(t, []Value{int64(2), int64(3)}, tp)
	keys, _ := RecordKeys(n.Value)
	assert.Equal(t, []string{"x", "y"}, keys)
	names, ok := Set(r.Constants["Names"].Value)
	require.True(t, ok)
	assert.Equal(t, []Value{"a", "b"}, names)
	assert.Equal(t, 3, r.Constants["Names"].Line)

	require.NoError(t, r.Declares([]string{"N", "Names"}))
	assert.EqualError(t, r.Declares([]string{"N"}), "MCR.cfg:3: unknown constant Names (BarrierSnapshots declares N)")
	assert.EqualError(t, r.Declares([]string{"N", "Names", "M"}), "MCR.cfg:1: constant M is not assigned")
	assert.EqualError(t, n.Errorf("N", "want %s", "more"), "MCR.tla:3: N: want more")

	_, err = ParseRaw("MCR.cfg", rawCfg, "MCR.tla", "---- MODULE MCR ----\nEXTENDS TLC\n====\n")
	assert.EqualError(t, err, "MCR.tla:2: EXTENDS names no spec module")
}
