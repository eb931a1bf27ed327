package engine

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// Run searches sp's state graph breadth-first. It stops at the first
// invariant violation (or deadlock, when sp.CheckDeadlock()), reporting a
// shortest path to it; a liveness violation (Verdict.Live) is reported
// after the search completes. Successors are computed in parallel, level
// by level; the result, paths included, does not depend on the number of
// workers. The bounds and the Stop channel of opt end it early (see
// Options).
//
// Each level goes: expand (workers expand the level's states in chunks,
// keeping the successors not stored yet), firstViolation (the lowest
// state id that violates wins), dedup (shard owners keep each new state's
// first occurrence) and storeNew (the new states become the next level).
func Run(sp Spec, opt Options) (*Result, error) {
	x, err := newSearch(sp, opt)
	if err != nil {
		return nil, err
	}
	defer x.startProgress()()
	if x.fp != nil {
		defer x.fp.close()
		return x.runFP()
	}
	return x.run()
}

const (
	numShards = 256
	chunkSize = 128
	noParent  = ^uint32(0)
)

// search is the state of one Run.
type search struct {
	sp       Spec
	opt      Options
	deadlock bool
	workers  int
	start    time.Time

	seed       maphash.Seed
	shards     [numShards]map[string]struct{} // the stored states, by hash
	states     []string                       // encodings by state id
	parents    []uint32                       // parent state id by state id, noParent for an initial state
	stateBytes int64                          // the encodings' total size

	fp   *fpMode    // nil in exact mode
	outs []chunkOut // reused by expand

	res       Result
	liveState int // the first state ending a fair behaviour that violates liveProp; -1 none
	liveProp  spec.Property

	// Read by the progress goroutine.
	generated, distinct, queued, bytes atomic.Int64
	depth                              atomic.Int64
}

// newSearch stores the initial states.
func newSearch(sp Spec, opt Options) (*search, error) {
	x := &search{sp: sp, opt: opt, deadlock: sp.CheckDeadlock(), workers: opt.Workers, start: time.Now(),
		seed: maphash.MakeSeed(), liveState: -1}
	if x.workers <= 0 {
		x.workers = runtime.GOMAXPROCS(0)
	}
	for i := range x.shards {
		x.shards[i] = map[string]struct{}{}
	}
	inits, err := sp.Init()
	if err != nil {
		return nil, err
	}
	if opt.Fingerprint {
		if x.fp, err = newFPMode(opt); err != nil {
			return nil, err
		}
	}
	for _, enc := range inits {
		if x.fp != nil {
			if err := x.fp.storeInit(enc); err != nil {
				x.fp.close()
				return nil, err
			}
			continue
		}
		sh := x.shards[maphash.Bytes(x.seed, enc)%numShards]
		if _, seen := sh[string(enc)]; !seen {
			sh[string(enc)] = struct{}{}
			x.store(string(enc), noParent)
		}
	}
	x.res.Generated = int64(len(inits))
	x.generated.Store(x.res.Generated)
	x.distinct.Store(x.stored())
	return x, nil
}

// stored is the number of distinct states stored.
func (x *search) stored() int64 {
	if x.fp != nil {
		return x.fp.n
	}
	return int64(len(x.states))
}

// store appends a new state.
func (x *search) store(key string, parent uint32) {
	x.states = append(x.states, key)
	x.parents = append(x.parents, parent)
	x.stateBytes += int64(len(key))
}

// stats are the counts so far.
func (x *search) stats() Stats {
	return Stats{Generated: x.generated.Load(), Distinct: x.distinct.Load(), Left: x.queued.Load(),
		Depth: int(x.depth.Load()), StateBytes: x.bytes.Load(), Elapsed: time.Since(x.start)}
}

// startProgress calls Options.Progress every ProgressEvery until the
// returned function is called.
func (x *search) startProgress() (stop func()) {
	if x.opt.Progress == nil {
		return func() {}
	}
	every := x.opt.ProgressEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				x.opt.Progress(x.stats())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// canceled reports whether Options.Stop is closed.
func (x *search) canceled() bool {
	select {
	case <-x.opt.Stop:
		return true
	default:
		return false
	}
}

// bounded says which bound of Options the stored states have passed, if
// any.
func (x *search) bounded() StopReason {
	switch {
	case x.opt.MaxStates > 0 && x.stored() > x.opt.MaxStates:
		return StopMaxStates
	case x.opt.MaxMemory > 0 && x.memory() > x.opt.MaxMemory:
		return StopMaxMemory
	}
	return StopDone
}

// memory is what the stored states take: their encodings and parent
// indexes, or in fingerprint mode the fingerprint set.
func (x *search) memory() int64 {
	if x.fp != nil {
		return x.fp.set.bytes()
	}
	return x.stateBytes + 4*int64(len(x.states))
}

// run explores level by level, the states lo..hi-1 being the current
// level.
func (x *search) run() (*Result, error) {
	lo, hi := 0, len(x.states)
	for lo < hi {
		if why := x.bounded(); why != StopDone {
			return x.finish(why, hi-lo), nil
		}
		x.res.Depth++
		x.depth.Store(int64(x.res.Depth))
		x.queued.Store(int64(hi - lo))
		outs, explored := x.expand(lo, hi-lo, func(dst []byte, id int) []byte { return append(dst, x.states[id]...) })
		if err := x.count(outs); err != nil {
			return nil, err
		}
		if explored < hi-lo {
			return x.finish(StopCanceled, hi-lo-explored), nil
		}
		if v, err := x.firstViolation(outs); v != nil || err != nil {
			x.res.Violation = v
			return x.finish(StopDone, hi-lo), err
		}
		x.dedup(outs)
		if err := x.storeNew(outs); err != nil {
			return nil, err
		}
		lo, hi = hi, len(x.states)
	}
	return x.finishLive()
}

// count adds the chunks' generated states to the result, or returns the
// first chunk's error.
func (x *search) count(outs []chunkOut) error {
	for i := range outs {
		if outs[i].err != nil {
			return outs[i].err
		}
		x.res.Generated += outs[i].generated
	}
	return nil
}

// finishLive ends a search that covered every state: it reports the
// liveness violation found, if any.
func (x *search) finishLive() (*Result, error) {
	if x.liveState >= 0 {
		p, err := x.path(KindProperty, x.liveProp, uint32(x.liveState))
		if err != nil {
			return nil, err
		}
		x.res.Violation = &Violation{Kind: KindProperty, Property: x.liveProp, Path: p}
	}
	return x.finish(StopDone, 0), nil
}

// storeNew stores the level's new states, in candidate order: the next
// level.
func (x *search) storeNew(outs []chunkOut) error {
	for i := range outs {
		for _, c := range outs[i].cands {
			if c.isNew {
				x.store(c.key, c.parent)
			}
		}
	}
	if len(x.states) >= maxStates {
		return fmt.Errorf("engine: more than 2^32 states")
	}
	x.distinct.Store(int64(len(x.states)))
	x.bytes.Store(x.stateBytes)
	return nil
}

// finish fills in the result's counts; left states were not explored.
func (x *search) finish(why StopReason, left int) *Result {
	x.res.Stop = why
	x.res.Distinct = x.stored()
	x.res.Left = int64(left)
	x.res.StateBytes = x.stateBytes
	if x.fp != nil {
		x.res.StateBytes = x.fp.set.bytes()
		x.res.Fingerprints = true
		x.res.Collision = collisionProbability(x.res.Distinct, x.res.Generated)
		x.res.SpilledBytes = x.fp.spilled
	}
	x.res.Duration = time.Since(x.start)
	return &x.res
}

// maxStates is the most states a search stores: ids are 32-bit.
const maxStates = 1<<32 - 1

// candidate is a successor not stored when its level (or, in fingerprint
// mode, its batch) started; its encoding is keys[off:off+n] of its
// chunk.
type candidate struct {
	off, n uint32
	hash   uint64 // the fingerprint, in fingerprint mode
	parent uint32
	isNew  bool   // the first occurrence of a new state (set by dedup)
	key    string // the encoding, for a new state in exact mode (set by dedup)
}

// chunkOut is what a worker found in one chunk of a level.
type chunkOut struct {
	done      bool // the chunk was explored (not canceled)
	cands     []candidate
	keys      []byte // the candidates' encodings
	generated int64
	invState  int64 // lowest violating state id in the chunk, -1 none
	invName   spec.Property
	liveState int64 // first state ending a fair behaviour that violates liveProp, -1 none
	liveProp  spec.Property
	deadState int64 // lowest deadlocked state id, -1 none
	err       error
}

// expand explores the n states with ids lo..lo+n-1 in chunks, in
// parallel; load appends a state's encoding to dst. It returns every
// chunk's findings and the number of states explored (less than n when
// Options.Stop was closed).
func (x *search) expand(lo, n int, load func(dst []byte, id int) []byte) ([]chunkOut, int) {
	hi := lo + n
	nchunks := (n + chunkSize - 1) / chunkSize
	outs := x.chunkOuts(nchunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < x.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := x.sp.NewExpander()
			var enc []byte // the state being expanded, copied: Expand may not keep it
			var out *chunkOut
			var id int
			var n int64
			emit := func(succ []byte) {
				n++
				var h uint64
				if x.fp != nil {
					if h = fingerprint(succ); x.fp.set.contains(h) {
						return
					}
				} else {
					h = maphash.Bytes(x.seed, succ)
					if _, seen := x.shards[h%numShards][string(succ)]; seen {
						return
					}
				}
				out.cands = append(out.cands, candidate{off: uint32(len(out.keys)), n: uint32(len(succ)), hash: h, parent: uint32(id)})
				out.keys = append(out.keys, succ...)
			}
			for {
				ci := int(next.Add(1) - 1)
				if ci >= nchunks || x.canceled() {
					return
				}
				out = &outs[ci]
				out.invState, out.liveState, out.deadState = -1, -1, -1
				for id = lo + ci*chunkSize; id < min(lo+(ci+1)*chunkSize, hi); id++ {
					n = 0
					enc = load(enc[:0], id)
					v, err := ex.Expand(enc, emit)
					if err != nil {
						out.err = err
						return
					}
					x.note(out, id, v, n)
				}
				out.done = true
			}
		}()
	}
	wg.Wait()
	explored := 0
	for ci := range outs {
		if outs[ci].done {
			explored += min(lo+(ci+1)*chunkSize, hi) - (lo + ci*chunkSize)
		}
	}
	return outs, explored
}

// chunkOuts returns n empty chunkOuts, reusing the buffers of the
// previous level's (or batch's): its candidates are stored or dropped by
// now, and regrowing the buffers every time was a fifth of the CPU time.
func (x *search) chunkOuts(n int) []chunkOut {
	if cap(x.outs) < n {
		x.outs = append(x.outs[:cap(x.outs)], make([]chunkOut, n-cap(x.outs))...)
	}
	outs := x.outs[:n]
	for i := range outs {
		outs[i] = chunkOut{cands: outs[i].cands[:0], keys: outs[i].keys[:0]}
	}
	return outs
}

// note records in out what expanding state id found: its verdict and its
// n successors.
func (x *search) note(out *chunkOut, id int, v Verdict, n int64) {
	if v.Invariant != "" && out.invState < 0 {
		out.invState, out.invName = int64(id), v.Invariant
	}
	if v.Live != "" && out.liveState < 0 {
		out.liveState, out.liveProp = int64(id), v.Live
	}
	if n == 0 && x.deadlock && out.deadState < 0 {
		out.deadState = int64(id)
	}
	out.generated += n
	x.generated.Add(n)
	x.queued.Add(-1)
}

// firstViolation picks the level's violation, if any: the invariant
// violation or deadlock at the lowest state id (the chunks are in state
// order, so this does not depend on the workers), with its path. It also
// records the first liveness violation seen.
func (x *search) firstViolation(outs []chunkOut) (*Violation, error) {
	var invState, deadState int64 = -1, -1
	var invName spec.Property
	for i := range outs {
		o := &outs[i]
		if o.invState >= 0 && (invState < 0 || o.invState < invState) {
			invState, invName = o.invState, o.invName
		}
		if o.deadState >= 0 && (deadState < 0 || o.deadState < deadState) {
			deadState = o.deadState
		}
		if o.liveState >= 0 && x.liveState < 0 {
			x.liveState, x.liveProp = int(o.liveState), o.liveProp
		}
	}
	v := &Violation{Kind: KindInvariant, Property: invName}
	id := invState
	switch {
	case invState >= 0:
	case deadState >= 0:
		v.Kind, v.Property, id = KindDeadlock, "", deadState
	default:
		return nil, nil
	}
	var err error
	v.Path, err = x.path(v.Kind, v.Property, uint32(id))
	return v, err
}

// dedup marks the first occurrence of each new state among the level's
// candidates: shard owners in parallel, each walking the candidates in
// order, so the first occurrence wins whatever the number of workers.
func (x *search) dedup(outs []chunkOut) {
	var wg sync.WaitGroup
	for w := 0; w < x.workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range outs {
				cs := outs[i].cands
				for j := range cs {
					sh := cs[j].hash % numShards
					if int(sh)%x.workers != w {
						continue
					}
					if x.fp != nil {
						cs[j].isNew = x.fp.set.insert(cs[j].hash)
						continue
					}
					key := outs[i].keys[cs[j].off : cs[j].off+cs[j].n]
					if _, seen := x.shards[sh][string(key)]; !seen {
						cs[j].key = string(key)
						x.shards[sh][cs[j].key] = struct{}{}
						cs[j].isNew = true
					}
				}
			}
		}(w)
	}
	wg.Wait()
}

// path is the encodings of the states from an initial state to state id,
// which violates prop as kind says: following parent pointers, or in
// fingerprint mode rebuilt and confirmed (fpPath).
func (x *search) path(kind string, prop spec.Property, id uint32) ([][]byte, error) {
	if x.fp != nil {
		return x.fpPath(kind, prop, id)
	}
	var rev [][]byte
	for s := id; s != noParent; s = x.parents[s] {
		rev = append(rev, []byte(x.states[s]))
	}
	p := make([][]byte, len(rev))
	for i := range rev {
		p[i] = rev[len(rev)-1-i]
	}
	return p, nil
}
