package model

import "sync"

// The ghost sequences got[c] (and cutGot[s][c], which takes got[c] when
// the receiver records) grow by one number with every receive on c. The
// explorer's states hold a few; a replayed run of a real execution holds
// one per message received, and copying got[c] at every receive and
// scanning every sequence in TypeOK and ConsistentCut after every step
// made a replay quadratic in its length. Sequences of at least
// longSeqLen numbers are therefore grown in place, and the checks of
// their elements remembered, here:
//
//   - appendNat grows a long sequence into the spare capacity of its
//     backing array when no other state has claimed that slot (states
//     stay persistent: a state's slice never sees a slot past its length,
//     and a slot, once claimed, is never written again), else copies it
//     into a new array of twice the length;
//   - a backing array so grown is never written below its claimed
//     length, so a property of its elements that holds for a prefix
//     (every number nonzero; the numbers are 1, 2, ..., k) stays true, and
//     TypeOK and ConsistentCut check only the elements past the prefix
//     already checked.
//
// Short sequences, the explorer's, take the plain path: appendCopy and a
// full scan. The results are the same either way; only the cost differs.

// longSeqLen is the length from which a sequence is grown in place and
// its checks remembered.
const longSeqLen = 64

// longSeqs is a Config's table of the backing arrays appendNat grew,
// shared by every goroutine using the Config.
type longSeqs struct {
	mu   sync.Mutex
	seqs map[*uint64]*longSeq // by the array's first element
}

// longSeq is one backing array's bookkeeping.
type longSeq struct {
	claimed  int // slots 0..claimed-1 are written and never written again
	nonzero  int // elements 0..nonzero-1 are nonzero
	counting int // elements 0..counting-1 are 1, 2, ..., counting
}

// lookup returns the bookkeeping of g's backing array if appendNat grew
// it and g starts at its beginning, else nil. Call with mu held.
func (t *longSeqs) lookup(g []uint64) *longSeq {
	if t == nil || len(g) < longSeqLen {
		return nil
	}
	return t.seqs[&g[0]]
}

// appendNat is Append(sq, x) (got' = [got EXCEPT ![c] = Append(@, m.seq)])
// for a ghost sequence of numbers, leaving sq untouched.
func (cfg *Config) appendNat(sq []uint64, x uint64) []uint64 {
	t := cfg.longSeqs
	if t == nil || len(sq)+1 < longSeqLen {
		return appendCopy(sq, x)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.lookup(sq); l != nil && l.claimed == len(sq) && cap(sq) > len(sq) {
		l.claimed++
		return append(sq, x)
	}
	n := make([]uint64, len(sq)+1, 2*(len(sq)+1))
	copy(n, sq)
	n[len(sq)] = x
	l := &longSeq{claimed: len(n)}
	if old := t.lookup(sq); old != nil { // the copied prefix keeps its checks
		l.nonzero, l.counting = min(old.nonzero, len(sq)), min(old.counting, len(sq))
	}
	t.seqs[&n[0]] = l
	return n
}

// allNonzero reports that no number of g is 0 (g \in Seq(Nat \ {0})).
func (cfg *Config) allNonzero(g []uint64) bool { return cfg.longCheck(g, seqNonzero) }

// countsFromOne reports that g is 1, 2, ..., Len(g).
func (cfg *Config) countsFromOne(g []uint64) bool { return cfg.longCheck(g, seqCounting) }

// seqCheck is one of the checks of a sequence's numbers that longSeq
// remembers: every number nonzero, or the numbers 1, 2, ..., Len.
type seqCheck uint8

const (
	seqNonzero seqCheck = iota
	seqCounting
)

// checked is how long a prefix of the array check k is known to hold for.
func (l *longSeq) checked(k seqCheck) *int {
	if k == seqNonzero {
		return &l.nonzero
	}
	return &l.counting
}

// holdsFrom reports that check k holds for g's numbers from index from on.
func (k seqCheck) holdsFrom(g []uint64, from int) bool {
	for i, x := range g[from:] {
		if k == seqNonzero && x == 0 || k == seqCounting && x != uint64(from+i+1) {
			return false
		}
	}
	return true
}

// longCheck runs check k on g: on a long g past the prefix it is known to
// hold for, remembering how far it holds now; on a short one whole.
func (cfg *Config) longCheck(g []uint64, k seqCheck) bool {
	t := cfg.longSeqs
	from := 0
	var l *longSeq
	if t != nil && len(g) >= longSeqLen {
		t.mu.Lock()
		defer t.mu.Unlock()
		if l = t.lookup(g); l != nil {
			from = min(*l.checked(k), len(g))
		}
	}
	if !k.holdsFrom(g, from) {
		return false
	}
	if l != nil && len(g) > *l.checked(k) {
		*l.checked(k) = len(g)
	}
	return true
}
