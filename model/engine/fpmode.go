package engine

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/markerwave/markerwave/spec"
)

// fingerprint is a state's 64-bit fingerprint: XXH64 of its canonical
// encoding (github.com/cespare/xxhash/v2: fast on short inputs, good
// avalanche, and the same on every machine and run, so a fingerprint
// run is reproducible).
func fingerprint(enc []byte) uint64 { return xxhash.Sum64(enc) }

// collisionProbability is TLC's "calculated (optimistic)" estimate: n
// distinct states, each of the m-n other generated states compared with
// them, each comparison a false match with probability 2^-64.
func collisionProbability(distinct, generated int64) float64 {
	return float64(distinct) * (float64(generated-distinct) / math.Exp2(64))
}

// batchStates is how many states of a level fingerprint mode expands
// between two dedup steps: it bounds the candidates held in memory.
var batchStates = 512 * chunkSize // a variable for the tests

const defaultFrontierMemory = 256 << 20

// fpMode is the state of a search in fingerprint mode: the fingerprint
// set, the trace file, and the current and next levels.
type fpMode struct {
	set       fpSet
	trace     *traceFile
	cur, next *queue
	dir       string
	budget    int   // bytes of each level's queue kept in memory
	n         int64 // states stored: the next state id
	spilled   int64
}

func newFPMode(opt Options) (*fpMode, error) {
	mem := opt.FrontierMemory
	if mem <= 0 {
		mem = defaultFrontierMemory
	}
	tr, err := newTraceFile(opt.TempDir)
	if err != nil {
		return nil, err
	}
	m := &fpMode{trace: tr, dir: opt.TempDir, budget: int(mem / 2)}
	m.cur, m.next = newQueue(m.dir, m.budget), newQueue(m.dir, m.budget)
	return m, nil
}

// storeInit stores an initial state, unless it is stored already.
func (m *fpMode) storeInit(enc []byte) error {
	h := fingerprint(enc)
	if !m.set.insert(h) {
		return nil
	}
	return m.add(m.cur, enc, h, noParent)
}

// add gives a new state the next id, records it in the trace file and
// queues it on q.
func (m *fpMode) add(q *queue, enc []byte, h uint64, parent uint32) error {
	if m.n >= maxStates {
		return fmt.Errorf("engine: more than 2^32 states")
	}
	m.n++
	if err := m.trace.add(h, parent); err != nil {
		return err
	}
	return q.push(enc)
}

func (m *fpMode) close() {
	m.set.free()
	m.trace.close()
	m.cur.close()
	m.next.close()
}

// runFP is run in fingerprint mode: each level is read back from its
// queue in batches of batchStates; each batch is expanded, deduplicated
// and stored as the exact mode does a whole level (so the result does
// not depend on the number of workers), its new states queued for the
// next level.
func (x *search) runFP() (*Result, error) {
	m := x.fp
	var batch []byte // the batch's encodings, back to back
	var offs []int   // where each starts in batch, and its end
	base := int64(0) // the id of the level's first state
	for m.cur.n > 0 {
		x.res.Depth++
		x.depth.Store(int64(x.res.Depth))
		if err := m.cur.startReading(); err != nil {
			return nil, err
		}
		left := m.cur.n
		x.queued.Store(left)
		first := base
		for left > 0 {
			if why := x.bounded(); why != StopDone {
				return x.finish(why, int(left)), nil
			}
			batch, offs = batch[:0], append(offs[:0], 0)
			for len(offs) <= batchStates {
				var ok bool
				var err error
				if batch, ok, err = m.cur.next(batch); err != nil {
					return nil, err
				} else if !ok {
					break
				}
				offs = append(offs, len(batch))
			}
			n := len(offs) - 1
			outs, explored := x.expand(int(first), n, func(dst []byte, id int) []byte {
				i := id - int(first)
				return append(dst, batch[offs[i]:offs[i+1]]...)
			})
			if err := x.count(outs); err != nil {
				return nil, err
			}
			if explored < n {
				return x.finish(StopCanceled, int(left)-explored), nil
			}
			if v, err := x.firstViolation(outs); v != nil || err != nil {
				x.res.Violation = v
				return x.finish(StopDone, int(left)), err
			}
			x.dedup(outs)
			if err := x.storeNewFP(outs); err != nil {
				return nil, err
			}
			left -= int64(n)
			first += int64(n)
		}
		m.spilled += m.next.spilt
		base += m.cur.n
		m.cur.close()
		m.cur, m.next = m.next, newQueue(m.dir, m.budget)
	}
	return x.finishLive()
}

// storeNewFP stores the batch's new states, in candidate order, on the
// next level's queue.
func (x *search) storeNewFP(outs []chunkOut) error {
	m := x.fp
	for i := range outs {
		o := &outs[i]
		for _, c := range o.cands {
			if c.isNew {
				if err := m.add(m.next, o.keys[c.off:c.off+c.n], c.hash, c.parent); err != nil {
					return err
				}
			}
		}
	}
	x.distinct.Store(m.n)
	x.bytes.Store(m.set.bytes())
	return nil
}

// fpPath rebuilds the path to state id from the trace file: the
// fingerprints from an initial state to id, then, from the initial state
// with the first fingerprint, at each step the first successor with the
// next one. Its last state is expanded again to confirm that it violates
// prop as kind says. Either fails only if two states shared a
// fingerprint.
func (x *search) fpPath(kind string, prop spec.Property, id uint32) ([][]byte, error) {
	fps, err := x.fp.trace.fingerprints(id)
	if err != nil {
		return nil, err
	}
	inits, err := x.sp.Init()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(inits, func(enc []byte) bool { return fingerprint(enc) == fps[0] })
	if i < 0 {
		return nil, fmt.Errorf("engine: fingerprint mode: no initial state has the fingerprint of the path's first state (a collision?); check again without fingerprints")
	}
	path := [][]byte{bytes.Clone(inits[i])}
	ex := x.sp.NewExpander()
	for step := 1; step < len(fps); step++ {
		var found []byte
		if _, err := ex.Expand(path[step-1], func(succ []byte) {
			if found == nil && fingerprint(succ) == fps[step] {
				found = bytes.Clone(succ)
			}
		}); err != nil {
			return nil, err
		}
		if found == nil {
			return nil, fmt.Errorf("engine: fingerprint mode: no successor of step %d has the fingerprint of step %d (a collision?); check again without fingerprints", step, step+1)
		}
		path = append(path, found)
	}
	var n int
	v, err := ex.Expand(path[len(path)-1], func([]byte) { n++ })
	if err != nil {
		return nil, err
	}
	confirmed := false
	switch kind {
	case KindInvariant:
		confirmed = v.Invariant == prop
	case KindProperty:
		confirmed = v.Live == prop
	case KindDeadlock:
		confirmed = n == 0
	}
	if !confirmed {
		return nil, fmt.Errorf("engine: fingerprint mode: the rebuilt path's last state does not confirm the %s violation (a collision?); check again without fingerprints", kind)
	}
	return path, nil
}
