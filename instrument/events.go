package instrument

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/markerwave/markerwave/spec"
)

// The observation points. Each writes one line of the node's log (the
// outsider format's events, spec.ObsKind) and returns at once on a nil
// Recorder. Ids (a message's, a snapshot's) are the implementation's
// own: a string or any integer type, or nil for a message without one
// (the audit then numbers the channel's messages in send order and
// takes a receive to be of the channel's oldest message).

// Send records that the node sent a transfer of amount to node to, with
// the implementation's message id (nil: none).
func (r *Recorder) Send(to string, id any, amount int64) {
	if r == nil {
		return
	}
	r.message(spec.ObsSend, to, id, amount)
}

// Recv records that the node delivered the transfer id of amount that
// came from node from.
func (r *Recorder) Recv(from string, id any, amount int64) {
	if r == nil {
		return
	}
	r.message(spec.ObsRecv, from, id, amount)
}

// MarkerSent records that the node sent snapshot snap's marker to node
// to.
func (r *Recorder) MarkerSent(to string, snap any) {
	if r == nil {
		return
	}
	r.marker(spec.ObsMarkerSend, to, snap)
}

// MarkerReceived records that the node received snapshot snap's marker
// from node from.
func (r *Recorder) MarkerReceived(from string, snap any) {
	if r == nil {
		return
	}
	r.marker(spec.ObsMarkerRecv, from, snap)
}

// RecordState records that the node recorded its local state, balance
// bal, for snapshot snap; it starts the node's part of snap, which
// RecordChannelMessage fills and Report writes.
func (r *Recorder) RecordState(snap any, bal int64) {
	if r == nil {
		return
	}
	r.record(snap, bal)
}

// RecordChannelMessage records that the node recorded, in snapshot
// snap's state of the channel from node from, the message id of amount
// (by id, or by amount when id is nil).
func (r *Recorder) RecordChannelMessage(snap any, from string, id any, amount int64) {
	if r == nil {
		return
	}
	r.channelMessage(snap, from, id, amount)
}

// Report writes the node's part of snapshot snap as the implementation
// reported it: the state RecordState recorded and the channel messages
// RecordChannelMessage recorded (a channel into the node with none
// recorded nothing).
func (r *Recorder) Report(snap any) {
	if r == nil {
		return
	}
	r.report(snap)
}

// message writes a send or a receive.
func (r *Recorder) message(kind spec.ObsKind, peer string, id any, amount int64) {
	e := spec.OutsiderEvent{Ev: kind, Amount: &amount}
	if kind == spec.ObsSend {
		e.To = spec.ProcID(peer)
	} else {
		e.From = spec.ProcID(peer)
	}
	if id != nil {
		oid, err := toID(id, "message id")
		if err != nil {
			r.s.fail(fmt.Errorf("instrument: %s %s: %w", string(r.node), kind, err))
			return
		}
		e.ID = &oid
	}
	r.emit(e)
}

// marker writes a marker sent or received.
func (r *Recorder) marker(kind spec.ObsKind, peer string, snap any) {
	e := spec.OutsiderEvent{Ev: kind}
	if kind == spec.ObsMarkerSend {
		e.To = spec.ProcID(peer)
	} else {
		e.From = spec.ProcID(peer)
	}
	if !r.snapID(&e.Snap, snap, kind) {
		return
	}
	r.emit(e)
}

// snapID sets *dst to snap's id, reporting whether it is one.
func (r *Recorder) snapID(dst **spec.ObsID, snap any, what spec.ObsKind) bool {
	id, err := toID(snap, "snapshot id")
	if err != nil {
		r.s.fail(fmt.Errorf("instrument: %s %s: %w", string(r.node), what, err))
		return false
	}
	*dst = &id
	return true
}

// emit checks e against the topology and writes it.
func (r *Recorder) emit(e spec.OutsiderEvent) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emitLocked(r.node, e)
}

// emitLocked is emit with s.mu held.
func (s *sink) emitLocked(node spec.ProcID, e spec.OutsiderEvent) {
	if s.err != nil {
		return
	}
	e.Node = node
	if err := e.Validate(s.top); err != nil {
		s.err = fmt.Errorf("instrument: %s %s: %w", string(node), e.Ev, err)
		return
	}
	if !s.shared {
		e.Node = ""
	}
	s.err = s.writeJSON(e)
}

// toID is the implementation's id v as the format's: a string or an
// integer of any size, by its text. v does not escape, so that passing
// an integer to a nil Recorder costs no allocation.
func toID(v any, what string) (spec.ObsID, error) {
	switch x := v.(type) {
	case string:
		return spec.ObsID(x), nil
	case int:
		return itoa(int64(x)), nil
	case int8:
		return itoa(int64(x)), nil
	case int16:
		return itoa(int64(x)), nil
	case int32:
		return itoa(int64(x)), nil
	case int64:
		return itoa(x), nil
	}
	return toUnsignedID(v, what)
}

// toUnsignedID is toID's unsigned integers.
func toUnsignedID(v any, what string) (spec.ObsID, error) {
	switch x := v.(type) {
	case uint:
		return utoa(uint64(x)), nil
	case uint8:
		return utoa(uint64(x)), nil
	case uint16:
		return utoa(uint64(x)), nil
	case uint32:
		return utoa(uint64(x)), nil
	case uint64:
		return utoa(x), nil
	case nil:
		return "", fmt.Errorf("no %s", what)
	}
	return "", fmt.Errorf("%s of type %s: want a string or an integer", what, reflect.TypeOf(v))
}

func itoa(n int64) spec.ObsID  { return spec.ObsID(strconv.FormatInt(n, 10)) }
func utoa(n uint64) spec.ObsID { return spec.ObsID(strconv.FormatUint(n, 10)) }
