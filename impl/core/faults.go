package core

import "github.com/markerwave/markerwave/spec"

// This file is the node's share of the failure handling of
// tla/ChandyLamportFaults.tla (line numbers refer to that module). The
// failure detector itself (heartbeats, timeouts) is the caller's: the core
// only holds its output, as this node sees it, and acts on it.

// Suspect records that this node's failure detector suspects peer q. It
// mirrors Detect(q) (lines 110-115) or, if q is in fact alive,
// FalseSuspect(q) (lines 118-124): the core cannot tell which, and needs
// not. From then on SendApp to q is refused (SendAppF, line 66) and
// snapshots that wait for q may be aborted with q as the cause (Abort).
// Suspecting self, a process outside the topology or one already
// suspected is an error.
func (n *Node) Suspect(q spec.ProcID) (Step, error) {
	i, err := n.peer("suspect", q)
	if err != nil {
		return Step{}, err
	}
	if n.suspected[i] {
		return Step{}, n.errorf("suspect", spec.Channel{}, "%w: %s", ErrAlreadySuspected, string(q))
	}
	n.suspected[i] = true
	n.nSusp++
	return n.peerStep(spec.Suspect, q), nil
}

// Unsuspect withdraws this node's suspicion of q (the detector heard from
// q again). The spec's suspicions are permanent (there is no such
// action); withdrawing one only lets later transfers to q and later
// snapshots through. Snapshots already aborted stay aborted.
func (n *Node) Unsuspect(q spec.ProcID) (Step, error) {
	i, err := n.peer("unsuspect", q)
	if err != nil {
		return Step{}, err
	}
	if !n.suspected[i] {
		return Step{}, n.errorf("unsuspect", spec.Channel{}, "%w: %s", ErrNotSuspected, string(q))
	}
	n.suspected[i] = false
	n.nSusp--
	return n.peerStep(spec.Unsuspect, q), nil
}

// Suspected reports whether this node suspects q.
func (n *Node) Suspected(q spec.ProcID) bool {
	i := n.topo.ProcIndex(q)
	return i >= 0 && n.suspected[i]
}

// Abort aborts snapshot s at this node, cause's suspicion the reason. It
// is this node's share of Abort(s, q) (lines 132-138): the snapshot's
// recording buffers (its recorded state and channel messages, a completed
// part not yet taken included) are released, the id is retired, and from
// now on s's markers are dropped (DropMarker, lines 90-97) and Initiate(s)
// is refused. The event records the cause (Event.Peer).
//
// The core checks the conjuncts it can see: s is not 0, cause is a
// suspected peer (q \in suspected), and s is neither aborted already nor
// released (a part handed out by TakeCompleted is the caller's to
// discard). Pending(s) and WaitsFor(s, q) are global: the caller aborts
// s when it waits for cause (WaitingOn) or when cause's part is missing.
// A node may abort a snapshot it has not recorded yet (Phase Unknown):
// the id is retired, so its markers are dropped when they come.
func (n *Node) Abort(s spec.SnapID, cause spec.ProcID) (Step, error) {
	if err := n.canAbort(s, cause); err != nil {
		return Step{}, err
	}
	if st := n.snaps[s]; st != nil {
		n.discard(st)
	}
	n.aborted.add(s, s)
	step := n.peerStep(spec.Abort, cause)
	step.Event.Snap = s
	return step, nil
}

// canAbort checks the conjuncts of Abort(s, q) (lines 132-138) that the
// core can see (see Abort): s is not 0, cause is a suspected peer, and s
// is neither aborted already nor released.
func (n *Node) canAbort(s spec.SnapID, cause spec.ProcID) error {
	if s == 0 {
		return n.errorf("abort", spec.Channel{}, "%w: 0", ErrBadSnap)
	}
	i, err := n.peer("abort", cause)
	if err != nil {
		return err
	}
	switch {
	case !n.suspected[i]:
		return n.errorf("abort", spec.Channel{}, "%w: snapshot %d cannot be aborted for %s", ErrNotSuspected, s, string(cause))
	case n.aborted.has(s):
		return n.errorf("abort", spec.Channel{}, "%w: snapshot %d already", ErrAborted, s)
	case n.released.has(s):
		return n.errorf("abort", spec.Channel{}, "%w: snapshot %d", ErrReleased, s)
	}
	return nil
}

// WaitingOn lists the snapshots this node is recording that wait for a
// marker from q (the channel q->self still recording), by id: the ones
// that cannot complete while q is suspected.
func (n *Node) WaitingOn(q spec.ProcID) []spec.SnapID {
	i, ok := n.inIdx[q]
	if !ok {
		return nil
	}
	var out []spec.SnapID
	for _, st := range n.active {
		if st.status[i] == Recording {
			out = append(out, st.id)
		}
	}
	return out
}

// discard drops st from every list that holds it: active, completed and
// not taken, and the recorded snapshots.
func (n *Node) discard(st *snapState) {
	for k, a := range n.active {
		if a == st {
			n.active = append(n.active[:k], n.active[k+1:]...)
			break
		}
	}
	for k, ls := range n.completed {
		if ls.Snap == st.id {
			n.completed = append(n.completed[:k], n.completed[k+1:]...)
			n.nDone--
			break
		}
	}
	delete(n.snaps, st.id)
}

// dropMarker mirrors DropMarker(p, q) (lines 90-97) for c = <<p, q>>: the
// marker of aborted snapshot s is consumed and nothing else changes.
func (n *Node) dropMarker(c spec.Channel, s spec.SnapID, vc spec.VectorClock) Step {
	n.tick(vc)
	ev := n.event(spec.DropMarker)
	ev.From, ev.To, ev.Snap = c.From, c.To, s
	return Step{Event: ev}
}

// peer checks that q is another process of the topology and returns its
// index.
func (n *Node) peer(op string, q spec.ProcID) (int, error) {
	i := n.topo.ProcIndex(q)
	switch {
	case i < 0:
		return 0, n.errorf(op, spec.Channel{}, "%w: %q is not a process of the topology", ErrUnknownChannel, string(q))
	case q == n.self:
		return 0, n.errorf(op, spec.Channel{}, "%s cannot %s itself", string(n.self), op)
	}
	return i, nil
}

// peerStep is the step of a local fault action about peer q: a local
// event, no frames.
func (n *Node) peerStep(a spec.Action, q spec.ProcID) Step {
	n.tick(nil)
	ev := n.event(a)
	ev.Peer = q
	return Step{Event: ev}
}

// Active lists the snapshots this node has recorded that are not complete
// here, by id.
func (n *Node) Active() []spec.SnapID {
	ids := make([]spec.SnapID, len(n.active))
	for k, st := range n.active {
		ids[k] = st.id
	}
	return ids
}
