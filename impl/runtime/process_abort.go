package runtime

import (
	"context"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// AbortStore is a PartStore that records aborts (impl/store's SaveAbort
// and Aborts): a snapshot a node aborted is never assembled from its
// parts, and the store's catalog reports it aborted with the node's
// words (spec.AbortVerdict).
type AbortStore interface {
	SaveAbort(spec.AbortVerdict) (string, error)
	Aborts(spec.SnapID) ([]spec.AbortVerdict, error)
}

// initiatorOf is the initiator of snapshot s as RunProcess numbers them
// (tag<<SnapSeqBits | (k*N + idx + 1)), "" for an id of no such shape.
func (p *process) initiatorOf(s spec.SnapID) spec.ProcID {
	seq := uint64(s) & (1<<SnapSeqBits - 1)
	if seq == 0 {
		return ""
	}
	return p.t.Procs[(seq-1)%uint64(len(p.t.Procs))]
}

// verdict is this node's abort of s, cause the suspected process.
func (p *process) verdict(s spec.SnapID, cause spec.ProcID) spec.AbortVerdict {
	return spec.AbortVerdict{Snap: s, Cause: cause, Initiator: p.initiatorOf(s), By: p.self}
}

// coreAborted keeps and records the core's abort of f.Snap (a Fault of
// action spec.Abort: the snapshot waited for a marker of the suspected
// f.Peer).
func (p *process) coreAborted(f Fault) {
	v := p.verdict(f.Snap, f.Peer)
	p.faultMu.Lock()
	p.aborted = append(p.aborted, v)
	delete(p.waiting, f.Snap)
	p.faultMu.Unlock()
	p.jobs <- func() { p.recordAbort(v) }
}

// recordAbort records v in the store, if it records aborts (a writer
// job).
func (p *process) recordAbort(v spec.AbortVerdict) {
	st, ok := p.opt.Store.(AbortStore)
	if !ok {
		return
	}
	if _, err := st.SaveAbort(v); err != nil {
		p.say("error: %v: not recorded: %v", v, err)
	}
}

// waitFor notes that s, whose local part is saved, lacks the parts of
// missing; if one of them is suspected (crashed, not stopped after saying
// it was done) s can never complete: it is aborted for it at once.
func (p *process) waitFor(s spec.SnapID, missing []spec.ProcID) {
	if q, ok := p.suspectedAmong(missing); ok {
		p.abortMissing(s, q)
		return
	}
	p.faultMu.Lock()
	p.waiting[s] = true
	p.faultMu.Unlock()
	p.say("snapshot %d: local part saved, waiting for %s", s, procList(missing))
}

// suspectedAmong returns a process of ps suspected here, not after a
// graceful stop.
func (p *process) suspectedAmong(ps []spec.ProcID) (spec.ProcID, bool) {
	p.faultMu.Lock()
	defer p.faultMu.Unlock()
	for _, q := range ps {
		if f, ok := p.suspects[q]; ok && !f.Finished {
			return q, true
		}
	}
	return "", false
}

// abortWaiting aborts, once q is suspected, every snapshot whose local
// part is saved here and which lacks q's part (a writer job): Abort(s, q)
// of tla/ChandyLamportFaults.tla (lines 132-138) as the store sees it,
// q's part missing. So a snapshot whose initiator crashed after its
// markers reached every other node, and which therefore waits for no
// marker here, is aborted on every survivor within the detection bound,
// not left unfinished. Such an abort is the node's verdict on what the
// store can assemble, not a step of its core (no trace event: the core
// finished its part and handed it out); the audit takes the spec's Abort
// for it (conformance's implicit aborts) and says it in the same words.
func (p *process) abortWaiting(q spec.ProcID) {
	p.faultMu.Lock()
	ids := slices.Sorted(func(yield func(spec.SnapID) bool) {
		for id := range p.waiting {
			if !yield(id) {
				return
			}
		}
	})
	p.faultMu.Unlock()
	for _, s := range ids {
		_, missing, err := p.opt.Store.LoadParts(p.t, s)
		if err == nil && slices.Contains(missing, q) {
			p.abortMissing(s, q)
		}
	}
}

// abortMissing aborts s, which lacks the part of the suspected q: it is
// said, kept for the summary and recorded in the store.
func (p *process) abortMissing(s spec.SnapID, q spec.ProcID) {
	v := p.verdict(s, q)
	p.faultMu.Lock()
	delete(p.waiting, s)
	p.aborted = append(p.aborted, v)
	p.faultMu.Unlock()
	p.say("%v: its part is missing (this node's part is saved; the snapshot is never assembled)", v)
	p.recordAbort(v)
}

// abortedInStore reports whether a node recorded an abort of s in the
// store; if so it is kept for the summary, by the node that aborted it,
// and said the first time, in the same words.
func (p *process) abortedInStore(s spec.SnapID) bool {
	vs := p.storedAborts(s)
	if len(vs) == 0 {
		return false
	}
	p.faultMu.Lock()
	delete(p.waiting, s)
	known := slices.ContainsFunc(p.aborted, func(v spec.AbortVerdict) bool { return v.Snap == s })
	if !known {
		p.aborted = append(p.aborted, vs[0])
	}
	p.faultMu.Unlock()
	if !known {
		p.say("%v (aborted by %s): it is never assembled, and the stop does not wait for it", vs[0], string(vs[0].By))
	}
	return true
}

// watchAborts looks, every detection bound until ctx ends, for aborts
// other nodes recorded of the snapshots under way here (on a ring, a
// node that does not hear the crashed process learns of the abort only
// so): each is said, within a bound of its record, and kept for the
// summary (abortedInStore).
func (p *process) watchAborts(ctx context.Context) {
	if _, ok := p.opt.Store.(AbortStore); !ok || !p.cfg.Detector().Enabled() {
		return
	}
	p.workers.Add(1)
	go func() {
		defer p.workers.Done()
		for sleep(ctx, p.cfg.Detector().Bound()) {
			if d, err := p.node.Draining(); err == nil {
				p.stillUnderWay(d.Snaps)
			}
		}
	}()
}

// storedAborts are the store's abort records of s, none if the store
// records none.
func (p *process) storedAborts(s spec.SnapID) []spec.AbortVerdict {
	st, ok := p.opt.Store.(AbortStore)
	if !ok {
		return nil
	}
	vs, err := st.Aborts(s)
	if err != nil {
		p.say("error: snapshot %d: %v", s, err)
	}
	return vs
}

// stillUnderWay drops from ids, snapshots under way here, those another
// node aborted (its record in the store): they can never complete, so
// the graceful stop does not wait for them (on a ring, a node that does
// not hear the crashed process learns of the abort only so).
func (p *process) stillUnderWay(ids []spec.SnapID) []spec.SnapID {
	return slices.DeleteFunc(ids, p.abortedInStore)
}
