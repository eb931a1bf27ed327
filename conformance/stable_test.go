package conformance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

// TestStableRangesAreTheCatalogue: the stable check, which judges only the
// RcvdAtLeast(p, k) whose k can fail, says what judging every predicate of
// spec.StableCatalogue says, word for word, on states where the received
// counts go up, down and past MaxRcvd.
func TestStableRangesAreTheCatalogue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		topo := spec.Ring(3)
		a := &analysis{r: Run{Topo: topo}, budget: map[spec.ProcID]int{}}
		state := func(label string) spec.GlobalState {
			g := spec.GlobalState{Procs: map[spec.ProcID]spec.LocalState{}, Chans: map[spec.Channel][]spec.AppMsg{}}
			for _, p := range topo.Procs {
				g.Procs[p] = spec.LocalState{Bal: rapid.Int64Range(0, 3).Draw(t, label+" bal"), Sent: rapid.IntRange(0, 3).Draw(t, label+" sent"),
					Rcvd: rapid.IntRange(0, 8).Draw(t, label+" rcvd")}
			}
			return g
		}
		for _, p := range topo.Procs {
			a.budget[p] = rapid.IntRange(0, 3).Draw(t, "budget")
		}
		a.init = state("init")
		rec, end := state("rec"), state("end")

		maxRcvd := 0
		for _, b := range a.budget {
			maxRcvd += b
		}
		var want []string
		for _, sp := range spec.StableCatalogue(topo.Procs, maxRcvd, a.init.Total()) {
			inRec := sp.Holds(rec, a.budget)
			switch {
			case inRec && !sp.Holds(end, a.budget):
				want = append(want, fmt.Sprintf("%s holds in the snapshot but not at the end", sp))
			case !inRec && sp.Holds(a.init, a.budget):
				want = append(want, fmt.Sprintf("%s fails in the snapshot but held at the start", sp))
			}
		}
		require.Equal(t, strings.Join(want, "; "), a.stable(rec, end))
	})
}
