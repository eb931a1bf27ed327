package model

import (
	"fmt"
	"hash/maphash"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// The liveness check (SnapshotsComplete) rests on the argument in the
// package documentation, "Liveness without a tableau".

// measure is the progress measure of the liveness argument above.
type measure struct{ budget, unrecorded, msgs int }

func progressMeasure(cfg *Config, st *State) measure {
	var m measure
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
	if a.budget != b.budget {
		return a.budget < b.budget
	}
	if a.unrecorded != b.unrecorded {
		return a.unrecorded < b.unrecorded
	}
	return a.msgs < b.msgs
}

// Options tune Explore.
type Options struct {
	Workers       int           // 0: runtime.GOMAXPROCS(0)
	Progress      io.Writer     // progress lines go here when non-nil
	ProgressEvery time.Duration // 0: 5 s
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
// still on the queue when the run stopped.
type Result struct {
	Generated int64
	Distinct  int64
	Depth     int
	Left      int64
	Violation *Violation
	Duration  time.Duration
	// StateBytes is the total size of the stored state encodings (each
	// distinct state is kept once, encoded, with a 4-byte parent index).
	StateBytes int64
}

const numShards = 256

type candidate struct {
	key    string
	hash   uint64
	parent uint32
	isNew  bool
}

type chunkOut struct {
	cands     []candidate
	generated int64
	invState  int64 // lowest violating state id in the chunk, -1 none
	invName   spec.Property
	liveState int64
	liveSnap  int
	deadState int64
	err       error
}

// Explore runs an exhaustive breadth-first search of cfg's state graph,
// checking cfg.Invariants in every reachable state (in order) and
// cfg.Properties by the argument above. It stops at the first invariant
// violation (or deadlock, when cfg.CheckDeadlock), reporting a shortest
// counterexample; a liveness violation is reported after the search
// completes. Successors are computed in parallel, level by level; the
// result, counterexamples included, does not depend on the number of
// workers.
func Explore(cfg *Config, opt Options) (*Result, error) {
	start := time.Now()
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	invs := make([]Invariant, len(cfg.Invariants))
	for i, name := range cfg.Invariants {
		f, ok := invariantFuncs[name]
		if !ok {
			return nil, fmt.Errorf("model: unknown invariant %q", name)
		}
		invs[i] = f
	}
	checkLive := len(cfg.Properties) > 0

	seed := maphash.MakeSeed()
	var shards [numShards]map[string]struct{}
	for i := range shards {
		shards[i] = map[string]struct{}{}
	}
	var states []string // encodings by state id
	var parents []uint32
	add := func(key string, h uint64, parent uint32) {
		shards[h%numShards][key] = struct{}{}
		states = append(states, key)
		parents = append(parents, parent)
	}
	init := Key(cfg, Init(cfg))
	add(init, maphash.String(seed, init), ^uint32(0))

	res := &Result{Generated: 1}
	var generated, distinct, queued atomic.Int64
	generated.Store(1)
	distinct.Store(1)
	var stopProgress chan struct{}
	var progressDone sync.WaitGroup
	if opt.Progress != nil {
		every := opt.ProgressEvery
		if every <= 0 {
			every = 5 * time.Second
		}
		stopProgress = make(chan struct{})
		progressDone.Add(1)
		go func() {
			defer progressDone.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					el := time.Since(start).Seconds()
					d := distinct.Load()
					fmt.Fprintf(opt.Progress, "Progress: %d states generated, %d distinct states found, %d states left on queue (%.0f distinct states/s, %.1fs)\n",
						generated.Load(), d, queued.Load(), float64(d)/el, el)
				}
			}
		}()
	}
	defer func() {
		if stopProgress != nil {
			close(stopProgress)
			progressDone.Wait()
		}
	}()

	liveState, liveSnap := int64(-1), -1
	lo, hi := 0, 1
	const chunkSize = 128
	for lo < hi {
		res.Depth++
		nchunks := (hi - lo + chunkSize - 1) / chunkSize
		outs := make([]chunkOut, nchunks)
		var nextChunk atomic.Int64
		var wg sync.WaitGroup
		queued.Store(int64(hi - lo))
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 0, 512)
				var ar arena
				for {
					ci := int(nextChunk.Add(1) - 1)
					if ci >= nchunks {
						return
					}
					out := &outs[ci]
					out.invState, out.liveState, out.deadState = -1, -1, -1
					end := min(lo+(ci+1)*chunkSize, hi)
					for id := lo + ci*chunkSize; id < end; id++ {
						ar.reset() // the previous state and its successors are dead
						st, err := ar.decode(cfg, []byte(states[id]))
						if err != nil {
							out.err = err
							return
						}
						if out.invState < 0 {
							for i, f := range invs {
								if !f(cfg, st) {
									out.invState, out.invName = int64(id), cfg.Invariants[i]
									break
								}
							}
						}
						if checkLive && out.liveState < 0 && !fairEnabled(cfg, st) {
							if s := SnapshotDone(cfg, st); s >= 0 {
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
							h := maphash.Bytes(seed, buf)
							if _, seen := shards[h%numShards][string(buf)]; seen {
								return
							}
							out.cands = append(out.cands, candidate{key: string(buf), hash: h, parent: uint32(id)})
						})
						if n == 0 && cfg.CheckDeadlock && out.deadState < 0 {
							out.deadState = int64(id)
						}
						out.generated += int64(n)
						generated.Add(int64(n))
						queued.Add(-1)
					}
				}
			}()
		}
		wg.Wait()
		// Violations found in this level: the lowest state id wins.
		var invState, deadState int64 = -1, -1
		var invName spec.Property
		for i := range outs {
			o := &outs[i]
			if o.err != nil {
				return nil, o.err
			}
			res.Generated += o.generated
			if o.invState >= 0 && (invState < 0 || o.invState < invState) {
				invState, invName = o.invState, o.invName
			}
			if o.deadState >= 0 && (deadState < 0 || o.deadState < deadState) {
				deadState = o.deadState
			}
			if o.liveState >= 0 && liveState < 0 {
				liveState, liveSnap = o.liveState, o.liveSnap
			}
		}
		if invState >= 0 || deadState >= 0 {
			res.Distinct = int64(len(states))
			res.Left = int64(hi - lo)
			res.Duration = time.Since(start)
			if invState >= 0 {
				tr, err := rebuildTrace(cfg, states, parents, uint32(invState))
				if err != nil {
					return nil, err
				}
				res.Violation = &Violation{Kind: "invariant", Property: invName, Trace: tr}
			} else {
				tr, err := rebuildTrace(cfg, states, parents, uint32(deadState))
				if err != nil {
					return nil, err
				}
				res.Violation = &Violation{Kind: "deadlock", Trace: tr}
			}
			return res, nil
		}
		// Deduplicate the candidates: shard owners in parallel, each
		// walking the candidates in order, so the first occurrence wins.
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := range outs {
					cs := outs[i].cands
					for j := range cs {
						sh := cs[j].hash % numShards
						if int(sh)%workers != w {
							continue
						}
						m := shards[sh]
						if _, seen := m[cs[j].key]; !seen {
							m[cs[j].key] = struct{}{}
							cs[j].isNew = true
						}
					}
				}
			}(w)
		}
		wg.Wait()
		for i := range outs {
			for _, c := range outs[i].cands {
				if c.isNew {
					states = append(states, c.key)
					parents = append(parents, c.parent)
				}
			}
			outs[i].cands = nil
		}
		if len(states) >= 1<<32-1 {
			return nil, fmt.Errorf("model: more than 2^32 states")
		}
		distinct.Store(int64(len(states)))
		lo, hi = hi, len(states)
	}
	res.Distinct = int64(len(states))
	for _, k := range states {
		res.StateBytes += int64(len(k))
	}
	if liveState >= 0 {
		tr, err := rebuildTrace(cfg, states, parents, uint32(liveState))
		if err != nil {
			return nil, err
		}
		res.Violation = &Violation{Kind: "property", Property: spec.PropSnapshotsComplete, Trace: tr, Stutter: true,
			Detail: fmt.Sprintf("snapshot %d was initiated but never completes: the last state has no receive enabled", cfg.Snap[liveSnap])}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// rebuildTrace follows parent pointers from id to the initial state and
// recomputes each step's action: the first instance, in Next's order,
// whose successor is the next state.
func rebuildTrace(cfg *Config, states []string, parents []uint32, id uint32) ([]TraceStep, error) {
	var ids []uint32
	for x := id; x != ^uint32(0); x = parents[x] {
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
