package engine

import (
	"time"

	"github.com/markerwave/markerwave/spec"
)

// Spec is a specification the engine searches, seen through the
// canonical encodings of its states.
type Spec interface {
	// Init returns the canonical encodings of the initial states, in
	// order.
	Init() ([][]byte, error)
	// NewExpander returns an Expander for one worker. The engine calls
	// each Expander from one goroutine at a time.
	NewExpander() Expander
	// CheckDeadlock reports whether a state with no successor is a
	// violation (TLC's CHECK_DEADLOCK).
	CheckDeadlock() bool
}

// Expander checks states and computes their successors.
type Expander interface {
	// Expand checks the state whose canonical encoding is enc and calls
	// emit with the canonical encoding of each successor, one call per
	// enabled action instance (duplicates included), in a fixed order.
	// emit copies what it keeps: the slice may be reused after it
	// returns, and so may enc after Expand returns. An error ends the
	// search.
	Expand(enc []byte, emit func(succ []byte)) (Verdict, error)
}

// Verdict is what Expand found about a state itself.
type Verdict struct {
	// Invariant is the first invariant, in the specification's order,
	// that the state violates; "" if none.
	Invariant spec.Property
	// Live is the liveness property violated by a fair behaviour that
	// ends stuttering in this state; "" if none. The engine reports the
	// first such state it meets after the search completes (no
	// invariant violation or deadlock found).
	Live spec.Property
}

// Options tune Run.
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
	// use is a few times more). Both are checked after each breadth-first
	// level, so the search may pass them by up to one level. Result.Stop
	// says which bound stopped it.
	MaxStates int64
	MaxMemory int64

	// Stop, when closed, cancels the search: the workers finish their
	// current chunk of states and Run returns the counts reached, with
	// Result.Stop = StopCanceled.
	Stop <-chan struct{}

	// Fingerprint stores each distinct state as a 64-bit fingerprint of
	// its encoding (XXH64) instead of the encoding, as TLC does: 8 bytes
	// a state (in a table at most 3/4 full) instead of the encoding's
	// ~190, at the price of a small probability that two distinct states
	// share a fingerprint and the second is never explored
	// (Counts.Collision estimates it). The frontier (the current and the
	// next BFS level, encoded) is kept in memory up to FrontierMemory
	// bytes (0: 256 MiB) and spilled to files in TempDir ("": the system's)
	// beyond; each state's fingerprint and parent go to a trace file there,
	// from which a violation's path is rebuilt by re-expanding from an
	// initial state and confirmed (its last state is checked again). The
	// counts of a passing search equal the exact mode's when no two states
	// collide. A violation stops the search at the end of the batch of
	// states it is in, not of its level, so the counts of a failing
	// search are smaller than the exact mode's. MaxMemory bounds the
	// fingerprint set.
	Fingerprint    bool
	FrontierMemory int64
	TempDir        string
}

// Stats are the counts of a search so far, as TLC counts them (see
// Counts).
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

// Kinds of Violation.
const (
	KindInvariant = "invariant"
	KindProperty  = "property" // a liveness (temporal) property
	KindDeadlock  = "deadlock"
)

// Violation is a property that fails, with a shortest path to it.
type Violation struct {
	Kind     string        // KindInvariant, KindProperty or KindDeadlock
	Property spec.Property // "" for a deadlock
	// Path holds the encodings of the states from an initial state to the
	// violating one. For KindProperty the behaviour ends stuttering in the
	// last state.
	Path [][]byte
}

// Counts are what a search counted, as TLC counts: Generated is the
// number of initial states plus, for every state explored, the number of
// successors computed (one per enabled action instance, duplicates
// included); Distinct is the number of distinct states found; Depth the
// number of BFS levels (a lone initial state is depth 1); Left the states
// still on the queue when the search stopped; Stop why it stopped.
type Counts struct {
	Generated int64
	Distinct  int64
	Depth     int
	Left      int64
	Stop      StopReason
	Duration  time.Duration
	// StateBytes is the total size of the stored state encodings (each
	// distinct state is kept once, encoded, with a 4-byte parent index);
	// in fingerprint mode, the size of the fingerprint set.
	StateBytes int64

	// Fingerprints: the search ran in fingerprint mode (Options).
	Fingerprints bool
	// Collision is, in fingerprint mode, TLC's "calculated (optimistic)"
	// estimate of the probability that two distinct states had the same
	// fingerprint: Distinct * (Generated - Distinct) / 2^64
	// (tlc2.tool.AbstractChecker.calculateOptimisticProbability).
	Collision float64
	// SpilledBytes is, in fingerprint mode, how many bytes of frontier
	// were written to disk.
	SpilledBytes int64
}

// Result is what Run found. The search passed only if Stop is StopDone
// and Violation is nil.
type Result struct {
	Counts
	Violation *Violation
}

// Passed reports whether the search explored every reachable state and
// found no violation.
func (r *Result) Passed() bool { return r.Stop == StopDone && r.Violation == nil }
