package conformance

import (
	"bytes"
	"fmt"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// sinkClaim is the sink's run as its trace claims it, whatever the spec
// enables: each step does to the sink's variables what it says (a
// commit puts the transaction's records in the store, unless the store
// had aborted it; an abort drops them; a reported loss marks its
// checkpoint lost), and tla/BarrierSink.tla's invariants are evaluated
// on the result (model/barrier's definitions). It names the property a
// trace that leaves the spec breaks, as CheckRun does for
// Chandy-Lamport traces.
type sinkClaim struct {
	p        *barrier.SinkProj // for the records' Key indexes and the bounds
	st       barrier.SinkState
	out, rec []int
}

// explainSink is the first property the claimed run of tr breaks, as
// violations (none if the claimed run keeps every property).
func explainSink(tr *spec.SinkTrace) []Violation {
	h := tr.Header
	p, err := barrier.NewSinkProj(h.MaxCkpt, h.MaxRestores, h.MaxAborts, barrier.SinkSpec)
	if err != nil {
		return nil
	}
	c := &sinkClaim{p: p, st: barrier.SinkState{B: &barrier.State{}, Ckpt: 1, Txns: []barrier.Txn{{St: spec.TxnOpen}}}}
	for i, ev := range tr.Events {
		if err := c.take(ev); err != nil {
			return nil
		}
		if prop := c.violated(); prop != "" {
			return []Violation{{Property: prop, Detail: fmt.Sprintf("as the trace claims the run, %s fails after step %d, %s (%s)", prop, i+1, sinkLabel(ev), sinkStore(c.proj()))}}
		}
	}
	return nil
}

// take applies ev as claimed.
func (c *sinkClaim) take(ev spec.SinkEvent) error {
	switch ev.Action {
	case spec.SinkComplete:
		c.st.Done, c.st.Ckpt, c.st.Snap.Out = ev.Ckpt, ev.Ckpt+1, append([]int(nil), c.rec...)
		return nil
	case spec.SinkRestore:
		c.st.Ckpt, c.out = ev.Ckpt, append([]int(nil), c.st.Snap.Out...)
		c.st.Restores++
		c.st.Txns = append(c.st.Txns, barrier.Txn{St: spec.TxnOpen})
		return nil
	}
	recs, err := c.p.Set(ev.Txn.Recs)
	if err != nil {
		return err
	}
	c.grow()
	for len(c.st.Txns) < ev.Txn.Txn {
		c.st.Txns = append(c.st.Txns, barrier.Txn{St: spec.TxnOpen})
	}
	c.txn(ev, &c.st.Txns[ev.Txn.Txn-1], recs)
	return nil
}

// grow sizes the key-indexed variables to the keys named so far.
func (c *sinkClaim) grow() {
	for _, xs := range []*[]int{&c.st.Store, &c.st.Snap.Out, &c.out, &c.rec} {
		for len(*xs) < len(c.p.Keys) {
			*xs = append(*xs, 0)
		}
	}
}

// txn applies a step on transaction t, as claimed.
func (c *sinkClaim) txn(ev spec.SinkEvent, t *barrier.Txn, recs uint64) {
	if recs == 0 {
		recs = t.Recs
	}
	switch ev.Action {
	case spec.SinkPreCommit:
		c.preCommit(ev, t, recs)
	case spec.SinkCommit:
		c.commit(t, recs)
	case spec.SinkAbort:
		t.St = spec.TxnAborted
	case spec.SinkStoreAbort:
		t.St = spec.TxnTimedOut
		c.st.Aborts++
	case spec.SinkReportLoss:
		t.St = spec.TxnAborted
		c.st.ReportedLoss |= 1 << t.Ck
	}
}

// preCommit is a PreCommit as claimed: t pre-committed with recs, the
// sink's output and its recorded output grown, a transaction opened if
// t was the last.
func (c *sinkClaim) preCommit(ev spec.SinkEvent, t *barrier.Txn, recs uint64) {
	*t = barrier.Txn{Ck: ev.Ckpt, St: spec.TxnPreCommitted, Recs: recs}
	addSet(c.out, recs)
	c.rec = append([]int(nil), c.out...)
	c.st.Ckpt = ev.Ckpt
	if ev.Txn.Txn == len(c.st.Txns) {
		c.st.Txns = append(c.st.Txns, barrier.Txn{St: spec.TxnOpen})
	}
}

// commit is a Commit as claimed: t committed, its records in the store
// unless the store had aborted it.
func (c *sinkClaim) commit(t *barrier.Txn, recs uint64) {
	if t.St != spec.TxnTimedOut {
		addSet(c.st.Store, recs)
	}
	t.St, t.Recs = spec.TxnCommitted, recs
}

// addSet adds the records of set r once more to the key-indexed xs.
func addSet(xs []int, r uint64) {
	for k := range xs {
		if r&(1<<k) != 0 {
			xs[k]++
		}
	}
}

// violated is the first invariant the claimed state breaks, "" if none.
func (c *sinkClaim) violated() spec.Property {
	for _, prop := range spec.SinkInvariants[1:] {
		if f, _ := barrier.SinkInvariantByName(prop); !f(c.p.Config(), &c.st) {
			return prop
		}
	}
	return ""
}

// proj is the claimed state as a projection, for sinkStore.
func (c *sinkClaim) proj() *barrier.SinkProj {
	q := *c.p
	q.St = &c.st
	return &q
}

// firstLineIs reports whether b's first non-blank line satisfies is.
func firstLineIs(b []byte, is func([]byte) bool) bool {
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			return is(l)
		}
	}
	return false
}

// sinkLabel renders ev as its step: Commit(2), Complete(1), Restore(3).
func sinkLabel(ev spec.SinkEvent) string {
	if ev.Txn != nil {
		return fmt.Sprintf("%s(%d)", ev.Action, ev.Txn.Txn)
	}
	return fmt.Sprintf("%s(%d)", ev.Action, ev.Ckpt)
}

// recordList renders records as <<"S1", 1>>, <<"S1", 2>>.
func recordList(rs []spec.BarrierRecord) string {
	s := "{"
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("<<%q, %d>>", r.Src, r.I)
	}
	return s + "}"
}

// sinkStore renders the store's committed records that are not exactly
// once, or says it holds what it should not.
func sinkStore(p *barrier.SinkProj) string {
	var twice, held []spec.BarrierRecord
	for k, n := range p.St.Store {
		if n > 1 {
			twice = append(twice, p.Keys[k])
		}
		if n > 0 {
			held = append(held, p.Keys[k])
		}
	}
	if len(twice) > 0 {
		return "committed twice: " + recordList(twice)
	}
	return "the store holds " + recordList(held)
}
