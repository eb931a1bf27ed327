package mutation

import (
	"regexp"

	"github.com/markerwave/markerwave/spec"
)

func init() { mutants = append(mutants, transportMutants...) }

// transportMutants break a guarantee of impl/transport's channels. For
// each, the comment before Want says what execution tells it apart.
var transportMutants = []mutant{
	{
		Name: "fifo-swap",
		Rule: "channels deliver in FIFO order (the transport)",
		Doc:  "in-memory transport (delayed channels): now and then the next envelope of a channel overtakes the one due",
		Patches: []patch{{
			File: "impl/transport/memory.go",
			Old:  "\t\t\tdst.push(c.q.pop())\n\t\t\tc.due = c.due[1:]\n",
			New: "\t\t\te := c.q.pop()\n" +
				"\t\t\tc.due = c.due[1:]\n" +
				"\t\t\tif c.q.len() > 0 && c.rng.IntN(8) == 0 { // MUTANT fifo-swap: the next envelope overtakes this one\n" +
				"\t\t\t\tdst.push(c.q.pop())\n" +
				"\t\t\t\tc.due = c.due[1:]\n" +
				"\t\t\t}\n" +
				"\t\t\tdst.push(e)\n",
		}},
		Runs: []goTest{fifoRun, runtimeRun},
		// Not a rule of impl/core: the network breaks the FIFO assumption
		// the spec makes of channels. The porcupine check of the transport
		// alone says so; in a running cluster, the collector's check of
		// each recorded channel against the seqs in flight across the cut
		// (impl/runtime, through Collect) rejects the snapshot before any
		// trace exists when a marker and a message swap; when two messages
		// swap, the receiving node refuses the out-of-order seq, its
		// channel fails and Collect reports that. Which comes first in a
		// run is down to the delays and the scheduling, so either counts.
		Want: spec.CheckFIFO,
		Expect: []expect{
			outputHas("TestMemoryChannelsAreLinearizableFIFO", "porcupine: Illegal w.r.t. per-channel FIFO queues",
				regexp.MustCompile(`is Illegal w\.r\.t\. per-channel FIFO queues`)),
			outputHas("TestRuntimeMemory", "the runtime notices the reordering (collector: recorded channel state is not what was in flight across the cut; or a node refuses an out-of-order seq)",
				regexp.MustCompile(`\d+ messages recorded, but \d+ were in flight across the cut|out-of-order message: expected seq \d+, got \d+`)),
		},
	},
}
