package barrier

import (
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// SinkProj is tla/BarrierSink.tla seen from the sink alone: the sink's
// variables (ckpt, done, snap.out, txns, store, restores, aborts,
// reportedLoss) and the sink's own output out[Sink], without the graph's.
// A sink trace (spec.SinkHeader) is replayed on it: the graph's steps
// are not in that trace, so the conjuncts only they decide (Complete's
// "every node recorded", RestoreSV's "recorded = {}") are taken from the
// trace where the sink's own steps bound them. Its steps are the sink's
// parts of the spec's actions and call the same definitions as
// SinkNext's (commitTxn, storeAbort, reportLoss, settle).
type SinkProj struct {
	cfg *SinkConfig
	St  *SinkState
	// Keys are the records the trace named, in first-seen order: a
	// record's Key index (at most 64).
	Keys []spec.BarrierRecord
	out  []int // out[Sink]: the sink's output since the latest restore
	rec  []int // recOut[Sink]: its output when it recorded for ckpt
	pre  bool  // the sink recorded (pre-committed) for ckpt
}

// NewSinkProj is InitS (lines 114-123) of the sink's variables, for the
// bounds and variant given.
func NewSinkProj(maxCkpt, maxRestores, maxAborts int, v SinkVariant) (*SinkProj, error) {
	f, ok := v.flags()
	if !ok {
		return nil, fmt.Errorf("unknown sink specification %q", v)
	}
	if maxCkpt < 1 || maxRestores < 0 || maxAborts < 0 {
		return nil, fmt.Errorf("bounds max_ckpt %d, max_restores %d, max_aborts %d: MaxCkpt must be at least 1, the others at least 0", maxCkpt, maxRestores, maxAborts)
	}
	cfg := &SinkConfig{MaxCkpt: maxCkpt, MaxRestores: maxRestores, MaxAborts: maxAborts, Variant: v, flags: f}
	return &SinkProj{cfg: cfg, St: &SinkState{B: &State{}, Ckpt: 1, Txns: []Txn{openTxn}}}, nil
}

// Config is the projection's model: its bounds and variant.
func (p *SinkProj) Config() *SinkConfig { return p.cfg }

// key is r's Key index, a new one if the trace had not named r.
func (p *SinkProj) key(r spec.BarrierRecord) (int, error) {
	r = spec.BarrierRecord{Src: r.Src, I: r.I}
	if k := slices.Index(p.Keys, r); k >= 0 {
		return k, nil
	}
	if len(p.Keys) == 64 {
		return 0, fmt.Errorf("record <<%q, %d>>: a sink trace names at most 64 records", r.Src, r.I)
	}
	p.Keys = append(p.Keys, r)
	for _, xs := range []*[]int{&p.St.Store, &p.St.Snap.Out, &p.out, &p.rec} {
		*xs = append(*xs, 0)
	}
	return len(p.Keys) - 1, nil
}

// Set is recs as a set of Key indexes.
func (p *SinkProj) Set(recs []spec.BarrierRecord) (uint64, error) {
	var s uint64
	for _, r := range recs {
		k, err := p.key(r)
		if err != nil {
			return 0, err
		}
		if s&(1<<k) != 0 {
			return 0, fmt.Errorf("record <<%q, %d>> twice in one transaction", r.Src, r.I)
		}
		s |= 1 << k
	}
	return s, nil
}

// Records is the set s as records, in Keys' order.
func (p *SinkProj) Records(s uint64) []spec.BarrierRecord {
	var rs []spec.BarrierRecord
	for k, r := range p.Keys {
		if s&(1<<k) != 0 {
			rs = append(rs, r)
		}
	}
	return rs
}

// PreCommit is the sink's part of RecvBarrierSV(e, arrival) (lines
// 143-152): the sink records for checkpoint ckpt, its open transaction,
// holding recs (the records ProcessS added, lines 131-137), is
// pre-committed for it (arrival: committed) and a new one opened; ckpt
// is the checkpoint in progress (the abandoned numbers a restore spent
// are its Restore step's, line 236).
func (p *SinkProj) PreCommit(ckpt int, recs uint64) error {
	st := p.St
	switch {
	case ckpt > p.cfg.MaxCkpt:
		return fmt.Errorf("checkpoint %d: ckpt <= MaxCkpt is FALSE (MaxCkpt = %d, %s line 129)", ckpt, p.cfg.MaxCkpt, modSink)
	case p.pre || ckpt < st.Ckpt:
		return fmt.Errorf("checkpoint %d: the sink has recorded for checkpoint %d already (bar[Sink] holds every input, RecvBarrierV's ~Has(n) is FALSE)", ckpt, max(ckpt, st.Ckpt-1))
	case ckpt > st.Ckpt:
		return fmt.Errorf("checkpoint %d: the checkpoint in progress is %d (ckpt)", ckpt, st.Ckpt)
	}
	add(p.out, recs)
	ns := st.Clone()
	ns.Ckpt = ckpt
	t := &ns.Txns[ns.last()]
	t.Ck, t.St, t.Recs = ckpt, spec.TxnPreCommitted, t.Recs|recs
	if p.cfg.flags.arrival {
		t.St = spec.TxnCommitted
		add(ns.Store, t.Recs)
	}
	ns.Txns = append(ns.Txns, openTxn)
	p.St, p.rec, p.pre = ns, slices.Clone(p.out), true
	return nil
}

// Complete mirrors CompleteCkpt (lines 157-166) on the sink's variables:
// checkpoint ckpt, the one in progress, is complete; the sink recorded
// for it (Complete's conjunct, the sink's part of it).
func (p *SinkProj) Complete(ckpt int) error {
	st := p.St
	switch {
	case ckpt != st.Ckpt:
		return fmt.Errorf("checkpoint %d: the checkpoint in progress is %d (ckpt)", ckpt, st.Ckpt)
	case st.Ckpt > p.cfg.MaxCkpt:
		return fmt.Errorf("checkpoint %d: ckpt <= MaxCkpt is FALSE (%s line 158)", ckpt, modSink)
	case !p.pre:
		return fmt.Errorf("checkpoint %d: Complete is FALSE: the sink has not recorded for it (%s line 159)", ckpt, modSink)
	}
	ns := st.Clone()
	ns.Done, ns.Ckpt, ns.Snap.Out = ckpt, ckpt+1, slices.Clone(p.rec)
	p.St, p.pre = ns, false
	return nil
}

// Commit mirrors Commit(i) (lines 170-175).
func (p *SinkProj) Commit(i int) error {
	return p.step(SinkAction{Kind: SinkCommitTxn, Txn: i}, func() (*SinkState, Conjunct) { return commitTxn(p.St, i) })
}

// StoreAbort mirrors StoreAbort(i) (lines 179-185).
func (p *SinkProj) StoreAbort(i int) error {
	return p.step(SinkAction{Kind: SinkStoreAbortTxn, Txn: i}, func() (*SinkState, Conjunct) { return storeAbort(p.cfg, p.St, i) })
}

// ReportLoss mirrors ReportLossV(i, silent) (lines 194-199).
func (p *SinkProj) ReportLoss(i int) error {
	return p.step(SinkAction{Kind: SinkReportLossTxn, Txn: i}, func() (*SinkState, Conjunct) { return reportLoss(p.cfg, p.St, i) })
}

// step takes a's successor by def, or names a's false conjunct.
func (p *SinkProj) step(a SinkAction, def func() (*SinkState, Conjunct)) error {
	ns, k := def()
	if k != Enabled {
		q := a.quote(k)
		return &NotEnabled{Action: a.Label(p.cfg), Conjunct: k, Source: q, Why: q.TLA + " is FALSE"}
	}
	p.St = ns
	return nil
}

// Restore mirrors the sink's part of RestoreSV(noabort, forget, silent)
// (lines 226-243): the sink's output back to the latest complete
// checkpoint's, the transactions settled (settle) and a new one opened;
// ckpt is the checkpoint in progress after it: ckpt, or ckpt + 1 when a
// barrier of it went out (recorded # {}: so when the sink recorded).
func (p *SinkProj) Restore(ckpt int) error {
	st := p.St
	switch {
	case st.Restores >= p.cfg.MaxRestores:
		return fmt.Errorf("restores < MaxRestores is FALSE (MaxRestores = %d, %s line 227)", p.cfg.MaxRestores, modSink)
	case ckpt != st.Ckpt+1 && (p.pre || ckpt != st.Ckpt):
		return fmt.Errorf("checkpoint %d after the restore: ckpt' is %s", ckpt, p.nextCkpt())
	}
	ns := st.Clone()
	ns.Restores++
	ns.Ckpt = ckpt
	ns.settle(st, p.cfg.flags)
	p.St, p.out, p.pre = ns, slices.Clone(st.Snap.Out), false
	return nil
}

// nextCkpt says what RestoreSV's ckpt' may be (line 236).
func (p *SinkProj) nextCkpt() string {
	if p.pre {
		return fmt.Sprintf("%d (the sink recorded for %d: recorded # {})", p.St.Ckpt+1, p.St.Ckpt)
	}
	return fmt.Sprintf("%d or %d (IF recorded = {} THEN ckpt ELSE ckpt + 1)", p.St.Ckpt, p.St.Ckpt+1)
}

// Violated is the first of tla/BarrierSink.tla's invariants (but
// SinkTypeOK, which the projection's types give) the state violates, ""
// if none.
func (p *SinkProj) Violated() spec.Property {
	for _, prop := range spec.SinkInvariants[1:] {
		if f, _ := SinkInvariantByName(prop); !f(p.cfg, p.St) {
			return prop
		}
	}
	return ""
}

// Unsettled lists the transactions (from 1) Pending at the end: in a
// drained run CompleteCommitted (line 324) fails on each.
func (p *SinkProj) Unsettled() []int {
	var is []int
	for i := 1; i <= len(p.St.Txns); i++ {
		if p.St.pending(i) {
			is = append(is, i)
		}
	}
	return is
}

// Records is the set of Key indexes r of cfg's graph as records, in
// keySet's order.
func (cfg *SinkConfig) Records(r uint64) []spec.BarrierRecord {
	var rs []spec.BarrierRecord
	for src, k := range cfg.Base.Kind {
		for i := 1; k == Source && i <= cfg.Base.Budget[src]; i++ {
			if r&(1<<cfg.Base.key(src, i)) != 0 {
				rs = append(rs, spec.BarrierRecord{Src: cfg.Base.Nodes[src], I: i})
			}
		}
	}
	return rs
}
