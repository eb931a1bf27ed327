package main

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
)

// The simulator's world: virtual time, an event queue ordered by it,
// links that deliver in order after a random delay. Nothing here is
// markerwave's: the types, the queue and the scheduling are this
// simulator's own.

// kind says what an event does when its time comes.
type kind int

const (
	deliver  kind = iota // a frame arrives at the end of its link
	tick                 // a node's application wakes up to transfer money
	initiate             // a node starts a snapshot
)

// frame is what travels on a link: a transfer or a marker.
type frame struct {
	marker bool
	id     string // a transfer's id, of its sender's choosing ("N1/3")
	amount int64
	snap   string // a marker's snapshot
}

// occurrence is one entry of the event queue.
type occurrence struct {
	at    float64
	order int // ties broken by scheduling order: the run is deterministic
	what  kind
	node  int
	link  *link // deliver: the link the frame arrives on
	frame frame
	snap  string // initiate: the snapshot's id
}

// agenda is the event queue, a min-heap on (at, order).
type agenda []*occurrence

func (a agenda) Len() int { return len(a) }
func (a agenda) Less(i, j int) bool {
	return a[i].at < a[j].at || a[i].at == a[j].at && a[i].order < a[j].order
}
func (a agenda) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *agenda) Push(x any)   { *a = append(*a, x.(*occurrence)) }
func (a *agenda) Pop() any {
	old := *a
	o := old[len(old)-1]
	*a = old[:len(old)-1]
	return o
}

// link is a one-way FIFO link: a frame sent on it arrives after a
// random delay, never before the frame sent before it.
type link struct {
	from, to *node
	last     float64 // when the latest frame sent on it arrives
}

// world is one simulation.
type world struct {
	now    float64
	queue  agenda
	order  int
	rng    *rand.Rand
	nodes  []*node
	cfg    config
	fired  map[bug]bool // the injected bug changed the run
	events int
}

// schedule adds an occurrence at time at.
func (w *world) schedule(o *occurrence) {
	w.order++
	o.order = w.order
	heap.Push(&w.queue, o)
}

// transmit puts f on l: it arrives after a random delay, behind every
// frame already on l.
func (w *world) transmit(l *link, f frame) {
	at := max(w.now+1+w.rng.Float64()*w.cfg.maxDelay, l.last+0.01)
	l.last = at
	w.schedule(&occurrence{at: at, what: deliver, node: l.to.index, link: l, frame: f})
}

// run plays the agenda out: every transfer delivered, every marker
// arrived.
func (w *world) run() error {
	for w.queue.Len() > 0 {
		o := heap.Pop(&w.queue).(*occurrence)
		w.now = o.at
		w.events++
		if w.events > 1_000_000 {
			return fmt.Errorf("the simulation did not end after %d events", w.events)
		}
		n := w.nodes[o.node]
		switch o.what {
		case deliver:
			n.arrive(o.link, o.frame)
		case tick:
			n.wake()
		case initiate:
			n.startSnapshot(o.snap)
		}
	}
	return nil
}
