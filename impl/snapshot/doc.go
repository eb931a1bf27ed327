// Package snapshot holds the data of a Chandy-Lamport snapshot as the
// implementation records it: each node's local Part (its state and its
// incoming channels' recorded messages), the Global snapshot assembled
// from one part per process, and the checks that a cut is consistent.
// The runtime produces parts and assembles them; the store persists them.
//
// Use it in this order:
//
//  1. Each node's completed core.LocalSnapshot becomes a Part with
//     PartOf.
//  2. Assemble joins one part per process of the topology into a Global,
//     which it validates.
//  3. A Global is read through Abstract (the spec's global state),
//     RecordedSnapshot (what a trace carries), Cut (where Restore resumes
//     each channel), Local (a process's core.LocalSnapshot, for restore),
//     Total, InFlight and Recorded; it is persisted as JSON (impl/store),
//     and Validate is what a loaded snapshot must pass again.
//
// What it promises:
//
//   - Round trip: for a consistent snapshot g, Assemble of g's parts, in
//     any order, returns g; Local(p) is p's LocalSnapshot, and PartOf of
//     it is p's part again (PartOf and Local are inverse); g's JSON
//     encoding decodes strictly (spec.DecodeStrict) to g.
//   - Abstraction: Abstract maps every process to its recorded
//     spec.LocalState and every channel to its recorded messages (amount
//     and seq, in order); Cut is core.Cut of the parts; Total is the
//     balances plus InFlight, the recorded amounts; Recorded counts the
//     recorded messages.
//   - Refusal: Assemble names the snapshot and what does not fit (see
//     Assemble). Validate refuses a snapshot without topology or with id
//     0, an unknown initiator, a missing, extra or misplaced node or
//     channel state, negative counters, send or receive seqs of 0, and
//     any channel whose recorded messages are not exactly those in flight
//     across the cut (orphans, lost or extra messages, wrong seqs, amounts
//     that are not positive); its error names the snapshot and the
//     process or channel at fault.
//
// Values: ids are any positive uint64; seqs any positive uint64; App and
// Payload are opaque bytes; amounts are positive int64s (Total does not
// guard against overflow: the applications keep money within int64).
package snapshot
