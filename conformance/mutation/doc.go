// Package mutation shows that the test suite can fail, and that it names
// what a broken implementation violates. Its test plants one realistic
// bug at a time in a package of impl/ by replacing an exact snippet of
// source, runs the tests that should notice, and asserts that they fail
// saying what they must: the property of the algorithm the mutant breaks
// (Want, a spec.Property), or, for a mutant that breaks a package's own
// contract and no property of the algorithm, what names the breach. An
// unmutated control must pass every test the mutants run.
//
// # How a mutant is built
//
// Nothing is copied. The test reads the repository's tracked files once
// (git ls-files, as they are in the work tree, or the commit
// MUTATION_REV) and builds in the real module with go test -overlay: the
// overlay pins every tracked file to that snapshot, deletes every
// untracked .go file, and replaces the patched files. Packages no mutant
// touches are then the same to the go command as in the real module, so
// their compiled forms come from the shared build cache.
//
// All the mutants are compiled into one tree, the mutant schemata
// (schema_test.go): for each function a mutant patches, a copy of the
// function per mutant, renamed mutant_<n>_<name>, holds that mutant's
// patches and only its own, and the original starts with a switch on
// $MARKERWAVE_MUTANT that calls the active mutant's copy. Each package a
// mutant runs tests of is then compiled and linked once (go test -c,
// without DWARF and symbol tables), and every mutant, and the control
// (the same binaries, no mutant selected), is an exec of those binaries
// in the package's directory (the tests read their testdata there), up
// to go test's -parallel (GOMAXPROCS) at a time, each with its budget
// (runTimeout). A //line directive before each copy keeps file:line in
// the tests' output the real source's. What a test reads at run time
// (traces/, testdata) comes from the work tree; what it writes goes to a
// temporary directory per mutant ($MARKERWAVE_FAIL_DIR,
// $MARKERWAVE_FIFO_OUT). The build cache keeps the schemata's compiled
// packages across runs.
//
// A mutant with a patch outside any function body (a package-level
// declaration, a struct field, a constant table) or one that changes a
// function's signature cannot be switched at run time: it keeps its own
// overlay and go test build (the log says which and why; none today), as
// does every mutant under MUTATION_NO_SCHEMATA=1, and every mutant when
// the schemata do not build (a replacement that does not compile, which
// its own build then names).
//
// A patch's snippet must occur exactly once in its file, or the mutant
// fails saying it must be updated (TestMutantAnchors checks this under
// -short too). A mutant that does not compile, survives, or is caught by
// other reports than its Expect fails the test; so does a test it names
// that no longer exists, and an expectation that the control's passing
// output also shows (it would not tell the mutant from the original).
//
// # Adding mutants
//
// Each package's mutants are in mutants_<pkg>_test.go, appended to
// mutants in an init function (mutants_core_test.go for impl/core's
// rules, mutants_transport_test.go for the channels' FIFO guarantee). To
// add one:
//
//  1. Think of the bug a tired programmer would write that no current
//     test notices, in the package's contract (its doc.go) or the
//     algorithm; write it as a patch of a stable snippet.
//  2. Name the package's own fast tests that must catch it (Runs), and
//     what each must report (Expect, with outputHas: the test, what it
//     sees, and the failure text that names it). If none does, the
//     mutant is a finding: write the test of the contract that kills it.
//  3. Say in a comment what execution tells it apart from the original
//     (a mutant no run can tell apart is equivalent, and proves nothing).
//  4. Run it: MUTATION_ONLY=name go test -count=1 -run TestMutants -v
//     ./conformance/mutation; then rewrite docs/conformance.md's table with go
//     test ./conformance/mutation -run TestMutantTable -update.
//
// # The table in docs/conformance.md
//
// docs/conformance.md's mutation table, between the markers <!-- mutants:begin -->
// and <!-- mutants:end -->, is rendered from the mutants: name, package,
// rule broken, property, and for each expectation the test and what it
// sees. TestMutantTable (also under -short) fails when it differs; -update
// rewrites it.
//
// # Running it
//
//	go test ./conformance/mutation -v
//
// prints a table of the results with timings. Under -short TestMutants is
// skipped. MUTATION_ONLY=name1,name2 restricts the run to some mutants
// (the control runs the tests they need); MUTATION_SEED=n runs every
// rapid property (TestLockstep and the packages' properties) with another
// seed (fixed otherwise, so that a run is repeatable); MARKERWAVE_SEED=n the runtime
// tests with another root seed (fixed otherwise); MUTATION_KEEP=1 keeps
// the snapshot, the schemata's files and overlay, and what each mutant's
// runs wrote, and logs where; MUTATION_NO_SCHEMATA=1 builds every mutant
// on its own (to compare, or to find which breaks the schemata's build).
// Outside a git work tree (a tarball) the test cannot list the tracked
// files: it fails when CI=true and skips, saying so, otherwise.
//
// Nothing here is compiled into the implementation: the mutants exist
// only in the overlays. The package has no exported API.
package mutation
