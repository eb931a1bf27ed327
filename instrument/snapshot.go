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
	p := s.part(r.node, *e.Snap)
	if _, twice := p.Procs[r.node]; twice && s.err == nil {
		s.err = fmt.Errorf("instrument: %s recorded its state for snapshot %s twice", string(r.node), e.Snap)
		return
	}
	p.Procs = map[spec.ProcID]spec.ObsState{r.node: *e.State}
	s.emitLocked(r.node, e)
}

// channelMessage adds a recorded message to the node's part of snap.
func (r *Recorder) channelMessage(snap any, from string, id any, amount int64) {
	sid, mid, err := messageIDs(snap, id)
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fails(r.node, "RecordChannelMessage", err) {
		return
	}
	p := s.part(r.node, sid)
	c := spec.Channel{From: spec.ProcID(from), To: r.node}
	if !s.top.HasChan(c) {
		s.err = fmt.Errorf("instrument: %s RecordChannelMessage: no channel %s in the topology", string(r.node), c)
		return
	}
	addChannelMessage(p, c, id != nil, mid, amount)
}

// messageIDs is channelMessage's snapshot id and message id (none when
// id is nil: the message is known by its amount) in the format's terms.
func messageIDs(snap, id any) (spec.ObsID, spec.ObsID, error) {
	sid, err := toID(snap, "snapshot id")
	if err != nil || id == nil {
		return sid, "", err
	}
	mid, err := toID(id, "message id")
	return sid, mid, err
}

// addChannelMessage adds a message recorded on c to part p: by its id
// mid if byID, else by its amount.
func addChannelMessage(p *spec.OutsiderSnapshot, c spec.Channel, byID bool, mid spec.ObsID, amount int64) {
	if p.Chans == nil {
		p.Chans = map[string]spec.ObsChan{}
	}
	ch := p.Chans[c.String()]
	if byID {
		ch.IDs = append(ch.IDs, mid)
	} else {
		ch.Amounts = append(ch.Amounts, amount)
	}
	p.Chans[c.String()] = ch
}

// part is the node's part of snapshot sid under way, new if none; the
// caller holds s.mu. A node may record a channel message before its
// state (a bug the audit names, not the recorder).
func (s *sink) part(node spec.ProcID, sid spec.ObsID) *spec.OutsiderSnapshot {
	k := partKey{node, sid}
	if s.parts[k] == nil {
		s.parts[k] = &spec.OutsiderSnapshot{Snap: &sid}
	}
	return s.parts[k]
}

// fails reports whether s has failed, keeping err (from the node's call
// what) as its error if it is the first; the caller holds s.mu.
func (s *sink) fails(node spec.ProcID, what string, err error) bool {
	if s.err == nil && err != nil {
		s.err = fmt.Errorf("instrument: %s %s: %w", string(node), what, err)
	}
	return s.err != nil
}

// report writes the node's part of snap as a snapshot line.
func (r *Recorder) report(snap any) {
	sid, err := toID(snap, "snapshot id")
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.parts[partKey{r.node, sid}]
	if err == nil && p == nil {
		err = fmt.Errorf("snapshot %s: the node has recorded nothing of it (RecordState, RecordChannelMessage), or has reported it", sid)
	}
	if s.fails(r.node, "Report", err) {
		return
	}
	delete(s.parts, partKey{r.node, sid})
	if err := p.Validate(s.top); err != nil {
		s.err = fmt.Errorf("instrument: %s Report: %w", string(r.node), err)
		return
	}
	s.err = s.writeJSON(map[string]*spec.OutsiderSnapshot{"snapshot": p})
}
