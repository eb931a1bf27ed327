package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/spec"
)

// stableCatalogueLiteral is StableCatalogue (tla/ChandyLamport.tla lines
// 338-344) with the quantifier over k \in 1..MaxRcvd spelled out, as the
// spec writes it.
func stableCatalogueLiteral(cfg *Config, st *State) bool {
	for s := range cfg.Snap {
		if !Complete(cfg, st, s) {
			continue
		}
		cur, init, rec := CurrentApp(st), InitApp(cfg), RecordedApp(st, s)
		if Terminated(cfg, rec) && !Terminated(cfg, cur) {
			return false
		}
		if !Terminated(cfg, rec) && Terminated(cfg, init) {
			return false
		}
		if Conserved(cfg, rec) && !Conserved(cfg, cur) {
			return false
		}
		if !Conserved(cfg, rec) && Conserved(cfg, init) {
			return false
		}
		for p := range cfg.Topo.Procs {
			for k := 1; k <= cfg.maxRcvd; k++ {
				if RcvdAtLeast(rec, p, k) && !RcvdAtLeast(cur, p, k) {
					return false
				}
				if !RcvdAtLeast(rec, p, k) && RcvdAtLeast(init, p, k) {
					return false
				}
			}
		}
	}
	return true
}

// StableCatalogue decides the quantifier over k at once; on random states
// with one complete snapshot it agrees with the literal form.
func TestStableCatalogueMatchesLiteral(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		topo := spec.Ring(rapid.IntRange(2, 4).Draw(rt, "procs"))
		k := Constants{Topo: topo, InitBal: map[spec.ProcID]int64{}, Budget: map[spec.ProcID]int{}, Amount: []int64{1}, Initiator: map[spec.SnapID]spec.ProcID{1: topo.Procs[0]}}
		for _, p := range topo.Procs {
			k.InitBal[p] = int64(rapid.IntRange(0, 2).Draw(rt, "bal"))
			k.Budget[p] = rapid.IntRange(0, 4).Draw(rt, "budget")
		}
		cfg, err := NewConfig(k, VariantSpec, nil, nil)
		require.NoError(rt, err)
		st := Init(cfg)
		local := func(label string) spec.LocalState {
			return spec.LocalState{Bal: int64(rapid.IntRange(0, 3).Draw(rt, label+" bal")), Sent: rapid.IntRange(0, 5).Draw(rt, label+" sent"), Rcvd: rapid.IntRange(0, 20).Draw(rt, label+" rcvd")}
		}
		for i := range topo.Procs {
			st.Proc[i] = local("cur")
			st.RecProc[0][i] = local("rec")
			st.Recorded[0] = st.Recorded[0].With(i)
		}
		for c := range topo.Chans {
			st.RecChan[0][c] = Done
			if rapid.Bool().Draw(rt, "rec msg") {
				st.RecMsgs[0][c] = []spec.AppMsg{{Amt: 1, Seq: 1}}
			}
			if rapid.Bool().Draw(rt, "cur msg") {
				st.Chan[c] = []Msg{AppMsgOf(1, 1)}
			}
		}
		require.True(rt, Complete(cfg, st, 0))
		assert.Equal(rt, stableCatalogueLiteral(cfg, st), StableCatalogue(cfg, st))
	})
}
