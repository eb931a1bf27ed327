package mutation

import "regexp"

func init() { mutants = append(mutants, lifecycleMutants...) }

// lifecycleMutants break the node process's handling of what it saves
// and aborts (issue #20), each caught by the impl/runtime test built for
// it (TestNodeNeverSavesBrokenSnapshot and
// TestInitiatorDeathAbortsEverywhere in cmd/markerwave run the same rules
// with real processes, too slow to build for each mutant).
//
//   - runtime-process-saves-broken: a node process assembles a snapshot
//     that breaks an invariant; the original reports it and never saves
//     it, the mutant saves it (recover could pick it).
//   - runtime-process-keeps-orphan-part: a node's saved part waits for
//     the part of a peer then suspected (the initiator killed after its
//     markers went out); the original aborts the snapshot and records
//     the abort, the mutant leaves it unfinished.
var lifecycleMutants = []mutant{
	{
		Name: "runtime-process-saves-broken",
		Rule: "a node process never saves a snapshot that breaks an invariant of its application",
		Doc:  "the save path logs the broken invariants but saves the snapshot anyway",
		Patches: []patch{{
			File: "impl/runtime/process.go",
			Old:  "\tholds, err := p.checkInvariants(g)\n\tif err != nil {\n",
			New:  "\tholds, err := p.checkInvariants(g)\n\tif err != nil { // MUTANT runtime-process-saves-broken: saved anyway\n\t\tp.sayLines(err.Error())\n\t} else if false {\n",
		}},
		Runs: []goTest{runtimeUnit("TestRunProcessNeverSavesBrokenSnapshot")},
		Expect: []expect{outputHas("TestRunProcessNeverSavesBrokenSnapshot", "a snapshot that breaks an invariant is saved",
			regexp.MustCompile(`a snapshot that breaks an invariant was saved`))},
	},
	{
		Name: "runtime-process-keeps-orphan-part",
		Rule: "a snapshot whose saved parts lack a suspected peer's part is aborted on every survivor, in the one wording, and never assembled",
		Doc:  "a suspicion no longer aborts the snapshots whose parts lack the suspected peer's",
		Patches: []patch{{
			File: "impl/runtime/process_abort.go",
			Old:  "\t\tif err == nil && slices.Contains(missing, q) {\n",
			New:  "\t\tif false && err == nil && slices.Contains(missing, q) { // MUTANT runtime-process-keeps-orphan-part\n",
		}},
		Runs: []goTest{runtimeUnit("TestProcessAbortsSnapshotsLackingSuspectedPart")},
		Expect: []expect{outputHas("TestProcessAbortsSnapshotsLackingSuspectedPart", "the snapshot stays unfinished, its abort unrecorded",
			regexp.MustCompile(`the abort is recorded in the store`))},
	},
}
