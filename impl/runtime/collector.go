package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// ErrNodeStopped is the Cause of an IncompleteError when a node that had
// not completed its part stopped, so the snapshot can never complete here.
var ErrNodeStopped = errors.New("a node that had not completed its part stopped")

// ErrCollected is returned by Collect for a snapshot it already handed out.
var ErrCollected = errors.New("snapshot already collected")

// Collector assembles the local parts nodes report into global snapshots.
// Nodes also report their progress (state recorded, channel closed) so
// that an incomplete snapshot can be described exactly. It is safe for
// concurrent use.
type Collector struct {
	topo  *spec.Topology
	inOff []int // by process index: where its incoming channels start in progress.closed

	mu        sync.Mutex
	snaps     map[spec.SnapID]*progress
	stopped   map[spec.ProcID]bool
	failed    map[spec.Channel]*ChannelError
	collected map[spec.SnapID]bool
	suspects  map[spec.ProcID]map[spec.ProcID]Fault // suspected peer -> suspecting node -> its Fault
	waiters   int
	changed   chan struct{} // closed and replaced on updates while waiters > 0

	invariants []spec.Invariant // checked on every assembled snapshot, outside mu
}

// progress is what the collector knows of one snapshot, by topology
// position (a marker's report is one index lookup and one store, no map
// growth: the 256-node complete graph has 65,280 channels).
type progress struct {
	recorded []bool          // by process index
	closed   []bool          // by incoming position: Collector.inOff[receiver]+k for In(receiver)[k]
	parts    []snapshot.Part // by process index, valid where has is set
	has      []bool          // by process index: its part arrived
	nparts   int             // the processes whose part arrived, foreign included
	foreign  map[spec.ProcID]bool
	aborts   []Fault // the nodes that aborted it, in report order
}

// part reports whether the part of the process of index i arrived.
func (pr *progress) part(i int) bool { return pr != nil && pr.has[i] }

// complete reports whether every process's part arrived.
func (pr *progress) complete(procs int) bool { return pr != nil && pr.nparts == procs }

// NewCollector returns a collector for the processes of t that checks
// every snapshot it assembles against the application's invariants.
func NewCollector(t *spec.Topology, invariants ...spec.Invariant) *Collector {
	off := make([]int, len(t.Procs)+1)
	for i, p := range t.Procs {
		off[i+1] = off[i] + len(t.In(p))
	}
	return &Collector{
		topo:      t,
		inOff:     off,
		snaps:     map[spec.SnapID]*progress{},
		stopped:   map[spec.ProcID]bool{},
		failed:    map[spec.Channel]*ChannelError{},
		collected: map[spec.SnapID]bool{},
		suspects:  map[spec.ProcID]map[spec.ProcID]Fault{},
		changed:   make(chan struct{}),

		invariants: invariants,
	}
}

func (c *Collector) get(s spec.SnapID) *progress {
	pr := c.snaps[s]
	if pr == nil {
		np := len(c.topo.Procs)
		pr = &progress{recorded: make([]bool, np), closed: make([]bool, len(c.topo.Chans)), parts: make([]snapshot.Part, np), has: make([]bool, np)}
		c.snaps[s] = pr
	}
	return pr
}

// notify wakes waiters; c.mu must be held. Only completed parts and
// stopped nodes wake them: progress reports cannot change Collect's answer.
func (c *Collector) notify() {
	if c.waiters > 0 {
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// Recorded notes that p recorded its state for s.
func (c *Collector) Recorded(s spec.SnapID, p spec.ProcID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.collected[s] {
		return
	}
	if i := c.topo.ProcIndex(p); i >= 0 {
		c.get(s).recorded[i] = true
	}
}

// Closed notes that the recording of channel ch for s closed.
func (c *Collector) Closed(s spec.SnapID, ch spec.Channel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.collected[s] {
		return
	}
	if j := c.inPos(ch, -1); j >= 0 {
		c.get(s).closed[j] = true
	}
}

// inPos is ch's position in progress.closed, or -1 if ch is not a channel
// of the topology: a binary search of its receiver's incoming channels
// (sorted by sender), or none if k, the position ch is expected at, holds
// it. No lookup in the topology's map of channels: on the complete graph
// of 256 (65,280 channels) that lookup misses the cache on every marker.
func (c *Collector) inPos(ch spec.Channel, k int) int {
	q := c.topo.ProcIndex(ch.To)
	if q < 0 {
		return -1
	}
	k = inIndex(c.topo.In(ch.To), ch, k)
	if k < 0 {
		return -1
	}
	return c.inOff[q] + k
}

// inIndex is ch's index in in, a receiver's incoming channels sorted by
// sender: k if it holds ch, else found by binary search; -1 if absent.
func inIndex(in []spec.Channel, ch spec.Channel, k int) int {
	if k >= 0 && k < len(in) && in[k] == ch {
		return k
	}
	k = sort.Search(len(in), func(k int) bool { return in[k].From >= ch.From })
	if k == len(in) || in[k] != ch {
		return -1
	}
	return k
}

// Add takes a node's completed part.
func (c *Collector) Add(part snapshot.Part) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.collected[part.Snap] {
		return
	}
	pr := c.get(part.Snap)
	if i := c.topo.ProcIndex(part.Node.Proc); i >= 0 {
		c.addPart(pr, i, part)
	} else {
		pr.addForeign(part.Node.Proc)
	}
	c.notify()
}

// addPart takes part, the i-th process's: it recorded, and its incoming
// channels' recordings are closed.
func (c *Collector) addPart(pr *progress, i int, part snapshot.Part) {
	pr.recorded[i] = true
	for k, cs := range part.In { // usually In(part.Node.Proc), in order
		if j := c.inPos(cs.Chan, k); j >= 0 {
			pr.closed[j] = true
		}
	}
	if !pr.has[i] {
		pr.has[i] = true
		pr.nparts++
	}
	pr.parts[i] = part
}

// addForeign counts, once, a part of p, which is not a process of the
// topology: counted, never assembled.
func (pr *progress) addForeign(p spec.ProcID) {
	if pr.foreign[p] {
		return
	}
	if pr.foreign == nil {
		pr.foreign = map[spec.ProcID]bool{}
	}
	pr.foreign[p] = true
	pr.nparts++
}

// NodeStopped notes that p's node stopped: snapshots it has not completed
// can no longer complete, and Collect reports them at once.
func (c *Collector) NodeStopped(p spec.ProcID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped[p] = true
	c.notify()
}

// Aborted notes that node f.Node aborted snapshot f.Snap (a Fault of
// action spec.Abort): the snapshot can no longer complete, and Collect
// reports it aborted at once.
func (c *Collector) Aborted(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.collected[f.Snap] {
		return
	}
	pr := c.get(f.Snap)
	pr.aborts = append(pr.aborts, f)
	c.notify()
}

// Suspected notes a node's suspicion f (action spec.Suspect) or its
// withdrawal (spec.Unsuspect). While a process is suspected by some node,
// a snapshot still missing its part can no longer complete: Collect
// reports it aborted at once.
func (c *Collector) Suspected(f Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := c.suspects[f.Peer]
	switch f.Action {
	case spec.Suspect:
		if by == nil {
			by = map[spec.ProcID]Fault{}
			c.suspects[f.Peer] = by
		}
		by[f.Node] = f
		c.notify()
	case spec.Unsuspect:
		delete(by, f.Node)
		if len(by) == 0 {
			delete(c.suspects, f.Peer)
		}
	}
}

// ChannelFailed notes that a node stopped delivering from a channel (see
// ChannelError): snapshots whose marker on it has not arrived can no
// longer complete, and Collect reports them at once.
func (c *Collector) ChannelFailed(e *ChannelError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.failed[e.Chan]; !ok {
		c.failed[e.Chan] = e
	}
	c.notify()
}

// Collect waits until every node has reported its part of s and returns
// the assembled snapshot, handing it out once. So a snapshot ends
// complete, aborted or incomplete: when a node aborted s (its failure
// detector suspects a process s waits for) it returns an *AbortedError
// naming who aborted it and why; when ctx ends first, or a node missing
// from s has stopped, or a channel whose marker s lacks has failed, an
// *IncompleteError naming what is missing. It never waits past ctx.
//
// A complete snapshot is then checked against the collector's invariants
// (spec.CheckInvariants, outside the collector's lock): if it breaks one,
// or one panics, Collect returns the snapshot and an *InvariantError
// naming each broken invariant and holding the snapshot that shows it.
func (c *Collector) Collect(ctx context.Context, s spec.SnapID) (snapshot.Global, error) {
	g, err := c.collect(ctx, s)
	if err != nil || len(c.invariants) == 0 {
		return g, err
	}
	return g, checkGlobal(g, c.invariants)
}

// collect waits for s's outcome, as Collect says, before the invariants.
func (c *Collector) collect(ctx context.Context, s spec.SnapID) (snapshot.Global, error) {
	c.mu.Lock()
	c.waiters++
	defer func() { c.waiters--; c.mu.Unlock() }()
	for {
		if g, done, err := c.outcome(s); done {
			return g, err
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
			c.mu.Lock()
		case <-ctx.Done():
			c.mu.Lock()
			if c.snaps[s].complete(len(c.topo.Procs)) {
				continue // completed meanwhile
			}
			inc := c.incomplete(s, c.snaps[s])
			inc.Cause = ctx.Err()
			return snapshot.Global{}, inc
		}
	}
}

// outcome is how s ended, if it has (done): collected before, complete
// (assembled), aborted, or incomplete for good (stuck); c.mu must be held.
func (c *Collector) outcome(s spec.SnapID) (g snapshot.Global, done bool, err error) {
	if c.collected[s] {
		return snapshot.Global{}, true, fmt.Errorf("collect snapshot %d: %w", s, ErrCollected)
	}
	pr := c.snaps[s]
	if pr.complete(len(c.topo.Procs)) {
		c.retire(s)
		g, err := snapshot.Assemble(c.topo, s, pr.parts)
		return g, true, err
	}
	if ab := c.aborted(s, pr); ab != nil {
		c.retire(s)
		return snapshot.Global{}, true, ab
	}
	if inc := c.stuck(s, pr); inc != nil {
		return snapshot.Global{}, true, inc
	}
	return snapshot.Global{}, false, nil
}

// retire drops s, marking it collected; c.mu must be held.
func (c *Collector) retire(s spec.SnapID) {
	delete(c.snaps, s)
	c.collected[s] = true
}

// stuck is the IncompleteError of s if it can no longer complete: a
// node missing from it has stopped, or a channel whose marker it lacks
// has failed; else nil. c.mu must be held.
func (c *Collector) stuck(s spec.SnapID, pr *progress) *IncompleteError {
	if len(c.stopped) == 0 && len(c.failed) == 0 {
		return nil
	}
	inc := c.incomplete(s, pr)
	switch {
	case len(inc.Stopped) > 0:
		inc.Cause = ErrNodeStopped
	case len(inc.Failed) > 0:
		inc.Cause = inc.Failed[0]
	default:
		return nil
	}
	return inc
}

// aborted is the AbortedError of s if a node aborted it or a process
// whose part it lacks is suspected, else nil; c.mu must be held.
func (c *Collector) aborted(s spec.SnapID, pr *progress) *AbortedError {
	ab := &AbortedError{Snap: s}
	if pr != nil {
		ab.By = append(ab.By, pr.aborts...)
	}
	for i, p := range c.topo.Procs {
		if by := c.suspects[p]; len(by) > 0 && !pr.part(i) {
			ab.PartOf = append(ab.PartOf, by[slices.Sorted(maps.Keys(keySet(by)))[0]]) // one suspicion names the cause
		}
	}
	if len(ab.By)+len(ab.PartOf) == 0 {
		return nil
	}
	ab.Missing = c.incomplete(s, pr)
	return ab
}

// Forget drops what the collector holds of s, e.g. after giving up on it.
func (c *Collector) Forget(s spec.SnapID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retire(s)
}

// Pending lists the snapshots with reports not yet collected.
func (c *Collector) Pending() []spec.SnapID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]spec.SnapID, 0, len(c.snaps))
	for s := range c.snaps {
		out = append(out, s)
	}
	return out
}

// openChans adds to e the incoming channels of the i-th process whose
// recording pr has not seen closed, and those of them that failed.
func (c *Collector) openChans(e *IncompleteError, pr *progress, i int) {
	for k, ch := range c.topo.In(c.topo.Procs[i]) {
		if pr != nil && pr.closed[c.inOff[i]+k] {
			continue
		}
		e.Open = append(e.Open, ch)
		if f := c.failed[ch]; f != nil {
			e.Failed = append(e.Failed, f)
		}
	}
}

// incomplete describes what s lacks; c.mu must be held. pr may be nil.
func (c *Collector) incomplete(s spec.SnapID, pr *progress) *IncompleteError {
	e := &IncompleteError{Snap: s}
	for i, p := range c.topo.Procs {
		if pr.part(i) {
			continue
		}
		if pr == nil || !pr.recorded[i] {
			e.NeverRecorded = append(e.NeverRecorded, p)
		}
		c.openChans(e, pr, i)
		if c.stopped[p] {
			e.Stopped = append(e.Stopped, p)
		}
	}
	return e
}
