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
			reps = append(reps, r)
		}
		// What the reports say of s.
		recorded, closed, parts, stopped := map[spec.ProcID]bool{}, map[spec.Channel]bool{}, map[spec.ProcID]bool{}, map[spec.ProcID]bool{}
		for _, r := range reps {
			switch {
			case r.kind == 3:
				stopped[r.proc] = true
			case r.snap != s:
			case r.kind == 0:
				recorded[r.proc] = true
			case r.kind == 1:
				closed[r.ch] = true
			case r.kind == 2:
				parts[r.proc] = true
			}
		}
		var never, stop []spec.ProcID
		var open []spec.Channel
		for _, p := range topo.Procs {
			if parts[p] {
				continue
			}
			if !recorded[p] {
				never = append(never, p)
			}
			for _, c := range topo.In(p) {
				if !closed[c] {
					open = append(open, c)
				}
			}
			if stopped[p] {
				stop = append(stop, p)
			}
		}

		col := mwrt.NewCollector(topo)
		var wg sync.WaitGroup
		for _, p := range topo.Procs {
			wg.Add(1)
			go func() { // one goroutine per node, each in its own order
				defer wg.Done()
				for _, r := range reps {
					if r.proc != p {
						continue
					}
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
			}()
		}
		wg.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_, err := col.Collect(ctx, s)
		var inc *mwrt.IncompleteError
		if !errors.As(err, &inc) {
			rt.Fatalf("Collect of snapshot %d lacking %s's part: %v, want an *IncompleteError", s, string(lacking), err)
		}
		if !slices.Equal(inc.NeverRecorded, never) || !slices.Equal(inc.Open, open) || !slices.Equal(inc.Stopped, stop) || inc.Snap != s {
			rt.Fatalf("IncompleteError does not name exactly what is missing:\n  got:  snap %d, never recorded %v, open %v, stopped %v\n  want: snap %d, never recorded %v, open %v, stopped %v",
				inc.Snap, inc.NeverRecorded, inc.Open, inc.Stopped, s, never, open, stop)
		}
		wantCause := error(context.DeadlineExceeded)
		if len(stop) > 0 {
			wantCause = mwrt.ErrNodeStopped
		}
		if !errors.Is(err, wantCause) {
			rt.Fatalf("IncompleteError's cause is %v, want %v", inc.Cause, wantCause)
		}

		// Forgotten: later reports of s are dropped.
		col.Forget(s)
		col.Recorded(s, lacking)
		col.Add(emptyPart(topo, s, lacking))
		if slices.Contains(col.Pending(), s) {
			rt.Fatalf("snapshot %d was forgotten, yet a later report makes it pending again: %v", s, col.Pending())
		}

		// Complete: handed out once, then ErrCollected, then dropped.
		if len(stop) == 0 {
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
	})
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
