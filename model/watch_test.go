package model

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// watchConfig is a bank of n processes, two snapshots, small amounts and
// budgets: enough for runs that complete snapshots and keep sending.
func watchConfig(t *testing.T, n int) *Config {
	t.Helper()
	top := spec.Complete(n)
	k := Constants{Topo: top, InitBal: map[spec.ProcID]int64{}, Budget: map[spec.ProcID]int{}, Amount: []int64{1, 2, 5},
		Initiator: map[spec.SnapID]spec.ProcID{1: top.Procs[0], 2: top.Procs[n-1], 3: top.Procs[n/2]}}
	for _, p := range top.Procs {
		k.InitBal[p], k.Budget[p] = 6, 8
	}
	cfg, err := NewConfig(k, VariantSpec, spec.Invariants, nil)
	require.NoError(t, err)
	return cfg
}

// randomWalk takes up to steps random steps of cfg's Next from Init and
// calls f with each action, the persistent state before it and after.
func randomWalk(cfg *Config, seed uint64, steps int, f func(a Action, before, after *State)) {
	r := rand.New(rand.NewPCG(seed, 7))
	st := Init(cfg)
	for range steps {
		ts := Next(cfg, st)
		if len(ts) == 0 {
			return
		}
		t := ts[r.IntN(len(ts))]
		f(t.Action, st, t.State)
		st = t.State
	}
}

// An in-place replay takes the persistent replay's steps to the same
// states, and Watch agrees with the invariants evaluated whole after
// every step, which hold (runs of the spec).
func TestInPlaceAndWatchFollowThePersistentModel(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		cfg := watchConfig(t, n)
		for seed := range uint64(20) {
			ip := InPlace(cfg, Init(cfg))
			w := NewWatch(cfg, ip)
			steps := 0
			randomWalk(cfg, seed, 400, func(a Action, before, after *State) {
				steps++
				w.Begin(ip, a)
				next, err := a.Apply(cfg, ip)
				require.NoError(t, err, "%d procs, seed %d, step %d: %s", n, seed, steps, a.Label(cfg))
				require.Equal(t, Key(cfg, after), Key(cfg, next), "%d procs, seed %d, step %d: %s", n, seed, steps, a.Label(cfg))
				require.True(t, InvariantsHold(cfg, after))
				require.True(t, w.End(next), "%d procs, seed %d, step %d: %s", n, seed, steps, a.Label(cfg))
				ip = next
			})
			require.Greater(t, steps, 20)
		}
	}
}

// A persistent state is never changed by an in-place replay begun from
// it, nor an in-place state by Next.
func TestInPlaceLeavesItsOriginAlone(t *testing.T) {
	cfg := watchConfig(t, 3)
	var mid *State
	var key string
	randomWalk(cfg, 3, 60, func(_ Action, _, after *State) { mid = after })
	key = Key(cfg, mid)
	ip := InPlace(cfg, mid)
	require.True(t, ip.IsInPlace())
	r := rand.New(rand.NewPCG(1, 1))
	for range 100 {
		before := Key(cfg, ip)
		ts := Next(cfg, ip) // persistent successors, leaving ip alone...
		require.Equal(t, before, Key(cfg, ip))
		if len(ts) == 0 {
			break
		}
		t1 := ts[r.IntN(len(ts))]
		next, err := t1.Action.Apply(cfg, ip) // ...which Apply steps in place
		require.NoError(t, err)
		require.Equal(t, Key(cfg, t1.State), Key(cfg, next))
		ip = next
	}
	require.Equal(t, key, Key(cfg, mid))
}

// Watch notices a broken term the step changed: each tamper is applied to
// the state a step led to, before End.
func TestWatchNoticesABrokenTerm(t *testing.T) {
	cfg := watchConfig(t, 3)
	cases := map[string]struct {
		kind   ActionKind
		needs  func(w *Watch) bool
		tamper func(st *State, d watchStep)
	}{
		"TypeOK: a negative balance":            {ActSendApp, nil, func(st *State, d watchStep) { st.Proc[d.proc].Bal = -1 }},
		"TypeOK: a seq 0 received":              {ActRecvApp, nil, func(st *State, d watchStep) { st.Got[d.ch][len(st.Got[d.ch])-1] = 0 }},
		"ChandyLamportTheorem: a shadow not ok": {ActSendApp, nil, func(st *State, _ watchStep) { st.Pre[0].OK = false }},
		"ChandyLamportTheorem: post off the current state": {ActRecvApp, func(w *Watch) bool { return w.complete[0] },
			func(st *State, d watchStep) { st.Post[0].Proc[d.proc].Bal++ }},
		"StableCatalogue: money appears": {ActRecvApp, func(w *Watch) bool { return w.complete[0] && w.recCons[0] },
			func(st *State, d watchStep) { st.Proc[d.proc].Bal++; st.Post[0].Proc[d.proc].Bal++ }},
		"ExactChannelState: a recorded message lost": {ActRecvMarker, nil, func(st *State, d watchStep) {
			if !d.record {
				st.CutSent[d.snap][d.ch]++
			} else {
				st.RecChan[d.snap][d.ch] = Done
				st.CutSent[d.snap][d.ch] = uint64(len(st.CutGot[d.snap][d.ch])) + 1
			}
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			seen := false
			for seed := uint64(0); seed < 50 && !seen; seed++ {
				ip := InPlace(cfg, Init(cfg))
				w := NewWatch(cfg, ip)
				randomWalk(cfg, seed, 400, func(a Action, _, _ *State) {
					if seen {
						return
					}
					w.Begin(ip, a)
					next, err := a.Apply(cfg, ip)
					require.NoError(t, err)
					if a.Kind == c.kind && (c.needs == nil || c.needs(w)) {
						c.tamper(next, w.step)
						require.False(t, w.End(next), "%s after %s", name, a.Label(cfg))
						seen = true
						return
					}
					require.True(t, w.End(next))
					ip = next
				})
			}
			require.True(t, seen, "no run reached the case")
		})
	}
}
