package conformance

import (
	"strconv"

	"github.com/markerwave/markerwave/spec"
)

// ToOutsider writes trace tr (markerwave-trace/3) as the outsider log its
// nodes would have written: each event as what its node observed (a
// recording step as the record and its marker sends), restores as
// restore lines, the recorded snapshots as snapshot lines with their
// messages by id. Every optional field is written (ids, seqs, steps,
// after states, clocks, first, the recorded states on the record lines,
// cut counts) unless strip, which leaves each out for the audit to
// derive: what remains is only what the format requires.
func ToOutsider(tr spec.Trace, strip bool) spec.OutsiderLog {
	c := converter{strip: strip, top: tr.Header.Topology, steps: map[spec.ProcID]uint64{}}
	l := spec.OutsiderLog{Header: c.header(tr.Header)}
	next := 0
	for i, e := range tr.Events {
		for ; next < len(tr.Restores) && tr.Restores[next].At <= i; next++ {
			l.Restores = append(l.Restores, spec.OutsiderRestoreAt{Snap: snapObs(tr.Restores[next].Snap), At: len(c.out)})
			c.steps = map[spec.ProcID]uint64{}
		}
		c.event(e)
	}
	for ; next < len(tr.Restores); next++ {
		l.Restores = append(l.Restores, spec.OutsiderRestoreAt{Snap: snapObs(tr.Restores[next].Snap), At: len(c.out)})
	}
	l.Events = c.out
	for _, r := range tr.Recorded {
		l.Snapshots = append(l.Snapshots, c.snapshot(r))
	}
	return l
}

// converter is ToOutsider's state: the events written, each node's
// observation count.
type converter struct {
	strip bool
	top   *spec.Topology
	out   []spec.OutsiderEvent
	steps map[spec.ProcID]uint64
}

func snapObs(s spec.SnapID) spec.ObsID { return spec.ObsID(strconv.FormatUint(uint64(s), 10)) }

func snapPtr(s spec.SnapID) *spec.ObsID { id := snapObs(s); return &id }

// header is tr's header as an outsider header.
func (c *converter) header(h spec.Header) spec.OutsiderHeader {
	out := spec.OutsiderHeader{Format: spec.OutsiderFormat, Topology: h.Topology, InitBal: h.InitBal, Drained: h.Drained, Source: h.Source, Note: h.Note}
	if c.strip {
		return out
	}
	out.Budget = h.Budget
	if len(h.Snaps) > 0 {
		out.Snaps = map[spec.ObsID]spec.ProcID{}
		for s, p := range h.Snaps {
			out.Snaps[snapObs(s)] = p
		}
	}
	return out
}

// add writes observation o of e's node, with the optional fields e gives
// unless stripping.
func (c *converter) add(e spec.Event, o spec.OutsiderEvent, last bool) {
	o.Node = e.Proc
	c.steps[e.Proc]++
	if !c.strip {
		o.Step = c.steps[e.Proc]
		if last {
			a := obsState(e.After)
			o.After, o.VC = &a, e.VC
		}
	}
	c.out = append(c.out, o)
}

func obsState(l spec.LocalState) spec.ObsState {
	bal, sent, rcvd := l.Bal, l.Sent, l.Rcvd
	return spec.ObsState{Bal: &bal, Sent: &sent, Rcvd: &rcvd}
}

// event writes what e's node observed at e.
func (c *converter) event(e spec.Event) {
	switch e.Action {
	case spec.SendApp:
		c.add(e, c.message(spec.OutsiderEvent{Ev: spec.ObsSend, To: e.To, Amount: &e.Amount}, e), true)
	case spec.RecvApp:
		o := spec.OutsiderEvent{Ev: spec.ObsRecv, From: e.From}
		if !c.strip {
			o.Amount = &e.Amount
		}
		c.add(e, c.message(o, e), true)
	case spec.Initiate:
		c.record(e, true)
	case spec.RecvMarker:
		o := spec.OutsiderEvent{Ev: spec.ObsMarkerRecv, From: e.From, Snap: snapPtr(e.Snap)}
		if !c.strip {
			o.First = &e.First
		}
		c.add(e, o, true)
		if e.First {
			c.record(e, false)
		}
	default:
		c.fault(e)
	}
}

// message adds a message's optional id, seq and payload to o.
func (c *converter) message(o spec.OutsiderEvent, e spec.Event) spec.OutsiderEvent {
	if c.strip {
		return o
	}
	id := spec.ObsID(strconv.FormatUint(e.Msg, 10))
	o.ID, o.Seq, o.Payload = &id, e.Msg, e.Payload
	return o
}

// record writes a recording step's record (the step's observation if
// step) and its marker sends.
func (c *converter) record(e spec.Event, step bool) {
	o := spec.OutsiderEvent{Ev: spec.ObsRecord, Snap: snapPtr(e.Snap)}
	if !c.strip {
		st := spec.ObsState{Bal: &e.After.Bal}
		o.State = &st
	}
	c.add(e, o, step)
	for _, ch := range c.top.Out(e.Proc) {
		c.add(e, spec.OutsiderEvent{Ev: spec.ObsMarkerSend, To: ch.To, Snap: snapPtr(e.Snap)}, false)
	}
}

// fault writes a step of the failure handling.
func (c *converter) fault(e spec.Event) {
	o := spec.OutsiderEvent{Peer: e.Peer}
	switch e.Action {
	case spec.Suspect:
		o.Ev = spec.ObsSuspect
	case spec.Unsuspect:
		o.Ev = spec.ObsUnsuspect
	case spec.Abort:
		o.Ev, o.Snap = spec.ObsAbort, snapPtr(e.Snap)
	case spec.DropMarker:
		o = spec.OutsiderEvent{Ev: spec.ObsMarkerDrop, From: e.From, Snap: snapPtr(e.Snap)}
	}
	c.add(e, o, true)
}

// snapshot writes recorded snapshot r as a snapshot line, its messages
// by id (their seqs) and, unless stripping, its counters and cut counts.
func (c *converter) snapshot(r spec.RecordedSnapshot) spec.OutsiderSnapshot {
	o := spec.OutsiderSnapshot{Snap: snapPtr(r.Snap), Initiator: r.Initiator, Procs: map[spec.ProcID]spec.ObsState{}, Chans: map[string]spec.ObsChan{}}
	for p, l := range r.Procs {
		st := obsState(l)
		if c.strip {
			st.Sent, st.Rcvd = nil, nil
		}
		o.Procs[p] = st
	}
	for _, ch := range c.top.Chans {
		if oc := c.chanState(r, ch); len(oc.IDs) > 0 || oc.Sent != nil {
			o.Chans[ch.String()] = oc
		}
	}
	return o
}

// chanState is channel ch of recorded snapshot r as a snapshot line
// gives it: its messages by id (their seqs) and, unless stripping, its
// cut counts.
func (c *converter) chanState(r spec.RecordedSnapshot, ch spec.Channel) spec.ObsChan {
	var oc spec.ObsChan
	for _, m := range r.Chans[ch] {
		oc.IDs = append(oc.IDs, spec.ObsID(strconv.FormatUint(m.Seq, 10)))
	}
	if k, ok := r.Cut[ch]; ok && !c.strip {
		oc.Sent, oc.Got = &k.Sent, &k.Got
	}
	return oc
}
