package engine

// fpSet is the set of stored fingerprints in fingerprint mode: numShards
// open-addressing tables of 64-bit fingerprints (linear probing, at most
// 3/4 full, doubled when full), so that a table grows by one shard at a
// time and shard owners insert in parallel without locks. Fingerprint 0
// marks an empty slot; the fingerprint 0 itself is stored as 1 (a
// collision like any other, counted in the collision estimate).
type fpSet struct {
	shards [numShards]fpTable
}

type fpTable struct {
	slots []uint64
	n     int
}

const fpInitSlots = 1 << 10

// fpSlot maps fingerprint fp (already not 0) to its home slot in a table of
// size n (a power of two): its high bits, the shard being its low bits.
func fpSlot(fp uint64, n int) int { return int(fp>>32) & (n - 1) }

func nonZero(fp uint64) uint64 {
	if fp == 0 {
		return 1
	}
	return fp
}

// contains reports whether fp is stored. Safe to call concurrently while
// nothing inserts.
func (s *fpSet) contains(fp uint64) bool {
	fp = nonZero(fp)
	t := &s.shards[fp%numShards]
	if t.slots == nil {
		return false
	}
	mask := len(t.slots) - 1
	for i := fpSlot(fp, len(t.slots)); ; i = (i + 1) & mask {
		switch t.slots[i] {
		case fp:
			return true
		case 0:
			return false
		}
	}
}

// insert stores fp and reports whether it was new. Calls for one shard
// must not run concurrently.
func (s *fpSet) insert(fp uint64) bool {
	fp = nonZero(fp)
	t := &s.shards[fp%numShards]
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := fpSlot(fp, len(t.slots)); ; i = (i + 1) & mask {
		switch t.slots[i] {
		case fp:
			return false
		case 0:
			t.slots[i] = fp
			t.n++
			return true
		}
	}
}

func (t *fpTable) grow() {
	old := t.slots
	defer freeSlots(old)
	t.slots = allocSlots(max(2*len(old), fpInitSlots))
	mask := len(t.slots) - 1
	for _, fp := range old {
		if fp == 0 {
			continue
		}
		i := fpSlot(fp, len(t.slots))
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = fp
	}
}

// free releases the tables.
func (s *fpSet) free() {
	for i := range s.shards {
		freeSlots(s.shards[i].slots)
		s.shards[i] = fpTable{}
	}
}

// bytes is the memory the tables take.
func (s *fpSet) bytes() int64 {
	var b int64
	for i := range s.shards {
		b += 8 * int64(len(s.shards[i].slots))
	}
	return b
}
