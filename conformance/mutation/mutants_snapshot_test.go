package mutation

import "regexp"

func init() { mutants = append(mutants, snapshotMutants...) }

// snapshotMutants break impl/snapshot's contract (its doc.go), outside
// Global.Validate. Each is told apart from the original by an execution
// of impl/snapshot's own tests:
//
//   - snapshot-unknown-part: a part of a process the topology lacks
//     among the parts; the original refuses it by name, the mutant
//     ignores it and assembles the rest.
//   - snapshot-foreign-chan-state: a part carrying the state of a
//     channel into another process; the original refuses it by name,
//     the mutant files it (and fails later, if at all, on a duplicate,
//     naming the wrong part).
//   - snapshot-abstract-no-seq: any recorded message; the original's
//     Abstract carries its seq, the mutant's seq 0.
//   - snapshot-local-sender-chans: a process with a recorded incoming
//     channel; the original's Local gives its incoming channels, the
//     mutant's its outgoing ones.
//   - snapshot-total-no-inflight: money recorded in flight; the
//     original's Total counts it, the mutant's only the balances.
//   - snapshot-recorded-channels: a channel with two or more recorded
//     messages; the original's Recorded counts the messages, the
//     mutant's the non-empty channels.
var snapshotMutants = []mutant{
	{
		Name: "snapshot-unknown-part",
		Rule: "Assemble refuses a part of a process the topology lacks, naming it",
		Doc:  "Assemble checks only that a part names some process, not one of the topology",
		Patches: []patch{{
			File: "impl/snapshot/snapshot.go",
			Old:  "\t\tif !g.Topology.Has(p.Node.Proc) {\n",
			New:  "\t\tif p.Node.Proc == \"\" { // MUTANT snapshot-unknown-part: any named process is accepted\n",
		}},
		Runs: []goTest{{Pkg: "./impl/snapshot", Tests: []string{"TestAssembleRefusesMisfits"}}},
		Expect: []expect{outputHas("TestAssembleRefusesMisfits/part_of_a_process_the_topology_lacks", "parts with a foreign process's part are assembled",
			regexp.MustCompile(`Assemble accepted parts with part of a process the topology lacks`))},
	},
	{
		Name: "snapshot-foreign-chan-state",
		Rule: "every channel's state comes from its receiver's part",
		Doc:  "Assemble checks that a part's channel states are of channels of the topology, not that they are the part's incoming ones",
		Patches: []patch{{
			File: "impl/snapshot/snapshot.go",
			Old:  "\t\tif cs.Chan.To != q || i < 0 {\n",
			New:  "\t\tif i < 0 { // MUTANT snapshot-foreign-chan-state: any channel's state is taken from any part\n",
		}},
		Runs: []goTest{{Pkg: "./impl/snapshot", Tests: []string{"TestAssembleRefusesMisfits"}}},
		Expect: []expect{outputHas("TestAssembleRefusesMisfits/state_of_a_channel_that_is_not_incoming", "a part's state of another process's channel is not refused as such",
			regexp.MustCompile(`(?s)holds two states of .* to match .*which is not one of its incoming channels`))},
	},
	{
		Name: "snapshot-abstract-no-seq",
		Rule: "Abstract maps every channel to its recorded messages, amount and seq, in order",
		Doc:  "Abstract drops the messages' seqs",
		Patches: []patch{{
			File: "impl/snapshot/snapshot.go",
			Old:  "\t\tms[k] = spec.AppMsg{Amt: m.Amt, Seq: m.Seq}\n",
			New:  "\t\t\tms[k] = spec.AppMsg{Amt: m.Amt} // MUTANT snapshot-abstract-no-seq\n",
		}},
		Runs: []goTest{{Pkg: "./impl/snapshot", Tests: []string{"TestAbstractionsOfArbitrarySnapshots"}}},
		Expect: []expect{outputHas("TestAbstractionsOfArbitrarySnapshots", "the abstract channel contents lose their seqs",
			regexp.MustCompile(`Abstract: channel contents, seqs included`))},
	},
	{
		Name: "snapshot-local-sender-chans",
		Rule: "Local(p) is p's local snapshot (PartOf and Local are inverse): its incoming channels' recordings",
		Doc:  "Global.Local gathers the recordings of p's outgoing channels instead of its incoming ones",
		Patches: []patch{{
			File: "impl/snapshot/snapshot.go",
			Old:  "\t\tif cs.Chan.To != p {\n",
			New:  "\t\tif cs.Chan.From != p { // MUTANT snapshot-local-sender-chans\n",
		}},
		Runs: []goTest{{Pkg: "./impl/snapshot", Tests: []string{"TestAssembleRoundTrip"}}},
		Expect: []expect{outputHas("TestAssembleRoundTrip", "PartOf(Local(p)) is not p's part",
			regexp.MustCompile(`PartOf\(Local\([^)]+\)\)`))},
	},
	{
		Name: "snapshot-total-no-inflight",
		Rule: "Total is the balances plus the money recorded in flight",
		Doc:  "Global.Total sums the balances only",
		Patches: []patch{{
			File: "impl/snapshot/snapshot.go",
			Old:  "\treturn t + g.InFlight()\n",
			New:  "\treturn t // MUTANT snapshot-total-no-inflight\n",
		}},
		Runs: []goTest{{Pkg: "./impl/snapshot", Tests: []string{"TestAbstractionsOfArbitrarySnapshots"}}},
		Expect: []expect{outputHas("TestAbstractionsOfArbitrarySnapshots", "Total misses the money in flight",
			regexp.MustCompile(`Total: balances plus money in flight`))},
	},
	{
		Name: "snapshot-recorded-channels",
		Rule: "Recorded counts the recorded messages",
		Doc:  "Global.Recorded counts the channels with recorded messages",
		Patches: []patch{{
			File: "impl/snapshot/snapshot.go",
			Old:  "\t\tn += len(cs.Msgs)\n",
			New:  "\t\tn += min(len(cs.Msgs), 1) // MUTANT snapshot-recorded-channels: non-empty channels counted\n",
		}},
		Runs: []goTest{{Pkg: "./impl/snapshot", Tests: []string{"TestAbstractionsOfArbitrarySnapshots"}}},
		Expect: []expect{outputHas("TestAbstractionsOfArbitrarySnapshots", "Recorded counts channels, not messages",
			regexp.MustCompile(`Recorded: messages recorded`))},
	},
}
