package model

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// The liveness check (SnapshotsComplete) rests on the argument in the
// package documentation, "Liveness without a tableau".

// measure is the progress measure of the liveness argument above, ordered
// lexicographically in the order of its fields. recoveries, crashes,
// unsuspected and unaborted are constant in the fault-free
// specifications.
type measure struct {
	recoveries, crashes, budget, unrecorded, unsuspected, unaborted, msgs int
}

func progressMeasure(cfg *Config, st *State) measure {
	var m measure
	if cfg.Faults() {
		m.recoveries = cfg.MaxRecover - st.Inc
		m.crashes = cfg.MaxCrash - st.Crashes
		m.unsuspected = cfg.NumProcs() - st.Suspected.Len()
		for s := range cfg.Snap {
			if !Aborted(st, s) {
				m.unaborted++
			}
		}
	}
	for p, l := range st.Proc {
		m.budget += cfg.Budget[p] - l.Sent
	}
	for _, r := range st.Recorded {
		m.unrecorded += cfg.NumProcs() - r.Len()
	}
	for _, ms := range st.Chan {
		m.msgs += len(ms)
	}
	return m
}

func (a measure) less(b measure) bool {
	x := [...]int{a.recoveries, a.crashes, a.budget, a.unrecorded, a.unsuspected, a.unaborted, a.msgs}
	y := [...]int{b.recoveries, b.crashes, b.budget, b.unrecorded, b.unsuspected, b.unaborted, b.msgs}
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

// Options tune Explore.
type Options struct {
	Workers int // 0: runtime.GOMAXPROCS(0)

	// Progress, when non-nil, is called every ProgressEvery (0: 5 s) from
	// another goroutine with the counts reached so far.
	Progress      func(Stats)
	ProgressEvery time.Duration

	// MaxStates, when positive, stops the search once more than MaxStates
	// distinct states are stored. MaxMemory, when positive, stops it once
	// the stored states take more than MaxMemory bytes (their encodings,
	// Stats.StateBytes, plus a 4-byte parent index each; the Go heap in
	// use is a few times more). Both are checked after each breadth-first level, so
	// the search may pass them by up to one level. Result.Stop says
	// which bound stopped it.
	MaxStates int64
	MaxMemory int64

	// Stop, when closed, cancels the search: the workers finish their
	// current chunk of states and Explore returns the counts reached,
	// with Result.Stop = StopCanceled.
	Stop <-chan struct{}
}

// Stats are the counts of a search so far, as TLC counts them (see
// Result).
type Stats struct {
	Generated  int64
	Distinct   int64
	Left       int64 // states of the current level not yet explored
	Depth      int
	StateBytes int64
	Elapsed    time.Duration
}

// StopReason says why a search ended.
type StopReason uint8

const (
	// StopDone: the search explored every reachable state, or found a
	// violation; Result.Violation tells which.
	StopDone StopReason = iota
	// StopMaxStates: Options.MaxStates was reached. Not a pass.
	StopMaxStates
	// StopMaxMemory: Options.MaxMemory was reached. Not a pass.
	StopMaxMemory
	// StopCanceled: Options.Stop was closed. Not a pass.
	StopCanceled
)

func (r StopReason) String() string {
	switch r {
	case StopDone:
		return "done"
	case StopMaxStates:
		return "max-states"
	case StopMaxMemory:
		return "max-memory"
	case StopCanceled:
		return "canceled"
	}
	return "?"
}

// TraceStep is one state of a counterexample and the action that led to
// it (Label "" and Action nil for the initial state).
type TraceStep struct {
	Label  string
	Action *Action
	State  *State
}

// Violation is a property that fails, with its shortest counterexample.
type Violation struct {
	Kind     string        // "invariant", "property" (temporal) or "deadlock"
	Property spec.Property // the invariant or property ("" for deadlock)
	Detail   string        // e.g. which snapshot never completes
	Trace    []TraceStep
	Stutter  bool // the behaviour ends stuttering in its last state
}

// Result is what a run found, counted as TLC counts: Generated is the
// number of initial states plus, for every state explored, the number of
// successors computed (one per enabled action instance, duplicates
// included); Distinct is the number of distinct states found; Depth the
// number of BFS levels (a lone initial state is depth 1); Left the states
// still on the queue when the run stopped. The search passed only if Stop
// is StopDone and Violation is nil.
type Result struct {
	Generated int64
	Distinct  int64
	Depth     int
	Left      int64
	Violation *Violation
	Stop      StopReason
	Duration  time.Duration
	// StateBytes is the total size of the stored state encodings (each
	// distinct state is kept once, encoded, with a 4-byte parent index).
	StateBytes int64
}

// Passed reports whether the search explored every reachable state and
// found no violation.
func (r *Result) Passed() bool { return r.Stop == StopDone && r.Violation == nil }

// Explore runs an exhaustive breadth-first search of cfg's state graph,
// checking cfg.Invariants in every reachable state (in order) and
// cfg.Properties by the argument above. It stops at the first invariant
// violation (or deadlock, when cfg.CheckDeadlock), reporting a shortest
// counterexample; a liveness violation is reported after the search
// completes. Successors are computed in parallel, level by level; the
// result, counterexamples included, does not depend on the number of
// workers. The bounds and the Stop channel of opt end it early (see
// Options).
//
// Each level goes: expand (workers decode the level's states in chunks,
// check the invariants and the liveness condition, and list the
// successors not stored yet), firstViolation (the lowest state id that
// violates wins), dedup (shard owners keep each new state's first
// occurrence) and store (the new states become the next level).
func Explore(cfg *Config, opt Options) (*Result, error) {
	x, err := newExplorer(cfg, opt)
	if err != nil {
		return nil, err
	}
	defer x.startProgress()()
	return x.run()
}

const (
	numShards = 256
	chunkSize = 128
	noParent  = ^uint32(0)
)

// explorer is the state of one Explore run.
type explorer struct {
	cfg       *Config
	opt       Options
	workers   int
	invs      []Invariant
	checkLive bool
	start     time.Time

	seed       maphash.Seed
	shards     [numShards]map[string]struct{} // the stored states, by hash
	states     []string                       // encodings by state id
	parents    []uint32                       // parent state id by state id, noParent for the initial state
	stateBytes int64                          // the encodings' total size

	res                 Result
	liveState, liveSnap int // the first state ending a fair behaviour with snapshot liveSnap incomplete; -1 none

	// Read by the progress goroutine.
	generated, distinct, queued, bytes atomic.Int64
	depth                              atomic.Int64
}

// newExplorer checks cfg's invariant names and stores the initial state.
func newExplorer(cfg *Config, opt Options) (*explorer, error) {
	x := &explorer{cfg: cfg, opt: opt, workers: opt.Workers, start: time.Now(), seed: maphash.MakeSeed(),
		checkLive: len(cfg.Properties) > 0, liveState: -1, liveSnap: -1}
	if x.workers <= 0 {
		x.workers = runtime.GOMAXPROCS(0)
	}
	for _, name := range cfg.Invariants {
		f, ok := invariantFuncs[name]
		if !ok {
			return nil, fmt.Errorf("model: unknown invariant %q", name)
		}
		x.invs = append(x.invs, f)
	}
	for i := range x.shards {
		x.shards[i] = map[string]struct{}{}
	}
	init := Key(cfg, Init(cfg))
	x.shards[maphash.String(x.seed, init)%numShards][init] = struct{}{}
	x.store(init, noParent)
	x.res.Generated = 1
	x.generated.Store(1)
	x.distinct.Store(1)
	return x, nil
}

// store appends a new state.
func (x *explorer) store(key string, parent uint32) {
	x.states = append(x.states, key)
	x.parents = append(x.parents, parent)
	x.stateBytes += int64(len(key))
}

// stats are the counts so far.
func (x *explorer) stats() Stats {
	return Stats{Generated: x.generated.Load(), Distinct: x.distinct.Load(), Left: x.queued.Load(),
		Depth: int(x.depth.Load()), StateBytes: x.bytes.Load(), Elapsed: time.Since(x.start)}
}

// startProgress calls Options.Progress every ProgressEvery until the
// returned function is called.
func (x *explorer) startProgress() (stop func()) {
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
func (x *explorer) canceled() bool {
	select {
	case <-x.opt.Stop:
		return true
	default:
		return false
	}
}

// bounded says which bound of Options the stored states have passed, if
// any.
func (x *explorer) bounded() StopReason {
	switch {
	case x.opt.MaxStates > 0 && int64(len(x.states)) > x.opt.MaxStates:
		return StopMaxStates
	case x.opt.MaxMemory > 0 && x.stateBytes+4*int64(len(x.states)) > x.opt.MaxMemory:
		return StopMaxMemory
	}
	return StopDone
}

// run explores level by level, the states lo..hi-1 being the current
// level.
func (x *explorer) run() (*Result, error) {
	lo, hi := 0, 1
	for lo < hi {
		if why := x.bounded(); why != StopDone {
			return x.finish(why, hi-lo), nil
		}
		x.res.Depth++
		x.depth.Store(int64(x.res.Depth))
		outs, explored := x.expand(lo, hi)
		for i := range outs {
			if outs[i].err != nil {
				return nil, outs[i].err
			}
			x.res.Generated += outs[i].generated
		}
		if explored < hi-lo {
			return x.finish(StopCanceled, hi-lo-explored), nil
		}
		if v, err := x.firstViolation(outs); v != nil || err != nil {
			if err != nil {
				return nil, err
			}
			x.res.Violation = v
			return x.finish(StopDone, hi-lo), nil
		}
		x.dedup(outs)
		if err := x.storeNew(outs); err != nil {
			return nil, err
		}
		lo, hi = hi, len(x.states)
	}
	v, err := x.liveViolation()
	if err != nil {
		return nil, err
	}
	x.res.Violation = v
	return x.finish(StopDone, 0), nil
}

// storeNew stores the level's new states, in candidate order: the next
// level.
func (x *explorer) storeNew(outs []chunkOut) error {
	for i := range outs {
		for _, c := range outs[i].cands {
			if c.isNew {
				x.store(c.key, c.parent)
			}
		}
	}
	if len(x.states) >= 1<<32-1 {
		return fmt.Errorf("model: more than 2^32 states")
	}
	x.distinct.Store(int64(len(x.states)))
	x.bytes.Store(x.stateBytes)
	return nil
}

// liveViolation is the SnapshotsComplete violation found during the
// search, if any: the path to the first state that ends a fair behaviour
// with a snapshot incomplete, then stuttering.
func (x *explorer) liveViolation() (*Violation, error) {
	if x.liveState < 0 {
		return nil, nil
	}
	tr, err := rebuildTrace(x.cfg, x.states, x.parents, uint32(x.liveState))
	if err != nil {
		return nil, err
	}
	prop, _ := liveSnapshot(x.cfg, tr[len(tr)-1].State)
	return &Violation{Kind: "property", Property: prop, Trace: tr, Stutter: true, Detail: liveDetail(x.cfg, x.liveSnap)}, nil
}

// liveDetail says how the temporal property fails for snapshot index s at
// the state a fair behaviour ends in.
func liveDetail(cfg *Config, s int) string {
	if cfg.Faults() {
		return fmt.Sprintf("snapshot %d was initiated but is never complete or aborted: the last state has no fair action enabled", cfg.Snap[s])
	}
	return fmt.Sprintf("snapshot %d was initiated but never completes: the last state has no receive enabled", cfg.Snap[s])
}

// finish fills in the result's counts; left states were not explored.
func (x *explorer) finish(why StopReason, left int) *Result {
	x.res.Stop = why
	x.res.Distinct = int64(len(x.states))
	x.res.Left = int64(left)
	x.res.StateBytes = x.stateBytes
	x.res.Duration = time.Since(x.start)
	return &x.res
}

// candidate is a successor not stored when its level started.
type candidate struct {
	key    string
	hash   uint64
	parent uint32
	isNew  bool // the first occurrence of a new state (set by dedup)
}

// chunkOut is what a worker found in one chunk of a level.
type chunkOut struct {
	done      bool // the chunk was explored (not canceled)
	cands     []candidate
	generated int64
	invState  int64 // lowest violating state id in the chunk, -1 none
	invName   spec.Property
	liveState int64 // first state ending a fair behaviour with a snapshot incomplete, -1 none
	liveSnap  int
	deadState int64 // lowest deadlocked state id, -1 none
	err       error
}

// expand explores the states lo..hi-1 in chunks, in parallel. It returns
// every chunk's findings and the number of states explored (less than
// hi-lo when Options.Stop was closed).
func (x *explorer) expand(lo, hi int) ([]chunkOut, int) {
	nchunks := (hi - lo + chunkSize - 1) / chunkSize
	outs := make([]chunkOut, nchunks)
	x.queued.Store(int64(hi - lo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < x.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 512)
			var ar arena
			for {
				ci := int(next.Add(1) - 1)
				if ci >= nchunks || x.canceled() {
					return
				}
				out := &outs[ci]
				out.invState, out.liveState, out.deadState = -1, -1, -1
				for id := lo + ci*chunkSize; id < min(lo+(ci+1)*chunkSize, hi); id++ {
					if buf = x.expandState(id, out, &ar, buf); out.err != nil {
						return
					}
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

// expandState explores state id into out: checks the invariants and the
// liveness condition, and lists its successors not stored yet. buf is
// scratch space for encodings, returned for reuse.
func (x *explorer) expandState(id int, out *chunkOut, ar *arena, buf []byte) []byte {
	cfg := x.cfg
	ar.reset() // the previous state and its successors are dead
	st, err := ar.decode(cfg, []byte(x.states[id]))
	if err != nil {
		out.err = err
		return buf
	}
	if out.invState < 0 {
		for i, f := range x.invs {
			if !f(cfg, st) {
				out.invState, out.invName = int64(id), cfg.Invariants[i]
				break
			}
		}
	}
	if x.checkLive && out.liveState < 0 && !fairEnabled(cfg, st) {
		if _, s := liveSnapshot(cfg, st); s >= 0 {
			out.liveState, out.liveSnap = int64(id), s
		}
	}
	m0 := progressMeasure(cfg, st)
	n := 0
	forEachSuccessor(cfg, st, func(a Action, succ *State) {
		n++
		if out.err == nil && !progressMeasure(cfg, succ).less(m0) {
			out.err = fmt.Errorf("model: %s does not decrease the progress measure; the liveness argument does not apply", a.Label(cfg))
		}
		buf = AppendEncode(buf[:0], cfg, succ)
		h := maphash.Bytes(x.seed, buf)
		if _, seen := x.shards[h%numShards][string(buf)]; seen {
			return
		}
		out.cands = append(out.cands, candidate{key: string(buf), hash: h, parent: uint32(id)})
	})
	if n == 0 && cfg.CheckDeadlock && out.deadState < 0 {
		out.deadState = int64(id)
	}
	out.generated += int64(n)
	x.generated.Add(int64(n))
	x.queued.Add(-1)
	return buf
}

// firstViolation picks the level's violation, if any: the invariant
// violation or deadlock at the lowest state id (the chunks are in state
// order, so this does not depend on the workers), with its trace. It also
// records the first liveness candidate seen.
func (x *explorer) firstViolation(outs []chunkOut) (*Violation, error) {
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
			x.liveState, x.liveSnap = int(o.liveState), o.liveSnap
		}
	}
	switch {
	case invState >= 0:
		tr, err := rebuildTrace(x.cfg, x.states, x.parents, uint32(invState))
		return &Violation{Kind: "invariant", Property: invName, Trace: tr}, err
	case deadState >= 0:
		tr, err := rebuildTrace(x.cfg, x.states, x.parents, uint32(deadState))
		return &Violation{Kind: "deadlock", Trace: tr}, err
	}
	return nil, nil
}

// dedup marks the first occurrence of each new state among the level's
// candidates: shard owners in parallel, each walking the candidates in
// order, so the first occurrence wins whatever the number of workers.
func (x *explorer) dedup(outs []chunkOut) {
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
					if _, seen := x.shards[sh][cs[j].key]; !seen {
						x.shards[sh][cs[j].key] = struct{}{}
						cs[j].isNew = true
					}
				}
			}
		}(w)
	}
	wg.Wait()
}

// rebuildTrace follows parent pointers from id to the initial state and
// recomputes each step's action: the first instance, in Next's order,
// whose successor is the next state.
func rebuildTrace(cfg *Config, states []string, parents []uint32, id uint32) ([]TraceStep, error) {
	var ids []uint32
	for x := id; x != noParent; x = parents[x] {
		ids = append(ids, x)
	}
	var tr []TraceStep
	var prev *State
	for i := len(ids) - 1; i >= 0; i-- {
		st, err := Decode(cfg, []byte(states[ids[i]]))
		if err != nil {
			return nil, err
		}
		if prev == nil {
			tr = append(tr, TraceStep{State: st})
		} else {
			var found *Action
			want := states[ids[i]]
			forEachSuccessor(cfg, prev, func(a Action, succ *State) {
				if found == nil && Key(cfg, succ) == want {
					a := a
					found = &a
				}
			})
			if found == nil {
				return nil, fmt.Errorf("model: internal error: no action leads from state %d to state %d", ids[i+1], ids[i])
			}
			tr = append(tr, TraceStep{Label: found.Label(cfg), Action: found, State: st})
		}
		prev = st
	}
	return tr, nil
}
