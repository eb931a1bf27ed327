package spec

import "fmt"

// VectorClock is one counter per process, indexed like Topology.Procs.
type VectorClock []uint64

// Tick returns a copy of vc with process i's entry incremented (a local step).
func (vc VectorClock) Tick(i int) VectorClock {
	n := append(VectorClock(nil), vc...)
	n[i]++
	return n
}

// Merge returns the entrywise maximum of vc and other, then ticks i (a receive).
func (vc VectorClock) Merge(other VectorClock, i int) VectorClock {
	n := append(VectorClock(nil), vc...)
	for j := range n {
		if j < len(other) && other[j] > n[j] {
			n[j] = other[j]
		}
	}
	n[i]++
	return n
}

// MergeCausal merges per-process event logs into one causally consistent
// order: each process's order is kept, and an event comes after every event
// its vector clock says happened before it (so every send precedes its
// receive). Ties go to the lowest process index, so the result is
// deterministic. A log whose clocks are inconsistent is an error naming the
// event that can never be placed.
func MergeCausal(t *Topology, logs map[ProcID][]Event) ([]Event, error) {
	queues, total, err := causalQueues(t, logs)
	if err != nil {
		return nil, err
	}
	pos := make([]int, len(queues))
	out := make([]Event, 0, total)
	for len(out) < total {
		i := nextReady(queues, pos)
		if i < 0 {
			return nil, stuck(queues, pos)
		}
		out = append(out, queues[i][pos[i]])
		pos[i]++
	}
	return out, nil
}

// causalQueues is each process's log by process index, checked: the
// process's own events, each counted by its clock as its k-th step.
func causalQueues(t *Topology, logs map[ProcID][]Event) ([][]Event, int, error) {
	n := len(t.Procs)
	queues := make([][]Event, n)
	total := 0
	for p, evs := range logs {
		i := t.ProcIndex(p)
		if i < 0 {
			return nil, 0, fmt.Errorf("merge: log of unknown process %q", string(p))
		}
		for k, e := range evs {
			if e.Proc != p {
				return nil, 0, fmt.Errorf("merge: log of %s holds an event of %s", string(p), string(e.Proc))
			}
			if len(e.VC) != n || e.VC[i] != uint64(k+1) {
				return nil, 0, fmt.Errorf("merge: %s event %d (%s): vector clock %v does not count it as its %d-th step", string(p), k+1, e, e.VC, k+1)
			}
		}
		queues[i] = evs
		total += len(evs)
	}
	return queues, total, nil
}

// nextReady is the lowest process index whose next event has every event
// its clock counts placed (pos[j] of process j), -1 if none.
func nextReady(queues [][]Event, pos []int) int {
	for i := range queues {
		if pos[i] < len(queues[i]) && ready(queues[i][pos[i]], i, pos) {
			return i
		}
	}
	return -1
}

// ready reports whether every event of another process that e's clock
// counts is placed.
func ready(e Event, i int, pos []int) bool {
	for j := range pos {
		if j != i && e.VC[j] > uint64(pos[j]) {
			return false
		}
	}
	return true
}

// stuck names the first event that can never be placed.
func stuck(queues [][]Event, pos []int) error {
	for i := range queues {
		if pos[i] < len(queues[i]) {
			e := queues[i][pos[i]]
			return fmt.Errorf("merge: %s step %d (%s) waits for events no log holds (clock %v)", string(e.Proc), e.Seq, e, e.VC)
		}
	}
	return nil
}
