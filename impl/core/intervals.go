package core

import (
	"slices"
	"sort"

	"github.com/markerwave/markerwave/spec"
)

// idSet is a set of snapshot ids kept as sorted, disjoint, non-adjacent
// closed intervals, so that releasing ids 1, 2, 3, ... costs O(1) memory.
type idSet struct {
	iv []idRange
}

type idRange struct{ lo, hi spec.SnapID }

// find returns the index of the first interval with hi >= s.
func (x *idSet) find(s spec.SnapID) int {
	return sort.Search(len(x.iv), func(i int) bool { return x.iv[i].hi >= s })
}

func (x *idSet) has(s spec.SnapID) bool {
	i := x.find(s)
	return i < len(x.iv) && x.iv[i].lo <= s
}

// add inserts [lo, hi] (lo <= hi), merging overlapping or adjacent ranges.
func (x *idSet) add(lo, hi spec.SnapID) {
	start := lo
	if start > 0 {
		start-- // so that a range ending at lo-1 is found and merged
	}
	i := x.find(start)
	j := i
	for j < len(x.iv) && (hi == ^spec.SnapID(0) || x.iv[j].lo <= hi+1) {
		lo, hi = min(lo, x.iv[j].lo), max(hi, x.iv[j].hi)
		j++
	}
	x.iv = slices.Replace(x.iv, i, j, idRange{lo, hi})
}
