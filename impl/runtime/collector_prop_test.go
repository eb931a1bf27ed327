package runtime_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/spec"
)

// emptyPart is p's completed part of s with nothing in flight.
func emptyPart(t *spec.Topology, s spec.SnapID, p spec.ProcID) snapshot.Part {
	part := snapshot.Part{Snap: s, Node: snapshot.NodeState{Proc: p}}
	for _, c := range t.Out(p) {
		part.Node.NextSend = append(part.Node.NextSend, snapshot.ChanSeq{Chan: c, Next: 1})
	}
	for _, c := range t.In(p) {
		part.In = append(part.In, snapshot.ChanState{Chan: c, NextRecv: 1})
	}
	return part
}

// report is one progress report a node makes to the collector.
type report struct {
	kind int // 0 Recorded, 1 Closed, 2 Add, 3 NodeStopped
	snap spec.SnapID
	proc spec.ProcID
	ch   spec.Channel
}

// TestCollectorNamesExactlyWhatIsMissing: for any topology and any
// reports nodes make (recorded, channel closed, part completed, node
// stopped), for the snapshot under test and for another one, delivered
// concurrently from one goroutine per node, Collect of the incomplete
// snapshot returns an *IncompleteError that names exactly the processes
// without a part that never recorded (NeverRecorded), the incoming
// channels of those processes not closed (Open, by receiver in topology
// order, then incoming order), the stopped ones among them (Stopped), and
// its cause: ErrNodeStopped at once if one is, else the deadline. The
// other snapshot's reports change nothing. Reports of a snapshot
// collected or forgotten are dropped (Pending never lists it again), and
// a complete snapshot is handed out once (then ErrCollected).
func TestCollectorNamesExactlyWhatIsMissing(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 4).Draw(rt, "procs")
		topo := spec.Ring(n)
		if rapid.Bool().Draw(rt, "complete") {
			topo = spec.Complete(n)
		}
		const s, other = spec.SnapID(1), spec.SnapID(2)
		// The snapshot under test lacks at least one part.
		lacking := rapid.SampledFrom(topo.Procs).Draw(rt, "lacking")
		var reps []report
		nr := rapid.IntRange(0, 30).Draw(rt, "reports")
		for range nr {
			reps = append(reps, drawCollectorReport(rt, topo, s, other, lacking))
		}
		// What the reports say of s.
		m := missingOf(topo, tallyReports(reps, s))

		col := mwrt.NewCollector(topo)
		deliverReports(col, topo, reps)

		checkIncomplete(rt, col, s, lacking, m)

		// Forgotten: later reports of s are dropped.
		checkForgottenDropped(rt, col, topo, s, lacking)

		// Complete: handed out once, then ErrCollected, then dropped.
		if len(m.stop) == 0 {
			checkHandedOutOnce(rt, col, topo, other)
		}
	})
}

// drawCollectorReport draws one report a node makes, of s or other: a
// part of s from lacking becomes a recording, and so does a stop unless
// "really stop" is drawn true.
func drawCollectorReport(rt *rapid.T, topo *spec.Topology, s, other spec.SnapID, lacking spec.ProcID) report {
	r := report{
		kind: rapid.IntRange(0, 3).Draw(rt, "kind"),
		snap: rapid.SampledFrom([]spec.SnapID{s, other}).Draw(rt, "snap"),
		proc: rapid.SampledFrom(topo.Procs).Draw(rt, "proc"),
	}
	if r.kind == 1 {
		r.ch = rapid.SampledFrom(topo.In(r.proc)).Draw(rt, "chan")
	}
	if r.kind == 2 && r.snap == s && r.proc == lacking {
		r.kind = 0
	}
	if r.kind == 3 && !rapid.Bool().Draw(rt, "really stop") {
		r.kind = 0
	}
	return r
}

// reportTally is what a run's reports say of one snapshot: who recorded
// it, which channels closed, whose parts came, and who stopped (of any
// snapshot).
type reportTally struct {
	recorded, parts, stopped map[spec.ProcID]bool
	closed                   map[spec.Channel]bool
}

// tallyReports is what reps say of s.
func tallyReports(reps []report, s spec.SnapID) reportTally {
	tl := reportTally{recorded: map[spec.ProcID]bool{}, parts: map[spec.ProcID]bool{}, stopped: map[spec.ProcID]bool{}, closed: map[spec.Channel]bool{}}
	for _, r := range reps {
		switch {
		case r.kind == 3:
			tl.stopped[r.proc] = true
		case r.snap != s:
		case r.kind == 0:
			tl.recorded[r.proc] = true
		case r.kind == 1:
			tl.closed[r.ch] = true
		case r.kind == 2:
			tl.parts[r.proc] = true
		}
	}
	return tl
}

// collectorMissing is what an IncompleteError must name: the processes
// without a part that never recorded, the open incoming channels of the
// processes without a part, and the stopped ones among them.
type collectorMissing struct {
	never, stop []spec.ProcID
	open        []spec.Channel
}

// missingOf is what the IncompleteError of a snapshot tallied as tl must
// name, in topology order.
func missingOf(topo *spec.Topology, tl reportTally) collectorMissing {
	var m collectorMissing
	for _, p := range topo.Procs {
		if tl.parts[p] {
			continue
		}
		if !tl.recorded[p] {
			m.never = append(m.never, p)
		}
		for _, c := range topo.In(p) {
			if !tl.closed[c] {
				m.open = append(m.open, c)
			}
		}
		if tl.stopped[p] {
			m.stop = append(m.stop, p)
		}
	}
	return m
}

// deliverReports makes reps to col from one goroutine per node, each in
// its own order, and waits for them all.
func deliverReports(col *mwrt.Collector, topo *spec.Topology, reps []report) {
	var wg sync.WaitGroup
	for _, p := range topo.Procs {
		wg.Add(1)
		go func() { // one goroutine per node, each in its own order
			defer wg.Done()
			for _, r := range reps {
				if r.proc != p {
					continue
				}
				deliverReport(col, topo, r)
			}
		}()
	}
	wg.Wait()
}

// deliverReport makes the report r to col.
func deliverReport(col *mwrt.Collector, topo *spec.Topology, r report) {
	switch r.kind {
	case 0:
		col.Recorded(r.snap, r.proc)
	case 1:
		col.Closed(r.snap, r.ch)
	case 2:
		col.Add(emptyPart(topo, r.snap, r.proc))
	case 3:
		col.NodeStopped(r.proc)
	}
}

// checkIncomplete checks that Collect of s, lacking lacking's part,
// returns an *IncompleteError naming exactly m, with its cause.
func checkIncomplete(rt *rapid.T, col *mwrt.Collector, s spec.SnapID, lacking spec.ProcID, m collectorMissing) {
	rt.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := col.Collect(ctx, s)
	var inc *mwrt.IncompleteError
	if !errors.As(err, &inc) {
		rt.Fatalf("Collect of snapshot %d lacking %s's part: %v, want an *IncompleteError", s, string(lacking), err)
	}
	if !slices.Equal(inc.NeverRecorded, m.never) || !slices.Equal(inc.Open, m.open) || !slices.Equal(inc.Stopped, m.stop) || inc.Snap != s {
		rt.Fatalf("IncompleteError does not name exactly what is missing:\n  got:  snap %d, never recorded %v, open %v, stopped %v\n  want: snap %d, never recorded %v, open %v, stopped %v",
			inc.Snap, inc.NeverRecorded, inc.Open, inc.Stopped, s, m.never, m.open, m.stop)
	}
	wantCause := error(context.DeadlineExceeded)
	if len(m.stop) > 0 {
		wantCause = mwrt.ErrNodeStopped
	}
	if !errors.Is(err, wantCause) {
		rt.Fatalf("IncompleteError's cause is %v, want %v", inc.Cause, wantCause)
	}
}

// checkForgottenDropped checks that once s is forgotten, later reports
// of it are dropped: it is not pending again.
func checkForgottenDropped(rt *rapid.T, col *mwrt.Collector, topo *spec.Topology, s spec.SnapID, lacking spec.ProcID) {
	rt.Helper()
	col.Forget(s)
	col.Recorded(s, lacking)
	col.Add(emptyPart(topo, s, lacking))
	if slices.Contains(col.Pending(), s) {
		rt.Fatalf("snapshot %d was forgotten, yet a later report makes it pending again: %v", s, col.Pending())
	}
}

// checkHandedOutOnce checks that other, given every part, is handed out
// once whole, then ErrCollected, and that later reports of it are
// dropped.
func checkHandedOutOnce(rt *rapid.T, col *mwrt.Collector, topo *spec.Topology, other spec.SnapID) {
	rt.Helper()
	for _, p := range topo.Procs {
		col.Add(emptyPart(topo, other, p))
	}
	g, err := col.Collect(context.Background(), other)
	if err != nil {
		rt.Fatalf("Collect of snapshot %d with every part: %v", other, err)
	}
	if g.ID != other || len(g.Nodes) != len(topo.Procs) || len(g.Chans) != len(topo.Chans) {
		rt.Fatalf("Collect assembled %d node states and %d channels for snapshot %d, want %d and %d of snapshot %d", len(g.Nodes), len(g.Chans), g.ID, len(topo.Procs), len(topo.Chans), other)
	}
	again, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := col.Collect(again, other); !errors.Is(err, mwrt.ErrCollected) {
		rt.Fatalf("second Collect of snapshot %d: %v, want ErrCollected", other, err)
	}
	col.Add(emptyPart(topo, other, topo.Procs[0]))
	col.Closed(other, topo.Chans[0])
	if slices.Contains(col.Pending(), other) {
		rt.Fatalf("snapshot %d was collected, yet a later report makes it pending again", other)
	}
}

// A snapshot whose parts come in concurrently with Collect waiting is
// handed out to exactly one of several concurrent Collects; the others
// get ErrCollected.
func TestCollectorHandsOutOnce(t *testing.T) {
	topo := spec.Complete(4)
	for round := range 50 {
		col := mwrt.NewCollector(topo)
		s := spec.SnapID(round + 1)
		var wg sync.WaitGroup
		results := make([]error, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				_, results[i] = col.Collect(ctx, s)
			}()
		}
		for _, p := range topo.Procs {
			wg.Add(1)
			go func() { defer wg.Done(); col.Add(emptyPart(topo, s, p)) }()
		}
		wg.Wait()
		won := 0
		for _, err := range results {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, mwrt.ErrCollected)
			}
		}
		require.Equal(t, 1, won, "snapshot %d handed out %d times", s, won)
	}
}
