package instrument

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// record writes the record event and starts the node's part of snap.
func (r *Recorder) record(snap any, bal int64) {
	e := spec.OutsiderEvent{Ev: spec.ObsRecord, State: &spec.ObsState{Bal: &bal}}
	if !r.snapID(&e.Snap, snap, spec.ObsRecord) {
		return
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	k := partKey{r.node, *e.Snap}
	if _, ok := s.parts[k]; ok && s.err == nil {
		s.err = fmt.Errorf("instrument: %s recorded its state for snapshot %s twice", string(r.node), e.Snap)
		return
	}
	s.parts[k] = &spec.OutsiderSnapshot{Snap: e.Snap, Procs: map[spec.ProcID]spec.ObsState{r.node: *e.State}}
	s.emitLocked(r.node, e)
}

// channelMessage adds a recorded message to the node's part of snap.
func (r *Recorder) channelMessage(snap any, from string, id any, amount int64) {
	sid, err := toID(snap, "snapshot id")
	var mid spec.ObsID
	if err == nil && id != nil {
		mid, err = toID(id, "message id")
	}
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.partLocked(r.node, sid, "RecordChannelMessage", err)
	if err != nil {
		return
	}
	c := spec.Channel{From: spec.ProcID(from), To: r.node}
	if !s.top.HasChan(c) {
		s.err = fmt.Errorf("instrument: %s RecordChannelMessage: no channel %s in the topology", string(r.node), c)
		return
	}
	if p.Chans == nil {
		p.Chans = map[string]spec.ObsChan{}
	}
	ch := p.Chans[c.String()]
	if id != nil {
		ch.IDs = append(ch.IDs, mid)
	} else {
		ch.Amounts = append(ch.Amounts, amount)
	}
	p.Chans[c.String()] = ch
}

// partLocked is the node's part of snapshot sid under way, with s.mu
// held; an error (err, or no part) sticks and is returned.
func (s *sink) partLocked(node spec.ProcID, sid spec.ObsID, what string, err error) (*spec.OutsiderSnapshot, error) {
	if s.err != nil {
		return nil, s.err
	}
	if err != nil {
		s.err = fmt.Errorf("instrument: %s %s: %w", string(node), what, err)
		return nil, s.err
	}
	p, ok := s.parts[partKey{node, sid}]
	if !ok {
		s.err = fmt.Errorf("instrument: %s %s: snapshot %s: the node has not recorded its state (RecordState) or has reported it", string(node), what, sid)
		return nil, s.err
	}
	return p, nil
}

// report writes the node's part of snap as a snapshot line.
func (r *Recorder) report(snap any) {
	sid, err := toID(snap, "snapshot id")
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.partLocked(r.node, sid, "Report", err)
	if err != nil {
		return
	}
	delete(s.parts, partKey{r.node, sid})
	if err := p.Validate(s.top); err != nil {
		s.err = fmt.Errorf("instrument: %s Report: %w", string(r.node), err)
		return
	}
	s.err = s.writeJSON(map[string]*spec.OutsiderSnapshot{"snapshot": p})
}
