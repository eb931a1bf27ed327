// Package mutation shows that the conformance suite can fail: its test
// copies the repository's tracked files into a temporary directory once
// per mutant, breaks one rule of the algorithm there (impl/core) or one
// guarantee of a channel (impl/transport) by replacing an exact snippet of
// source, runs the conformance tests that should notice, and asserts that
// they fail and that their output names the right check. A control copy,
// unmutated, must pass the same tests.
//
// Nothing here is compiled into the implementation: the mutants exist
// only in the temporary copies. The package has no exported API.
//
// Run it alone (about a minute on two cores):
//
//	go test ./conformance/mutation -v
//
// Under -short it is skipped. MUTATION_ONLY=name1,name2 restricts the run
// to some mutants (the control always runs); MUTATION_KEEP=1 keeps the
// copies and prints where they are.
package mutation
