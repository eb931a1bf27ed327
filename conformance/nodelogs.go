package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// A run comes either as one trace (spec.WriteTrace: every process's
// events in a causally consistent order) or as the per-node logs the
// runtime writes (impl/runtime.OpenTraces: dir/P1.jsonl, ...), each a
// trace holding one process's events. Replay needs the former: merge the
// logs with MergeNodeLogs, and check a trace with Incomplete before
// replaying it, since a trace missing events the others depend on (one
// node's own log) would diverge at the first receive for want of its send.

// Incomplete returns an error naming the first event whose vector clock
// counts a step of another process that tr does not hold, and every
// process some of whose counted steps tr lacks (tr is then not the whole
// run: a node's own log, or a merge missing one), nil if tr holds every
// event its clocks say happened before one of its events.
func Incomplete(tr spec.Trace) error {
	top := tr.Header.Topology
	if top == nil {
		return nil // Replay reports it
	}
	have := make([]int, len(top.Procs))
	for _, e := range tr.Events {
		if i := top.ProcIndex(e.Proc); i >= 0 {
			have[i]++
		}
	}
	lacks := make([]bool, len(top.Procs)) // a process some of whose counted steps tr lacks
	first := -1
	var firstOf int
	for k, e := range tr.Events {
		for j, n := range e.VC {
			if j >= len(have) || n <= uint64(have[j]) || top.Procs[j] == e.Proc {
				continue
			}
			lacks[j] = true
			if first < 0 {
				first, firstOf = k, j
			}
		}
	}
	if first < 0 {
		return nil
	}
	e := tr.Events[first]
	return fmt.Errorf("event %d, %s at %s, follows step %d of %s, but the trace holds %s of %s (it lacks steps of %s)",
		first+1, e, string(e.Proc), e.VC[firstOf], string(top.Procs[firstOf]), plural(have[firstOf], "event"), string(top.Procs[firstOf]), lacking(top.Procs, lacks))
}

// lacking names the processes whose counted steps are missing (lacks),
// in topology order: "P2", "P2 and P3", "P1, P2 and P3".
func lacking(procs []spec.ProcID, lacks []bool) string {
	var names []string
	for j, l := range lacks {
		if l {
			names = append(names, string(procs[j]))
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Whole returns nil if tr holds every event its vector clocks say
// happened, and otherwise why it is incomplete (Incomplete), adding,
// for one node's own log (NodeLog), where the missing events are: in
// the other nodes' logs, which the run's directory merges. markerwave
// audit refuses such a run (Audit) and markerwave export does not draw
// it: its receives would have no sends.
func Whole(tr spec.Trace) error {
	err := Incomplete(tr)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("incomplete: %w", err)
	if p, ok := NodeLog(tr); ok {
		err = fmt.Errorf("%w; the trace holds only %s's events, as one node's own log does, the other nodes' being in their own logs: give the directory of the run's node logs to merge them", err, string(p))
	}
	return err
}

// MergeNodeLogs merges the per-node logs of one run (each a NodeLog of a
// different process, with the same topology, initial balances and
// budget) into one trace with spec.MergeCausal. The header is the first
// log's, with Source saying it was merged.
//
// A run with restores leaves one log per process and incarnation, each
// restored incarnation's naming the snapshot it was restored from
// (spec.Header.RestoredFrom). The logs of each incarnation are merged
// apart, and the incarnations chained: the first is the one restored
// from no snapshot, each next the one restored from a snapshot initiated
// in the one before; a restore line (spec.Restore) joins them. An
// incarnation followed by another was rolled back: if a crash lost some
// of its steps, it is cut back to the events whose causes its logs hold
// (see ReadCrashedNodeLog), and the header's Source says how many were
// dropped.
func MergeNodeLogs(logs []spec.Trace) (spec.Trace, error) {
	if len(logs) == 0 {
		return spec.Trace{}, fmt.Errorf("merge: no logs")
	}
	byInc, err := byIncarnation(logs)
	if err != nil {
		return spec.Trace{}, err
	}
	h := logs[0].Header
	h.RestoredFrom = 0
	tr := spec.Trace{Header: h}
	inc, notes, err := mergeIncarnations(&tr, byInc)
	if err != nil {
		return spec.Trace{}, err
	}
	tr.Header.Source = fmt.Sprintf("%d node logs merged in causal order", len(logs))
	if inc > 1 {
		tr.Header.Source += fmt.Sprintf(", %d incarnations", inc)
	}
	tr.Header.Source += notes
	return tr, nil
}

// byIncarnation groups the node logs by the snapshot their incarnation
// was restored from, each one node's log of the run log 1 is of, one log
// per node and incarnation.
func byIncarnation(logs []spec.Trace) (map[spec.SnapID]map[spec.ProcID][]spec.Event, error) {
	h := logs[0].Header
	byInc := map[spec.SnapID]map[spec.ProcID][]spec.Event{}
	for i, l := range logs {
		p, ok := NodeLog(l)
		from := l.Header.RestoredFrom
		switch {
		case !ok:
			return nil, fmt.Errorf("merge: log %d is not one node's log", i+1)
		case !sameRun(h, l.Header):
			return nil, fmt.Errorf("merge: log %d has another topology, initial balances or budget than log 1", i+1)
		case byInc[from] == nil:
			byInc[from] = map[spec.ProcID][]spec.Event{}
		}
		switch {
		case p == "":
			continue
		case byInc[from][p] != nil:
			return nil, fmt.Errorf("merge: two logs of %s%s", string(p), incarnationOf(from))
		}
		byInc[from][p] = l.Events
	}
	return byInc, nil
}

// mergeIncarnations appends to tr each incarnation's events merged in
// causal order, from the first, each next the one restored from a
// snapshot of the one before, with a restore between; it returns the
// number of incarnations and the notes on the events a crash dropped.
func mergeIncarnations(tr *spec.Trace, byInc map[spec.SnapID]map[spec.ProcID][]spec.Event) (int, string, error) {
	top := tr.Header.Topology
	from, inc := spec.SnapID(0), 1
	notes := ""
	for {
		evs, ok := byInc[from]
		if !ok {
			return inc, notes, fmt.Errorf("merge: no logs%s", incarnationOf(from))
		}
		delete(byInc, from)
		if len(byInc) > 0 {
			notes += crashNote(inc, causalPrefix(top, evs))
		}
		merged, err := mergeOne(top, evs, inc, from, len(byInc) == 0)
		if err != nil {
			return inc, notes, err
		}
		if inc > 1 {
			tr.Restores = append(tr.Restores, spec.Restore{Snap: from, Incarnation: inc, At: len(tr.Events)})
		}
		tr.Events = append(tr.Events, merged...)
		if len(byInc) == 0 {
			return inc, notes, nil
		}
		next, err := restoredFrom(merged, byInc)
		if err != nil {
			return inc, notes, fmt.Errorf("merge: after incarnation %d%s: %w", inc, incarnationOf(from), err)
		}
		from, inc = next, inc+1
	}
}

// mergeOne merges the logs of incarnation inc, restored from snapshot
// from, in causal order; last: no incarnation follows.
func mergeOne(top *spec.Topology, evs map[spec.ProcID][]spec.Event, inc int, from spec.SnapID, last bool) ([]spec.Event, error) {
	merged, err := spec.MergeCausal(top, evs)
	switch {
	case err != nil && inc == 1 && last: // a run of one incarnation
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("merge%s: %w", incarnationOf(from), err)
	}
	return merged, nil
}

// incarnationOf names the incarnation restored from snapshot from, for
// errors ("" for the first).
func incarnationOf(from spec.SnapID) string {
	if from == 0 {
		return " of the first incarnation (restored from no snapshot)"
	}
	return fmt.Sprintf(" of the incarnation restored from snapshot %d", from)
}

// restoredFrom is the snapshot, initiated in evs, that exactly one of the
// remaining incarnations (left, by the snapshot each was restored from)
// was restored from.
func restoredFrom(evs []spec.Event, left map[spec.SnapID]map[spec.ProcID][]spec.Event) (spec.SnapID, error) {
	var found []spec.SnapID
	for _, e := range evs {
		if _, ok := left[e.Snap]; ok && e.Action == spec.Initiate {
			found = append(found, e.Snap)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		var rest []string
		for s := range left {
			rest = append(rest, fmt.Sprint(s))
		}
		slices.Sort(rest)
		return 0, fmt.Errorf("no log is of an incarnation restored from a snapshot it initiated (the others are restored from %s)", strings.Join(rest, ", "))
	}
	return 0, fmt.Errorf("logs of incarnations restored from %d different snapshots it initiated", len(found))
}

// sameRun reports whether two node logs' headers describe the same run's
// constants.
func sameRun(a, b spec.Header) bool {
	return slices.Equal(a.Topology.Procs, b.Topology.Procs) && slices.Equal(a.Topology.Chans, b.Topology.Chans) &&
		maps.Equal(a.InitBal, b.InitBal) && maps.Equal(a.Budget, b.Budget) && maps.Equal(a.Snaps, b.Snaps)
}
