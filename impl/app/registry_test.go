package app_test

import (
	"fmt"
	"github.com/markerwave/markerwave/impl/core"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/spec"
)

func ring(t *testing.T) *spec.Topology {
	topo, err := spec.NewTopology([]spec.ProcID{"P1", "P2"}, []spec.Channel{{From: "P1", To: "P2"}, {From: "P2", To: "P1"}})
	require.NoError(t, err)
	return topo
}

// problems runs Check and returns "field: problem" lines.
func problems(p app.Params, topo *spec.Topology, maxAmount int64) []string {
	var out []string
	p.Check(topo, maxAmount, func(field, problem string) { out = append(out, field+": "+problem) })
	return out
}

// registeredByTests lists the kinds TestRegistry registered in this test
// binary (earlier runs under -count stay registered).
var registeredByTests []string

func TestRegistry(t *testing.T) {
	assert.Equal(t, slices.Sorted(slices.Values(append([]string{"bank", "token"}, registeredByTests...))), app.Kinds(), "Kinds is not every registered kind, sorted")
	_, ok := app.NewParams("bonk")
	assert.False(t, ok)
	assert.Panics(t, func() { app.Register("bank", func() app.Params { return new(app.BankParams) }) })
	assert.Panics(t, func() { app.Register("", func() app.Params { return new(app.BankParams) }) })

	p, ok := app.NewParams("bank")
	require.True(t, ok)
	p2, _ := app.NewParams("bank")
	assert.NotSame(t, p, p2, "each call returns fresh parameters")
	assert.Panics(t, func() { app.Register("nil-constructor", nil) })

	// Kinds lists every kind registered, sorted, whatever the order of
	// registration (shuffled here) and on every call; NewParams finds
	// each. These kinds stay registered for the rest of the test binary
	// (registeredByTests). Not a rapid check: the registry is global, so
	// a failing input could not be replayed.
	want := append([]string{"bank", "token"}, registeredByTests...)
	round := len(registeredByTests)
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprintf("test-%d-%02d", round, i))
	}
	rand.New(rand.NewPCG(uint64(round), 13)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range names {
		app.Register(n, func() app.Params { return &app.TokenParams{Holder: spec.ProcID(n)} })
		want = append(want, n)
		registeredByTests = append(registeredByTests, n)
		require.Equal(t, slices.Sorted(slices.Values(want)), app.Kinds(), "Kinds is not every registered kind, sorted")
	}
	for _, n := range names {
		p, ok := app.NewParams(n)
		require.True(t, ok, n)
		require.Equal(t, &app.TokenParams{Holder: spec.ProcID(n)}, p, "NewParams(%q) calls its constructor", n)
	}
}

func TestBankParams(t *testing.T) {
	topo := ring(t)
	b := &app.BankParams{Balances: map[spec.ProcID]int64{"P1": 7, "P2": 3}}
	assert.Empty(t, problems(b, topo, 10))
	a, err := b.New("P1")
	require.NoError(t, err)
	assert.Equal(t, int64(7), core.InitialBalance(a))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		amt, err := core.AmountOf(a, b.Message(rng, 4))
		require.NoError(t, err)
		assert.True(t, amt >= 1 && amt <= 4, "amount %d", amt)
	}

	assert.Equal(t, []string{"balances: total 10 is less than the workload's max_amount 11: no such transfer can ever be made"}, problems(b, topo, 11))
	assert.Equal(t, []string{"balances: all zero: the workload's transfers have no money to move"},
		problems(&app.BankParams{Balances: map[spec.ProcID]int64{"P1": 0, "P2": 0}}, topo, 1))
	assert.Empty(t, problems(&app.BankParams{Balances: map[spec.ProcID]int64{"P1": 0, "P2": 0}}, topo, 0), "no workload, no money needed")
	assert.Equal(t, []string{
		"balances.P3: not a process of the topology",
		"balances.P1: negative balance -1",
		"balances.P2: missing (every process needs an initial balance)",
	}, problems(&app.BankParams{Balances: map[spec.ProcID]int64{"P1": -1, "P3": 1}}, topo, 0))
	assert.Equal(t, []string{"balances: the balances total more than 9223372036854775807, the largest int64"},
		problems(&app.BankParams{Balances: map[spec.ProcID]int64{"P1": 1 << 62, "P2": 1 << 62}}, topo, 0))
}

func TestTokenParams(t *testing.T) {
	topo := ring(t)
	k := &app.TokenParams{Holder: "P2"}
	assert.Empty(t, problems(k, topo, 50), "the token ignores max_amount")
	for p, want := range map[spec.ProcID]int64{"P1": 0, "P2": 1} {
		a, err := k.New(p)
		require.NoError(t, err)
		assert.Equal(t, want, core.InitialBalance(a))
		amt, err := core.AmountOf(a, k.Message(nil, 50))
		require.NoError(t, err)
		assert.Equal(t, int64(1), amt)
	}
	assert.Equal(t, []string{`holder: "P9" is not a process of the topology`}, problems(&app.TokenParams{Holder: "P9"}, topo, 0))
	assert.Equal(t, []string{"holder: missing (the process that holds the token at the start)"}, problems(&app.TokenParams{}, topo, 0))
}
