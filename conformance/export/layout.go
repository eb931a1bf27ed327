package export

import (
	"fmt"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// View chooses what a diagram shows of a run. The zero View shows the
// whole run with every snapshot.
//
// The diagram's columns are Lamport times (causal depth): an event's
// column is one more than the larger of its process's previous event's
// and, for a receive, its send's (a marker's send is its sender's
// recording point). Events no chain of messages orders share a column;
// every column from 1 to the last holds an event.
type View struct {
	// Snap, if not 0, is the one snapshot drawn: its cut, its markers and
	// what its cut makes of each message. Without From and To the
	// diagram then shows the snapshot's neighbourhood: the columns of its
	// recording points and of its markers' receives, widened to take in
	// the sends and receives of the messages its cut classifies as far
	// as MaxSpan columns allow, and Margin columns either side.
	Snap spec.SnapID
	// From and To are the first and last column shown, inclusive; 0
	// leaves that end at the run's. A To past the run's end is its end.
	From, To int
}

// window renders v's From:TO, an end left open empty.
func (v View) window() string {
	end := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprint(n)
	}
	return end(v.From) + ":" + end(v.To)
}

// Margin is how many columns either side of a snapshot's neighbourhood
// a View with Snap and no window shows.
const Margin = 3

// MaxSpan is how many columns a snapshot's neighbourhood widens to, at
// most, to take in the messages its cut classifies; the recording
// points and markers are always in.
const MaxSpan = 110

// Extent is what a drawn diagram covers: columns From to To of the run's
// Columns, and its size in pixels. PerStep says a column is a step in
// the trace's order (the sink diagram's), not a Lamport time.
type Extent struct {
	From, To, Columns int
	Width, Height     int
	PerStep           bool
}

// String renders the extent as "columns 552..592 of 1585 (Lamport
// time), 2576x610 px" ("(one a step)" if PerStep).
func (x Extent) String() string {
	unit := "Lamport time"
	if x.PerStep {
		unit = "one a step"
	}
	return fmt.Sprintf("columns %d..%d of %d (%s), %dx%d px", x.From, x.To, x.Columns, unit, x.Width, x.Height)
}

// Lamport is each event's column: its Lamport time, 1-based, computed
// along the trace's causal order from the matched sends of a's messages
// and markers. A receive whose send comes later in the trace (a broken
// trace) counts only its process's previous event.
func (a *Analysis) Lamport() []int {
	n := len(a.Trace.Events)
	sendOf := make([]int, n)
	for i := range sendOf {
		sendOf[i] = -1
	}
	for _, m := range a.Messages {
		matchSend(sendOf, m.Send, m.Recv)
	}
	for _, m := range a.Markers {
		matchSend(sendOf, m.Send, m.Recv)
	}
	col := make([]int, n)
	last := make(map[spec.ProcID]int, len(a.Top.Procs))
	for i, e := range a.Trace.Events {
		c := last[e.Proc]
		if s := sendOf[i]; s >= 0 {
			c = max(c, col[s])
		}
		col[i] = c + 1
		last[e.Proc] = c + 1
	}
	return col
}

// matchSend notes in sendOf that event recv receives what event send
// sent, if both happened and the send comes first in the trace.
func matchSend(sendOf []int, send, recv int) {
	if recv >= 0 && send >= 0 && send < recv {
		sendOf[recv] = send
	}
}

// CheckView says why view v does not fit the run, nil if it does: a
// snapshot the trace does not name, or columns outside the run.
func (a *Analysis) CheckView(v View) error {
	_, err := newLayout(a, v)
	return err
}

// layout is a diagram's geometry: the events' columns, the columns shown
// and the snapshots drawn.
type layout struct {
	a    *Analysis
	col  []int
	last int // the run's last column
	// from and to are the columns shown.
	from, to int
	// cuts are the indices into a.Cuts of the snapshots drawn, in order;
	// a snapshot keeps its colour, SnapColor(index), in every view.
	cuts  []int
	drawn map[spec.SnapID]bool
}

// newLayout lays a out for view v, or says why v does not fit the run.
func newLayout(a *Analysis, v View) (*layout, error) {
	l := &layout{a: a, col: a.Lamport(), drawn: map[spec.SnapID]bool{}}
	for _, c := range l.col {
		l.last = max(l.last, c)
	}
	if err := l.pickCuts(v.Snap); err != nil {
		return nil, err
	}
	l.from, l.to = l.window(v)
	if err := l.checkWindow(v); err != nil {
		return nil, err
	}
	l.to = min(l.to, max(l.last, 1))
	l.keepCrossing()
	return l, nil
}

// pickCuts chooses the snapshots drawn: every one (snap 0) or snapshot
// snap, which the trace must name.
func (l *layout) pickCuts(snap spec.SnapID) error {
	for k, c := range l.a.Cuts {
		if snap == 0 || c.Snap == snap {
			l.cuts = append(l.cuts, k)
			l.drawn[c.Snap] = true
		}
	}
	if snap == 0 || len(l.cuts) > 0 {
		return nil
	}
	return l.a.noSnap(snap)
}

// noSnap is the error of a view of snapshot snap, which a's trace does
// not name, listing those it does.
func (a *Analysis) noSnap(snap spec.SnapID) error {
	var ids []string
	for _, c := range a.Cuts {
		ids = append(ids, fmt.Sprint(c.Snap))
	}
	if len(ids) == 0 {
		return fmt.Errorf("export: no snapshot %d: the trace names none", snap)
	}
	return fmt.Errorf("export: no snapshot %d in the trace (it names %s)", snap, strings.Join(ids, ", "))
}

// window is the columns v asks for: its From and To, an end left open
// the run's; else the neighbourhood of its snapshot with Margin columns
// either side; else the whole run.
func (l *layout) window(v View) (from, to int) {
	from, to = 1, max(l.last, 1)
	switch {
	case v.From != 0 || v.To != 0:
		if v.From != 0 {
			from = v.From
		}
		if v.To != 0 {
			to = v.To
		}
	case v.Snap != 0:
		if lo, hi, ok := l.neighbourhood(l.a.Cuts[l.cuts[0]]); ok {
			from, to = max(lo-Margin, 1), min(hi+Margin, to)
		}
	}
	return from, to
}

// checkWindow says why the columns chosen for v do not fit the run.
func (l *layout) checkWindow(v View) error {
	switch {
	case l.from < 1 || l.to < 1:
		return fmt.Errorf("export: window %s: columns start at 1", v.window())
	case l.from > max(l.last, 1):
		return fmt.Errorf("export: window %s starts after the run's last column, %d", v.window(), l.last)
	case l.from > l.to:
		return fmt.Errorf("export: window %s is empty (it ends at column %d)", v.window(), l.to)
	}
	return nil
}

// keepCrossing leaves out of the snapshots drawn those whose cut lies
// wholly outside the columns shown: every recording point before them,
// or every one after them (a process that never recorded is after).
func (l *layout) keepCrossing() {
	var keep []int
	for _, k := range l.cuts {
		c := l.a.Cuts[k]
		if lo, hi := l.recordingSpan(c); hi >= l.from && lo <= l.to {
			keep = append(keep, k)
		} else {
			delete(l.drawn, c.Snap)
		}
	}
	l.cuts = keep
}

// recordingSpan is the first and last column of cut c's recording
// points, a process that never recorded counting as after the run.
func (l *layout) recordingSpan(c Cut) (lo, hi int) {
	lo, hi = l.last+1, 0
	for _, r := range c.Rec {
		at := l.last + 1
		if r >= 0 {
			at = l.col[r]
		}
		lo, hi = min(lo, at), max(hi, at)
	}
	return lo, hi
}

// neighbourhood is the first and last column of cut c's recording
// points and markers' receives, widened towards the sends and receives
// of the messages it classifies up to MaxSpan columns in all, evenly
// either side; ok is false if it has none.
func (l *layout) neighbourhood(c Cut) (lo, hi int, ok bool) {
	lo, hi = l.cutSpan(c)
	mlo, mhi := lo, hi
	for _, m := range l.a.Messages {
		if m.Status[c.Snap] != "" {
			mlo, mhi = l.widen(m.Send, mlo, mhi)
			mlo, mhi = l.widen(m.Recv, mlo, mhi)
		}
	}
	if hi == 0 {
		return mlo, mhi, mhi > 0
	}
	room := max(MaxSpan-(hi-lo+1), 0)
	left := min(lo-mlo, max(room/2, room-(mhi-hi)))
	right := min(mhi-hi, room-left)
	return lo - left, hi + right, true
}

// cutSpan is the first and last column of cut c's recording points and
// its markers' receives (last+1, 0 if none).
func (l *layout) cutSpan(c Cut) (lo, hi int) {
	lo, hi = l.last+1, 0
	for _, r := range c.Rec {
		lo, hi = l.widen(r, lo, hi)
	}
	for _, m := range l.a.Markers {
		if m.Snap == c.Snap {
			lo, hi = l.widen(m.Recv, lo, hi)
		}
	}
	return lo, hi
}

// widen widens the span lo..hi to take in event i's column, if i
// happened (i >= 0).
func (l *layout) widen(i, lo, hi int) (int, int) {
	if i < 0 {
		return lo, hi
	}
	return min(lo, l.col[i]), max(hi, l.col[i])
}

// shown reports whether event i is in the columns shown.
func (l *layout) shown(i int) bool { return l.from <= l.col[i] && l.col[i] <= l.to }

// xCol is the x of column c (which may lie outside the columns shown).
func (l *layout) xCol(c int) float64 { return float64(left + (c-l.from+1)*dx) }

// x is the x of event i.
func (l *layout) x(i int) float64 { return l.xCol(l.col[i]) }

// xMin and xMax bound the drawing area of the columns shown; when they
// reach the run's end, it ends after xEnd.
func (l *layout) xMin() float64 { return float64(left + dx/2) }
func (l *layout) xMax() float64 {
	if l.to >= l.last {
		return l.xEnd() + dx/4
	}
	return l.xCol(l.to) + dx/2
}

// xEnd is where things not received by the end of the run end: a
// column after the run's last.
func (l *layout) xEnd() float64 { return l.xCol(l.last + 1) }

// clip clips the segment (x1, y1)-(x2, y2), x1 <= x2, to the drawing
// area; ok is false if none of it is inside. cut1 and cut2 say whether
// an end was moved.
func (l *layout) clip(x1, y1, x2, y2 float64) (seg [4]float64, cut1, cut2, ok bool) {
	lo, hi := l.xMin(), l.xMax()
	if x2 < lo || x1 > hi {
		return seg, false, false, false
	}
	at := func(x float64) float64 {
		if x2 == x1 {
			return y1
		}
		return y1 + (y2-y1)*(x-x1)/(x2-x1)
	}
	if x1 < lo {
		x1, y1, cut1 = lo, at(lo), true
	}
	if x2 > hi {
		x2, y2, cut2 = hi, at(hi), true
	}
	return [4]float64{x1, y1, x2, y2}, cut1, cut2, true
}
