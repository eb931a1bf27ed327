package main

import (
	"fmt"

	"github.com/markerwave/markerwave/instrument"
)

// node is one bank branch running Chandy and Lamport 1985's algorithm in
// this simulator's own terms: its balance, its links, and a local
// snapshot per snapshot id it has taken part in.
type node struct {
	w       *world
	index   int
	name    string
	balance int64
	budget  int // transfers left to make
	sent    int
	steps   int // occurrences handled
	out, in []*link
	local   map[string]*localSnapshot
	joined  []string // snapshot ids in the order the node joined them
	owed    []owedState
	rec     *instrument.Recorder
}

// owedState is, under the lateState bug, a local state the node put
// off recording to a later step.
type owedState struct {
	snap    string
	step    int
	balance int64 // the balance when it should have recorded
}

// localSnapshot is what a node recorded for one snapshot.
type localSnapshot struct {
	balance  int64
	recorded bool
	open     map[*link]bool // in-links still being recorded
	markers  map[*link]bool // in-links whose marker arrived
	inFlight map[*link][]frame
	reported bool
}

// wake is the application: transfer a random part of the balance to a
// random neighbour, then sleep.
func (n *node) wake() {
	n.steps++
	n.budget--
	if n.balance > 0 {
		l := n.out[n.w.rng.IntN(len(n.out))]
		amount := 1 + n.w.rng.Int64N(n.balance)
		n.sent++
		f := frame{id: fmt.Sprintf("%s/%d", n.name, n.sent), amount: amount}
		n.balance -= amount
		n.w.transmit(l, f)
		n.rec.Send(l.to.name, f.id, f.amount)
	}
	if n.budget > 0 {
		n.w.schedule(&occurrence{at: n.w.now + 1 + n.w.rng.Float64()*n.w.cfg.think, what: tick, node: n.index})
	}
	n.settleOwed()
}

// arrive handles a frame at the end of link l.
func (n *node) arrive(l *link, f frame) {
	n.steps++
	if f.marker {
		n.markerArrives(l, f.snap)
	} else {
		n.transferArrives(l, f)
	}
	n.settleOwed()
}

// transferArrives credits a transfer and records it in every snapshot
// still recording l.
func (n *node) transferArrives(l *link, f frame) {
	n.balance += f.amount
	n.rec.Recv(l.from.name, f.id, f.amount)
	oldest := n.oldestRecording()
	for _, id := range n.joined {
		s := n.local[id]
		switch {
		case !s.open[l]:
		case n.w.bugged(noChannelRecording):
		case id != oldest && n.w.bugged(oldestOnly):
		default:
			if s.markers[l] {
				n.w.fired[channelAfterMarker] = true
			}
			s.inFlight[l] = append(s.inFlight[l], f)
			n.rec.RecordChannelMessage(id, l.from.name, f.id, f.amount)
		}
	}
}

// oldestRecording is the snapshot the node joined first of those still
// recording a link, "" if none.
func (n *node) oldestRecording() string {
	for _, id := range n.joined {
		if len(n.local[id].open) > 0 {
			return id
		}
	}
	return ""
}

// markerArrives is the Marker Receiving Rule: on the first marker of a
// snapshot, record the local state (l recorded empty) and send markers
// on every out-link; on any marker, stop recording l.
func (n *node) markerArrives(l *link, snap string) {
	n.rec.MarkerReceived(l.from.name, snap)
	s, seen := n.local[snap]
	if !seen {
		s = n.join(snap, l)
		n.forwardMarkers(snap)
	}
	s.markers[l] = true
	if n.w.cfg.bug != channelAfterMarker {
		delete(s.open, l)
	}
	n.finish(snap)
}

// startSnapshot is the Initiator Rule: record, then send markers.
func (n *node) startSnapshot(snap string) {
	n.steps++
	n.join(snap, nil)
	n.forwardMarkers(snap)
	n.finish(snap)
}

// join takes part in snapshot snap: record the local state and start
// recording every in-link but the one the marker came on (nil: none).
func (n *node) join(snap string, via *link) *localSnapshot {
	s := &localSnapshot{open: map[*link]bool{}, markers: map[*link]bool{}, inFlight: map[*link][]frame{}}
	for _, l := range n.in {
		if l != via {
			s.open[l] = true
		}
	}
	n.local[snap] = s
	n.joined = append(n.joined, snap)
	if via != nil && n.w.cfg.bug == lateState {
		n.owed = append(n.owed, owedState{snap: snap, step: n.steps, balance: n.balance})
		return s
	}
	n.recordState(snap)
	return s
}

// recordState records the node's balance for snap.
func (n *node) recordState(snap string) {
	s := n.local[snap]
	s.balance, s.recorded = n.balance, true
	n.rec.RecordState(snap, n.balance)
}

// settleOwed (lateState only) records, at the end of a step, the states
// the node put off in an earlier one.
func (n *node) settleOwed() {
	kept := n.owed[:0]
	for _, o := range n.owed {
		if o.step == n.steps {
			kept = append(kept, o)
			continue
		}
		if o.balance != n.balance {
			n.w.fired[lateState] = true
		}
		n.recordState(o.snap)
		n.finish(o.snap)
	}
	n.owed = kept
}

// forwardMarkers sends snap's marker on every out-link.
func (n *node) forwardMarkers(snap string) {
	if n.w.cfg.initiators[snap] != n.name && n.w.bugged(noForwarding) {
		return
	}
	for _, l := range n.out {
		n.w.transmit(l, frame{marker: true, snap: snap})
		n.rec.MarkerSent(l.to.name, snap)
	}
}

// finish reports the node's part of snap once it has recorded its state
// and every in-link's marker has arrived (and, under the
// channelAfterMarker bug, only then stops recording).
func (n *node) finish(snap string) {
	s := n.local[snap]
	if s.reported || !s.recorded || len(s.markers) < len(n.in) {
		return
	}
	clear(s.open)
	s.reported = true
	n.rec.Report(snap)
}
