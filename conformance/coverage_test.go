package conformance

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// A property test that also claims to have exercised some cases (a
// refusal, a restore, a kind of channel state) cannot claim it of
// rapid's random draws: -short draws 20 and a full run 100, and a case
// few graphs reach is then missing from some runs (issue #22: under
// -short the barrier tests' coverage failed 4 runs of 6). So
// checkCovering runs the property on rapid's draws, as rapid.Check
// does, and then on a fixed list of inputs, the same on every run and
// under -short too, and asserts the coverage over those: the claim is
// then true or false of the code, never of the luck of a run.

// fixedInputWords is the length, in rapid's 64-bit draws, of a fixed
// input: far more than any run of these properties draws (a run that
// draws more is skipped by rapid, and checkCovering fails naming it).
const fixedInputWords = 1 << 14

// fixedInput is fixed input number seed for rapid.MakeFuzz: words from a
// PCG stream seeded by seed, so that rapid draws from it what its own
// random source would draw.
func fixedInput(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x6d61726b65727761)) // "markerwa"
	b := make([]byte, 8*fixedInputWords)
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b
}

// checkCovering checks prop on rapid's random draws (rapid.Check), then
// on fixed inputs 1..seeds, each a subtest seed=N (a failure names the
// input: go test -run 'TestX/seed=N'), and fails unless the fixed
// inputs together exercised every case of kinds: prop counts what each
// run exercised in the map it is given. input is "" on rapid's draws and
// "seed=N" on a fixed input, for what a failing run writes (a file of
// its own, not one the other runs overwrite).
func checkCovering(t *testing.T, seeds int, prop func(t *rapid.T, seen map[string]int, input string), kinds ...string) {
	t.Helper()
	drawn := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) { prop(rt, drawn, "") })
	seen, first := map[string]int{}, map[string]int{}
	for s := 1; s <= seeds; s++ {
		ran, input := false, fmt.Sprintf("seed=%d", s)
		passed := t.Run(input, func(t *testing.T) {
			rapid.MakeFuzz(func(rt *rapid.T) {
				prop(rt, seen, input)
				ran = true
			})(t, fixedInput(uint64(s)))
		})
		if passed && !ran {
			t.Errorf("fixed input %d ran out (more than %d draws): raise fixedInputWords", s, fixedInputWords)
		}
		for k := range seen {
			if _, ok := first[k]; !ok {
				first[k] = s
			}
		}
	}
	for _, k := range kinds {
		if seen[k] == 0 {
			t.Errorf("the %d fixed inputs never exercised %q (they did: %v): add inputs (raise the count) until they do", seeds, k, sorted(seen))
		}
	}
	t.Logf("the fixed inputs exercised %v; rapid's draws %v", sorted(seen), sorted(drawn))
	for _, k := range kinds {
		if n, ok := first[k]; ok {
			t.Logf("%q first at fixed input %d", k, n)
		}
	}
}

// sorted lists the counts of seen by name, for the log.
func sorted(seen map[string]int) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, fmt.Sprintf("%s: %d", k, seen[k]))
	}
	return out
}
