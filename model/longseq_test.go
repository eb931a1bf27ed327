package model

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// longSeqConfig is a Config with its table of long sequences.
func longSeqConfig(t *testing.T) *Config {
	k := Constants{Topo: spec.Ring(2), InitBal: map[spec.ProcID]int64{"P1": 1, "P2": 0},
		Budget: map[spec.ProcID]int{"P1": 1, "P2": 1}, Amount: []int64{1}}
	cfg, err := NewConfig(k, VariantSpec, nil, nil)
	require.NoError(t, err)
	return cfg
}

// counting is 1, 2, ..., n grown with appendNat.
func counting(cfg *Config, n int) []uint64 {
	var g []uint64
	for i := 1; i <= n; i++ {
		g = cfg.appendNat(g, uint64(i))
	}
	return g
}

// TestAppendNatPersistent: growing a long sequence in place never changes
// what another state holds: two successors of one sequence, and an older
// version extended again, each see their own elements.
func TestAppendNatPersistent(t *testing.T) {
	cfg := longSeqConfig(t)
	base := counting(cfg, 3*longSeqLen)
	want := slices.Clone(base)
	a := cfg.appendNat(base, 1000)
	b := cfg.appendNat(base, 2000) // the slot a took is claimed: b is a copy
	old := cfg.appendNat(base[:longSeqLen], 3000)
	assert.Equal(t, want, base)
	assert.Equal(t, append(slices.Clone(want), 1000), a)
	assert.Equal(t, append(slices.Clone(want), 2000), b)
	assert.Equal(t, append(slices.Clone(want[:longSeqLen]), 3000), old)
	assert.Equal(t, append(append(slices.Clone(want), 1000), 1001), cfg.appendNat(a, 1001))
}

// TestLongSeqChecksRemembered: the remembered prefix checks give the
// answers of a full scan, also for a sequence that shares a checked
// prefix and breaks the property past it.
func TestLongSeqChecksRemembered(t *testing.T) {
	cfg := longSeqConfig(t)
	g := counting(cfg, 2*longSeqLen)
	require.True(t, cfg.countsFromOne(g))
	require.True(t, cfg.allNonzero(g))
	bad := cfg.appendNat(g, 7) // 7 where 2*longSeqLen+1 is due
	assert.False(t, cfg.countsFromOne(bad))
	assert.True(t, cfg.allNonzero(bad))
	zero := cfg.appendNat(g, 0) // a copy: the slot bad took is claimed
	assert.False(t, cfg.allNonzero(zero))
	assert.False(t, cfg.countsFromOne(zero))
	good := cfg.appendNat(g, uint64(len(g)+1))
	assert.True(t, cfg.countsFromOne(good))
	assert.True(t, cfg.countsFromOne(g[:longSeqLen]), "a prefix of a checked sequence")

	plain := make([]uint64, 2*longSeqLen) // not grown by appendNat: scanned in full
	for i := range plain {
		plain[i] = uint64(i + 1)
	}
	plain[len(plain)-1] = 0
	assert.False(t, cfg.allNonzero(plain))
	assert.False(t, cfg.countsFromOne(plain))
}
