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
	n := len(t.Procs)
	pos := make([]int, n)
	queues := make([][]Event, n)
	total := 0
	for p, evs := range logs {
		i := t.ProcIndex(p)
		if i < 0 {
			return nil, fmt.Errorf("merge: log of unknown process %q", string(p))
		}
		for k, e := range evs {
			if e.Proc != p {
				return nil, fmt.Errorf("merge: log of %s holds an event of %s", string(p), string(e.Proc))
			}
			if len(e.VC) != n || e.VC[i] != uint64(k+1) {
				return nil, fmt.Errorf("merge: %s event %d (%s): vector clock %v does not count it as its %d-th step", string(p), k+1, e, e.VC, k+1)
			}
		}
		queues[i] = evs
		total += len(evs)
	}
	out := make([]Event, 0, total)
	for len(out) < total {
		placed := false
		for i := 0; i < n; i++ {
			if pos[i] >= len(queues[i]) {
				continue
			}
			e := queues[i][pos[i]]
			ready := true
			for j := 0; j < n; j++ {
				if j != i && e.VC[j] > uint64(pos[j]) {
					ready = false
					break
				}
			}
			if ready {
				out = append(out, e)
				pos[i]++
				placed = true
				break
			}
		}
		if !placed {
			for i := 0; i < n; i++ {
				if pos[i] < len(queues[i]) {
					e := queues[i][pos[i]]
					return nil, fmt.Errorf("merge: %s step %d (%s) waits for events no log holds (clock %v)", string(e.Proc), e.Seq, e, e.VC)
				}
			}
		}
	}
	return out, nil
}
