// Package engine is the explicit-state search shared by every
// specification's Go model: a breadth-first search by levels, successors
// computed in parallel in chunks, each distinct state stored once as its
// canonical encoding with a parent index, counts as TLC counts them, a
// shortest path to the first violation, bounds, cancellation and progress.
// It knows nothing of any one specification.
//
// # Plugging a specification in
//
// In order:
//
//  1. Give every state a canonical encoding: two states are equal (as TLA+
//     values) iff their encodings are equal. The engine hashes, compares
//     and stores encodings and nothing else.
//  2. Implement Spec: Init lists the initial states' encodings, in TLC's
//     order; CheckDeadlock says whether a state with no successor is a
//     violation; NewExpander returns one Expander per worker (its scratch
//     space is its own).
//  3. Implement Expander.Expand: decode the state, check the invariants in
//     order and report the first one that fails in Verdict.Invariant (a
//     typed spec.Property), report in Verdict.Live the liveness property
//     the state violates as the last state of a fair behaviour (if the
//     specification's liveness check can be phrased that way, as in
//     model's "Liveness without a tableau"), and call emit once per
//     enabled action instance with the successor's encoding, in the
//     order of the specification's Next (TLC's Generated counts every
//     call).
//  4. Call Run(spec, Options{...}). Result gives TLC's numbers; on a
//     violation Result.Violation.Path holds the encodings of a shortest
//     path from an initial state. Turn it into a trace with action labels
//     by recomputing, for each step, the first action instance whose
//     successor has the next encoding (model.Explore does this in
//     rebuildTrace, on engine.RebuildPath).
//
// model/explore.go is the adapter for tla/ChandyLamport.tla and its
// variants; a new specification's adapter has the same shape.
//
// # Exact and fingerprint modes
//
// By default each distinct state is stored as its encoding, which is
// exact and lets a counterexample be read back directly. With
// Options.Fingerprint the engine stores a 64-bit fingerprint of each
// encoding instead, as TLC does, keeps the BFS frontier in files beyond
// Options.FrontierMemory, and writes each state's fingerprint and parent
// to a trace file; a violation's path is rebuilt from it by re-expanding
// from the initial state and confirmed. Counts.Collision is TLC's
// estimate of the probability that two distinct states collided (and one
// was never explored). Use it when the states do not fit in memory.
package engine
