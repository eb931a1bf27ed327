package core

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

func TestIDSetSequentialIsOneInterval(t *testing.T) {
	var x idSet
	for s := spec.SnapID(1); s <= 1000; s++ {
		x.add(s, s)
	}
	assert.Equal(t, []idRange{{1, 1000}}, x.iv)
	x.add(math.MaxUint64, math.MaxUint64)
	x.add(1002, 1002)
	x.add(1001, 1001)
	assert.Equal(t, []idRange{{1, 1002}, {math.MaxUint64, math.MaxUint64}}, x.iv)
	assert.True(t, x.has(math.MaxUint64))
	assert.False(t, x.has(0))
	assert.False(t, x.has(1003))
}

func TestIDSetMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var x idSet
		ref := map[spec.SnapID]bool{}
		for _, r := range rapid.SliceOf(rapid.Uint64Range(0, 40)).Draw(t, "adds") {
			lo := spec.SnapID(r)
			hi := lo + spec.SnapID(rapid.Uint64Range(0, 3).Draw(t, "len"))
			x.add(lo, hi)
			for s := lo; s <= hi; s++ {
				ref[s] = true
			}
		}
		for s := spec.SnapID(0); s <= 50; s++ {
			if x.has(s) != ref[s] {
				t.Fatalf("has(%d) = %v, want %v; intervals %v", s, x.has(s), ref[s], x.iv)
			}
		}
		for i := 1; i < len(x.iv); i++ {
			if x.iv[i-1].hi+1 >= x.iv[i].lo {
				t.Fatalf("intervals not disjoint and non-adjacent: %v", x.iv)
			}
		}
	})
}
