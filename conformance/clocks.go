package conformance

import (
	"fmt"
	"slices"

	"github.com/markerwave/markerwave/spec"
)

// Given vector clocks. A markerwave-trace/3 event and an outsider log's
// line may give the vector clock of its step (optional, one entry per
// process in topology order). Both audits count the clocks of the run's
// steps with one arithmetic (stepClock) and check a given clock against
// them with one rule set (givenClocks.check): the trace/3 audit from its
// events in file order (checkClocks, before the replay), the outsider
// audit from the logged steps as it merges them (merger.take). Clocks
// count from the start of an incarnation. A clock that fails is bad
// input, named by line, process, field and entry.

// stepClock advances v, process i's clock, past i's next step: its own
// entry counts the step, and every entry is at least from's, the clock of
// the step it receives from (nil if none: a local step, or a receive of
// what no step of the incarnation sent, a message restored in flight).
func stepClock(v []uint64, i int, from []uint64) {
	v[i]++
	for j, x := range from {
		v[j] = max(v[j], x)
	}
}

// placed is where a clock is given: where names the line, for errors.
type placed interface{ where() string }

// clockAt is a clock a line gives (vc nil: none), and the line.
type clockAt[L placed] struct {
	vc []uint64
	at L
}

// clockFrom is the clock of the step a step receives from, which its
// clock must cover: as that step's line gives it (given), else as the
// audit counts it.
type clockFrom[L placed] struct {
	clockAt[L]
	given bool
}

// givenClocks checks the clocks given in one incarnation, each process's
// in its order: the processes, each one's number of steps in the
// incarnation, the clock each gave last, and what counts as a step (for
// the error of a wrong own entry).
type givenClocks[L placed] struct {
	procs  []spec.ProcID
	steps  []uint64
	prev   []clockAt[L]
	counts string
}

func newGivenClocks[L placed](procs []spec.ProcID, steps []uint64, counts string) *givenClocks[L] {
	return &givenClocks[L]{procs: procs, steps: steps, prev: make([]clockAt[L], len(procs)), counts: counts}
}

// check checks clock g that process i gives, lo the clock of i's steps
// up to g (stepClock's, counted from the incarnation's start), from the
// clock of the step g's step receives from (nil if none). step is false
// for a line that is no step and gives the clock of the step before it;
// loose is true for a process whose marker receipts the audit places
// (an outsider node that logs no marker events), whose lo leaves them
// out. What a given clock must satisfy, each entry named when it does
// not:
//
//   - i's own entry counts i's steps (lo[i]); loose: at least that, and
//     increasing from step to step;
//   - no entry is below i's clock given before (a clock never goes
//     back);
//   - it covers from (a receive's send, a marker receipt's sender's
//     recording point), which a clock counting as above is at least;
//   - no entry of another process exceeds that process's steps in the
//     incarnation.
func (c *givenClocks[L]) check(i int, g clockAt[L], lo []uint64, from *clockFrom[L], step, loose bool) error {
	v, p := g.vc, string(c.procs[i])
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: field \"vc\": %v: %s", g.at.where(), v, fmt.Sprintf(format, args...))
	}
	prev := c.prev[i]
	c.prev[i] = g
	switch {
	case !loose && v[i] != lo[i]:
		return bad("entry %s (its own) is %d, but this is %s's step %d of the incarnation (%s)", p, v[i], p, lo[i], c.counts)
	case loose && v[i] < lo[i]:
		return bad("entry %s (its own) is %d, but %s has logged %d steps of the incarnation by here", p, v[i], p, lo[i])
	case loose && step && prev.vc != nil && v[i] <= prev.vc[i]:
		return bad("entry %s (its own) does not increase (%s gives %v)", p, prev.at.where(), prev.vc)
	}
	if prev.vc != nil {
		for j, x := range prev.vc {
			if v[j] < x {
				return bad("entry %s is %d, below the %d of %s's clock before (%s: %v): a clock never goes back", string(c.procs[j]), v[j], x, p, prev.at.where(), prev.vc)
			}
		}
	}
	if from != nil {
		whose := "as the audit counts it (that line gives none)"
		if from.given {
			whose = "as that line gives it"
		}
		for j, x := range from.vc {
			if v[j] < x {
				return bad("entry %s is %d, but it must cover %v, the clock of the step it receives from (%s), %s: want at least %d", string(c.procs[j]), v[j], from.vc, from.at.where(), whose, x)
			}
		}
	}
	for j, q := range c.procs {
		if n := c.steps[j]; j != i && v[j] > n {
			return bad("entry %s is %d, but %s takes %d steps in the incarnation", string(q), v[j], string(q), n)
		}
	}
	return nil
}

// eventAt is event i (0-based) of a trace, placed by opts' lines (and
// files, in a run gathered from several), for the clock checks' errors.
type eventAt struct {
	e    *spec.Event
	i    int
	opts *Options
}

// where names the event's line and what it is: "trace line 6, P1's
// RecvMarker" ("event 6, ..." when the line is unknown).
func (a eventAt) where() string {
	place := fmt.Sprintf("event %d", a.i+1)
	if line := lineOf(a.opts.Lines, a.i); line > 0 {
		place = placeName(fileAt(a.opts.Files, a.i), line)
	}
	return fmt.Sprintf("%s, %s's %s", place, string(a.e.Proc), a.e.Action)
}

// checkClocks checks the vector clocks tr's events give (each event's
// optional: the events that give none are counted, not checked) against
// the clocks the events imply, incarnation by incarnation (a restore
// starts every clock afresh): each event is a step of its process, a
// RecvApp receives from its message's SendApp, a RecvMarker or
// DropMarker from the sender's recording step of the marker's snapshot
// (its Initiate or first RecvMarker of it, which sends the markers). An
// event the replay finds ill-formed ends the check: the replay reports
// it.
func checkClocks(tr spec.Trace, opts Options) error {
	top := tr.Header.Topology
	if top == nil || !slices.ContainsFunc(tr.Events, func(e spec.Event) bool { return e.VC != nil }) {
		return nil
	}
	at := 0
	for _, seg := range tr.Segments() {
		if err := checkIncarnationClocks(top, seg, at, &opts); err != nil {
			return err
		}
		at += len(seg)
	}
	return nil
}

// checkIncarnationClocks is checkClocks of one incarnation's events,
// seg, the first of which is the trace's event at.
func checkIncarnationClocks(top *spec.Topology, seg []spec.Event, at int, opts *Options) error {
	steps := make([]uint64, len(top.Procs))
	lo := make([][]uint64, len(top.Procs))
	for i := range lo {
		lo[i] = make([]uint64, len(top.Procs))
	}
	for _, e := range seg {
		if i := top.ProcIndex(e.Proc); i >= 0 {
			steps[i]++
		}
	}
	g := newGivenClocks[eventAt](top.Procs, steps, "each of its events is one")
	type msgKey struct {
		c   spec.Channel
		msg uint64
	}
	type recKey struct {
		p    spec.ProcID
		snap spec.SnapID
	}
	sends, recs := map[msgKey]int{}, map[recKey]int{} // the step's index in seg
	clocks := map[int][]uint64{}                      // those steps' clocks, as the events imply them
	for k := range seg {
		e := &seg[k]
		if e.Validate(top) != nil {
			return nil
		}
		i := top.ProcIndex(e.Proc)
		src, ok := -1, false
		switch e.Action {
		case spec.RecvApp:
			src, ok = sends[msgKey{e.Chan(), e.Msg}]
		case spec.RecvMarker, spec.DropMarker:
			src, ok = recs[recKey{e.From, e.Snap}]
		}
		var srcLo []uint64
		if ok {
			srcLo = clocks[src]
		}
		stepClock(lo[i], i, srcLo)
		rec := recKey{e.Proc, e.Snap}
		switch _, recorded := recs[rec]; {
		case e.Action == spec.SendApp:
			sends[msgKey{e.Chan(), e.Msg}] = k
			clocks[k] = slices.Clone(lo[i])
		case (e.Action == spec.Initiate || e.Action == spec.RecvMarker) && !recorded:
			recs[rec] = k
			clocks[k] = slices.Clone(lo[i])
		}
		if e.VC == nil {
			continue
		}
		var from *clockFrom[eventAt]
		if ok {
			from = &clockFrom[eventAt]{clockAt: clockAt[eventAt]{vc: srcLo, at: eventAt{&seg[src], at + src, opts}}}
			if v := seg[src].VC; v != nil {
				from.vc, from.given = v, true
			}
		}
		if err := g.check(i, clockAt[eventAt]{vc: e.VC, at: eventAt{e, at + k, opts}}, lo[i], from, true, false); err != nil {
			return err
		}
	}
	return nil
}
