// Package spectest draws specification values for the property tests of
// the layers above spec (impl, conformance): it imports only spec and
// rapid, so that every layer's tests may share it.
package spectest

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

// Topology draws a strongly connected topology on P1..Pn (n >= 2): a
// ring through the processes in a random order, plus every other channel
// with a drawn probability, from 0% (the bare ring) to 100% (the complete
// graph).
func Topology(t *rapid.T, n int) *spec.Topology {
	procs := make([]spec.ProcID, n)
	for i := range procs {
		procs[i] = spec.ProcID(fmt.Sprintf("P%d", i+1))
	}
	has := map[spec.Channel]bool{}
	var chans []spec.Channel
	add := func(c spec.Channel) {
		if !has[c] {
			has[c] = true
			chans = append(chans, c)
		}
	}
	ring := rapid.Permutation(procs).Draw(t, "ring")
	for i := range ring {
		add(spec.Channel{From: ring[i], To: ring[(i+1)%n]})
	}
	extra := rapid.IntRange(0, 100).Draw(t, "extra%")
	for _, c := range spec.AllPairs(procs) {
		if !has[c] && rapid.IntRange(0, 99).Draw(t, "edge "+c.String()) < extra {
			add(c)
		}
	}
	topo, err := spec.NewTopology(procs, chans)
	if err != nil {
		t.Fatalf("spectest: the drawn topology: %v", err)
	}
	return topo
}
