// Package nemesis runs a cluster of real markerwave node OS processes on
// loopback, every channel routed through its own in-process toxiproxy
// proxy, and attacks it: for a bounded number of cycles it cuts, delays
// and resets connections between nodes, then kills a random node with
// SIGKILL and brings the cluster back with markerwave recover (issue 9,
// "A nemesis test with real processes").
//
// The package is its test: go test ./conformance/nemesis builds the
// markerwave binary once into a temporary directory, runs
// NEMESIS_CYCLES cycles (2 unless set; make nemesis runs more) and
// reports the figures: snapshots initiated, completed and aborted;
// crashes; the time the survivors took to suspect the dead node (median,
// max) and to complete a snapshot again after the restore; the network
// faults injected; transfers made, rolled back, lost and duplicated
// (a ledger of transfer ids over every incarnation's node log); money in
// every complete snapshot, after every recovery and at the end; and the
// verdict of markerwave audit on the whole history. NEMESIS_REPORT=FILE
// also writes the figures there as JSON.
//
// What "lost" means: a recovery rolls the cluster back to a complete
// snapshot, so every step after the snapshot's cut is undone by design
// (the spec's Recover). A transfer whose send is after its sender's cut
// is rolled back, not lost. A transfer whose send precedes the cut is
// kept, and must be received exactly once in the kept history: before
// its receiver's cut, or after the restore (the channel's recorded
// messages are delivered first). A kept transfer never received in the
// kept history is lost; one received more than once is duplicated.
package nemesis
