package mutation

import (
	"regexp"

	"github.com/markerwave/markerwave/spec"
)

func init() { mutants = append(mutants, recoveryMutants...) }

// recoveryMutants break recovery: the handshake between restored nodes,
// the choice of the snapshot to recover from, and a restored node's
// state, each caught by the check built for it.
//
//   - transport-restore-mismatch-accepted: a sender restored from one
//     snapshot dials a receiver restored from another; the original
//     refuses the hello, the mutant accepts it and delivers the frames.
//   - wire-hello-restored-dropped: a hello with a restored snapshot id
//     other than 0; the original reads back the id it encoded, the
//     mutant reads 0 (every node would look freshly started); and a hello
//     whose id byte is changed, which the original reads and re-encodes
//     to the same bytes, the mutant re-encodes with 0.
//   - store-latest-incomplete: a store whose newest assembled snapshot
//     lacks one node's part; the original passes it over, the mutant
//     recovers from it.
//   - core-restore-counters: a restored node whose recorded state
//     received messages; the original resumes with its received count,
//     the mutant with 0, so its state is not the snapshot's.
var recoveryMutants = []mutant{
	{
		Name: "transport-restore-mismatch-accepted",
		Rule: "nodes restored from different snapshots are refused at the handshake, naming both ids (TCP)",
		Doc:  "the receiver no longer compares the hello's restored snapshot with its own",
		Patches: []patch{{
			File: "impl/transport/tcp_recv.go",
			Old:  "\tif h.Restored != tr.cfg.Restored {\n",
			New:  "\tif false && h.Restored != tr.cfg.Restored { // MUTANT transport-restore-mismatch-accepted\n",
		}},
		Runs: []goTest{{Pkg: "./impl/transport", Tests: []string{"TestTCPRestoreMismatchRefused"}}},
		Expect: []expect{outputHas("TestTCPRestoreMismatchRefused", "nodes restored from different snapshots meet and a frame is delivered",
			regexp.MustCompile(`a sender (restored from snapshot \d+|started fresh[^:]*) met a receiver (restored from snapshot \d+|started fresh[^:]*): the handshake accepted it`))},
	},
	{
		Name: "wire-hello-restored-dropped",
		Rule: "every hello EncodeHello accepts, ReadHello reads back (its restored snapshot id included)",
		Doc:  "EncodeHello writes 0 for the restored snapshot id",
		Patches: []patch{{
			File: "impl/wire/handshake.go",
			Old:  "\tb = binary.AppendUvarint(b, uint64(h.Restored))\n",
			New:  "\tb = binary.AppendUvarint(b, 0) // MUTANT wire-hello-restored-dropped\n",
		}},
		Runs: wireRun("TestHelloProperty"),
		Expect: []expect{outputHas("TestHelloProperty", "a hello's restored snapshot id does not survive EncodeHello and ReadHello (read back as 0, or a read hello encodes to other bytes)",
			regexp.MustCompile(`hello round trip: got \{[^}]*Restored:0\}, want \{[^}]*Restored:[1-9]|ReadHello with byte \d+ corrupted \(0x[0-9a-f]+ -> 0x[0-9a-f]+\) was accepted, but its encoding is not the bytes read`))},
	},
	{
		Name: "store-latest-incomplete",
		Rule: "recovery never picks a snapshot some node holds no part of",
		Doc:  "LatestComplete no longer checks that every node's part is stored",
		Patches: []patch{{
			File: "impl/store/catalog.go",
			Old:  "\t\tif !e.Holds(p) && !slices.Contains(e.Damaged, p) {\n",
			New:  "\t\tif false && !e.Holds(p) && !slices.Contains(e.Damaged, p) { // MUTANT store-latest-incomplete\n",
		}},
		Runs: []goTest{{Pkg: "./impl/store", Tests: []string{"TestLatestComplete"}}},
		Expect: []expect{outputHas("TestLatestComplete", "a snapshot a node has no part of is picked",
			regexp.MustCompile(`recovery picks the last saved snapshot that every node holds complete`))},
	},
	{
		Name: "core-restore-counters",
		Rule: "a restored node resumes in exactly the state it recorded",
		Doc:  "Restore keeps the checkpoint's sent count but not its received count",
		Patches: []patch{{
			File: "impl/core/node.go",
			Old:  "\tn.sent, n.rcvd = cp.State.Sent, cp.State.Rcvd\n",
			New:  "\tn.sent = cp.State.Sent // MUTANT core-restore-counters: received count starts at 0\n",
		}},
		Runs: []goTest{runtimeConformance("TestRuntimeRestore")},
		Want: spec.PropRecoveryReachable,
		Expect: []expect{outputHas("TestRuntimeRestore", "the audit of the whole history (run, restore, restored run) names RecoveryReachable",
			regexp.MustCompile(`resumes incarnation 2 in another state than it recorded for snapshot \d+[^\n]*\n(?s:.*?)property: RecoveryReachable`))},
	},
}
