// Package mutation shows that the conformance suite can fail, and that it
// names the property a broken implementation violates: its test copies
// the repository's tracked files into a temporary directory once per
// mutant, breaks one rule of the algorithm there (impl/core) or one
// guarantee of a channel (impl/transport) by replacing an exact snippet of
// source, runs the conformance tests that should notice, and asserts that
// they fail naming the mutant's property. A control copy, unmutated, must
// pass the same tests.
//
// For a mutant of impl/core it asserts three things (cut-late the first
// two, below):
//
//   - TestLockstep (rapid, fixed seed) fails on a per-step state
//     mismatch and its failure prints "property: P": the property the
//     implementation's run, drained alone, breaks;
//   - the trace that failure writes (the shrunk run, drained, with the
//     snapshots the nodes recorded) is rejected by conformance.AuditFile,
//     what markerwave audit runs, with the same P;
//   - TestScenarios reports P for the fixed trace
//     conforms/concurrent-snapshots.jsonl, rebuilt with the mutant.
//
// The mutants and what the suite must report:
//
//	mutant          rule broken                                    property            caught by
//	forget-record   record every message received on a             ExactChannelState   TestLockstep (recMsgs) + audit;
//	                recording channel                                                  TestScenarios (also two-account-transfer, puzzle)
//	record-late     record the local state before applying         Conservation        TestLockstep (recProc) + audit;
//	                anything received after it                                         TestScenarios (also two-account-transfer, puzzle)
//	wrong-marker    a marker stops the recording of the channel    SnapshotsComplete   TestLockstep (recChan) + audit;
//	                it arrived on                                                      TestScenarios (concurrent-snapshots only)
//	no-forward      on its first marker a process sends a marker   SnapshotsComplete   TestLockstep (chan) + audit;
//	                on every outgoing channel                                          TestScenarios (every conforming trace)
//	fifo-swap       channels deliver in FIFO order (in-memory      FIFO (porcupine),   TestMemoryChannelsAreLinearizableFIFO;
//	                transport)                                     collector check     TestRuntimeMemory (Collect: cut check
//	                                                               or refused seq      or a channel failed on a refused seq)
//	marker-id       a marker carries the id of its snapshot        SnapshotsComplete   TestLockstep (chan) + audit;
//	                                                                                   TestScenarios (concurrent-snapshots only)
//	wrong-snapshot  a message is recorded by the snapshots         ExactChannelState   TestLockstep (recMsgs) + audit;
//	                recording its channel                                              TestScenarios (concurrent-snapshots only)
//	cut-late        a snapshot's cut seqs are the channels' seqs   ConsistentCut       TestLockstep (cutSent) + audit;
//	                when the state was recorded                    (cutSent),          TestRuntimeMemory (Collect)
//	                                                               collector check
//
// Why those properties. record-late counts the message's amount twice
// (in the recorded balance, and in flight or at its sender): the channel
// states stay exact and the cut consistent, so Conservation is the first
// run property to fail (ChandyLamportTheorem fails too). wrong-marker
// closes another channel than the marker's: the lockstep comparison sees
// recChan differ first (it bears on ExactChannelState), but the node then
// refuses the real marker of the closed channel as a duplicate, so the
// snapshot never completes, and every snapshot that does is right:
// SnapshotsComplete, a liveness failure. marker-id's mislabelled markers
// duplicate the other snapshot's; the snapshot they belonged to never
// completes. fifo-swap is no rule of impl/core: the porcupine check of the
// transport finds the reordering, and in a cluster the collector rejects
// the snapshot (a recorded channel differs from what was in flight across
// the cut) before any trace is written, or, when two messages swap, the
// receiver refuses the out-of-order seq and its channel fails. cut-late
// leaves every event and recorded state right and moves only the cut seqs
// a checkpoint restores from (LocalSnapshot.NextSend): the lockstep
// comparison of the ghost cut (cutSent, bearing on ConsistentCut) sees
// it, and so do the drained run and audit of its trace, whose recorded
// lines carry the cut seqs (Replay compares them with cutSent and
// Len(cutGot) when the snapshot completes: restore would resume the
// channel at the wrong seq); in a cluster the collector sees it too.
//
// Nothing here is compiled into the implementation: the mutants exist
// only in the temporary copies. The package has no exported API.
//
// Run it alone (about half a minute on two cores):
//
//	go test ./conformance/mutation -v
//
// Under -short it is skipped. MUTATION_ONLY=name1,name2 restricts the run
// to some mutants (the control always runs); MUTATION_SEED=n runs
// TestLockstep with another rapid seed; MARKERWAVE_SEED=n the runtime
// tests with another root seed (fixed otherwise); MUTATION_KEEP=1 keeps
// the copies and prints where they are. Outside a git work tree (a
// tarball) the test cannot list the tracked files: it fails when CI=true
// and skips, saying so, otherwise.
package mutation
