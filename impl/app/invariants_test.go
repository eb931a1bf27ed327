package app_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/spec"
)

func appSnap(states map[spec.ProcID]string, inFlight map[spec.Channel][]string) spec.AppSnapshot {
	s := spec.AppSnapshot{Snap: 1, States: map[spec.ProcID][]byte{}, InFlight: map[spec.Channel][][]byte{}}
	for p, st := range states {
		s.States[p] = []byte(st)
	}
	for c, ps := range inFlight {
		for _, p := range ps {
			s.InFlight[c] = append(s.InFlight[c], []byte(p))
		}
	}
	return s
}

// Conservation counts the balances and the transfers in flight; it names
// a money leak, an unreadable state and an unreadable payload.
func TestConservationInvariant(t *testing.T) {
	c := spec.Channel{From: "P1", To: "P2"}
	inv := app.Conservation(100)
	assert.Equal(t, "Conservation", inv.Name)
	assert.NoError(t, inv.Check(appSnap(map[spec.ProcID]string{"P1": `{"bal":60}`, "P2": `{"bal":10}`}, map[spec.Channel][]string{c: {"20", "10"}})))
	assert.EqualError(t, inv.Check(appSnap(map[spec.ProcID]string{"P1": `{"bal":60}`, "P2": `{"bal":10}`}, map[spec.Channel][]string{c: {"20"}})),
		"the snapshot holds 90 (70 in balances + 20 in flight), the system holds 100")
	assert.ErrorContains(t, inv.Check(appSnap(map[spec.ProcID]string{"P1": `{"has_token":true}`}, nil)), "P1's state: bank: restore")
	assert.ErrorContains(t, inv.Check(appSnap(map[spec.ProcID]string{"P1": `{"bal":100}`}, map[spec.Channel][]string{c: {`"token"`}})),
		"in flight on P1->P2: bank: transfer payload")
}

// OneToken holds with the token held or in flight, and names none and two.
func TestOneTokenInvariant(t *testing.T) {
	c := spec.Channel{From: "P1", To: "P2"}
	inv := app.OneToken()
	held := map[spec.ProcID]string{"P1": `{"has_token":true}`, "P2": `{"has_token":false}`}
	none := map[spec.ProcID]string{"P1": `{"has_token":false}`, "P2": `{"has_token":false}`}
	assert.NoError(t, inv.Check(appSnap(held, nil)))
	assert.NoError(t, inv.Check(appSnap(none, map[spec.Channel][]string{c: {`"token"`}})))
	assert.EqualError(t, inv.Check(appSnap(none, nil)), "the snapshot holds 0 tokens (0 held + 0 in flight), want exactly 1")
	assert.EqualError(t, inv.Check(appSnap(held, map[spec.Channel][]string{c: {`"token"`}})), "the snapshot holds 2 tokens (1 held + 1 in flight), want exactly 1")
}

// The registered kinds declare their invariants.
func TestParamsDeclareInvariants(t *testing.T) {
	topo := spec.Complete(2)
	invs := app.InvariantsOf(&app.BankParams{Balances: map[spec.ProcID]int64{"P1": 7, "P2": 3}}, topo)
	if assert.Len(t, invs, 1) {
		assert.NoError(t, invs[0].Check(appSnap(map[spec.ProcID]string{"P1": `{"bal":4}`, "P2": `{"bal":6}`}, nil)))
		assert.Error(t, invs[0].Check(appSnap(map[spec.ProcID]string{"P1": `{"bal":4}`, "P2": `{"bal":7}`}, nil)))
	}
	invs = app.InvariantsOf(&app.TokenParams{Holder: "P1"}, topo)
	if assert.Len(t, invs, 1) {
		assert.Equal(t, "OneToken", invs[0].Name)
	}
}
