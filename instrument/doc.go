// Package instrument lets an outside Go implementation of Chandy and
// Lamport 1985 write what its nodes observe as an outsider trace
// (spec.OutsiderFormat, markerwave-outsider/1), one call at each point
// of the algorithm, so that markerwave audit can check its runs:
//
//	rec.Send("N2", msg.ID, msg.Amount)            // after sending a transfer
//	rec.Recv("N1", msg.ID, msg.Amount)            // on delivering it
//	rec.MarkerSent("N2", snap)                    // after sending a marker
//	rec.MarkerReceived("N1", snap)                // on receiving one
//	rec.RecordState(snap, balance)                // on recording the local state
//	rec.RecordChannelMessage(snap, "N1", id, amt) // on recording an in-flight message
//	rec.Report(snap)                              // the node's part of snapshot snap is done
//
// A Recorder writes one node's log (NewNode, one file a node, audited
// together as one run by markerwave audit DIR) or a file every node
// writes into (New, then For each node). It is safe for concurrent use.
// Off, it costs nothing: every method of a nil *Recorder returns at
// once (BenchmarkRecorder measures a call on a nil Recorder beside no
// call at all). It invents nothing: what it writes is what the
// implementation passed it, and the audit derives the rest (the
// per-channel seqs, vector clocks, after states, first flags and cut
// counts of the format's optional fields).
//
// The package depends on nothing of markerwave but the trace vocabulary
// in spec (TestLayers). Errors (a peer with no channel, an id that is no
// string or integer, a failed write) never panic: the first one sticks,
// later calls write nothing, and Err and Close return it.
package instrument
