package runtime

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/trace"
	"github.com/markerwave/markerwave/spec"
)

// NodeTracePath is where OpenTraces writes p's log in dir.
func NodeTracePath(dir string, p spec.ProcID) string {
	return filepath.Join(dir, string(p)+".jsonl")
}

// RestoredTracePath is where OpenTrace writes, in dir, the log of p
// restored from snapshot from: a file of its own, so that the logs of the
// run it was restored from stay for the audit (conformance.MergeNodeLogs
// chains them by the header's RestoredFrom). A later restore from the
// same snapshot replaces it, as that run was rolled back entirely.
func RestoredTracePath(dir string, p spec.ProcID, from spec.SnapID) string {
	return filepath.Join(dir, fmt.Sprintf("%s.restored-%d.jsonl", string(p), from))
}

// OpenTraces creates dir and one JSON-lines sink per process of h.Topology
// (dir/P1.jsonl, ...), each starting with header h. Close them with
// CloseTraces.
func OpenTraces(dir string, h spec.Header) (map[spec.ProcID]*trace.Sink, error) {
	if h.Topology == nil {
		return nil, fmt.Errorf("runtime: trace header has no topology")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runtime: trace dir: %w", err)
	}
	sinks := map[spec.ProcID]*trace.Sink{}
	for _, p := range h.Topology.Procs {
		s, err := OpenTrace(dir, p, h)
		if err != nil {
			CloseTraces(sinks)
			return nil, err
		}
		sinks[p] = s
	}
	return sinks, nil
}

// OpenTrace creates dir if needed and p's log in it (see OpenTraces; a
// header restored from a snapshot gets RestoredTracePath).
func OpenTrace(dir string, p spec.ProcID, h spec.Header) (*trace.Sink, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runtime: trace dir: %w", err)
	}
	path := NodeTracePath(dir, p)
	if h.RestoredFrom != 0 {
		path = RestoredTracePath(dir, p, h.RestoredFrom)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("runtime: trace of %s: %w", string(p), err)
	}
	hp := h
	hp.Source = "markerwave runtime, node " + string(p)
	s, err := trace.NewSink(f, hp)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// CloseTraces flushes and closes the sinks; it returns the first error.
func CloseTraces(sinks map[spec.ProcID]*trace.Sink) error {
	var first error
	for p, s := range sinks {
		if err := s.Close(); err != nil && first == nil {
			first = fmt.Errorf("runtime: trace of %s: %w", string(p), err)
		}
	}
	return first
}

// ReadNodeTraces reads the per-node logs OpenTraces wrote in dir. A
// missing log counts as empty.
func ReadNodeTraces(dir string, t *spec.Topology) (map[spec.ProcID][]spec.Event, error) {
	logs := map[spec.ProcID][]spec.Event{}
	for _, p := range t.Procs {
		path := NodeTracePath(dir, p)
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		tr, err := spec.ReadTrace(bufio.NewReader(f))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		logs[p] = tr.Events
	}
	return logs, nil
}

// MergeTraces merges the per-node logs in dir into one causally consistent
// order (spec.MergeCausal) and writes it to out with header h and, as the
// trace's recorded snapshots, snaps: the snapshots the cluster collected
// (every one it completed, for markerwave audit to check them all; none:
// audit derives them from the events). A snapshot without an initiator
// takes h.Snaps'. h needs InitBal for every process; a nil Budget is
// derived by the reader (each process's number of sends). It returns the
// number of events.
func MergeTraces(dir string, h spec.Header, snaps []snapshot.Global, out string) (int, error) {
	if err := checkMergeHeader(h); err != nil {
		return 0, err
	}
	logs, err := ReadNodeTraces(dir, h.Topology)
	if err != nil {
		return 0, err
	}
	evs, err := spec.MergeCausal(h.Topology, logs)
	if err != nil {
		return 0, err
	}
	tr := spec.Trace{Header: h, Events: evs, Recorded: recordedSnapshots(snaps, h.Snaps)}
	if err := writeTraceFile(out, tr); err != nil {
		return 0, err
	}
	return len(evs), nil
}

// checkMergeHeader checks that h, a merged trace's header, has a
// topology and an initial balance for each of its processes.
func checkMergeHeader(h spec.Header) error {
	if h.Topology == nil {
		return fmt.Errorf("runtime: trace header has no topology")
	}
	for _, p := range h.Topology.Procs {
		if _, ok := h.InitBal[p]; !ok {
			return fmt.Errorf("runtime: trace header has no initial balance for %s", string(p))
		}
	}
	return nil
}

// recordedSnapshots are snaps as a trace's recorded snapshots, in id
// order, a snapshot without an initiator taking initiators'.
func recordedSnapshots(snaps []snapshot.Global, initiators map[spec.SnapID]spec.ProcID) []spec.RecordedSnapshot {
	rec := make([]spec.RecordedSnapshot, 0, len(snaps))
	for i := range snaps {
		r := snaps[i].RecordedSnapshot()
		if r.Initiator == "" {
			r.Initiator = initiators[r.Snap]
		}
		rec = append(rec, r)
	}
	sort.Slice(rec, func(i, j int) bool { return rec[i].Snap < rec[j].Snap })
	return rec
}

// writeTraceFile writes tr to a new file at path.
func writeTraceFile(path string, tr spec.Trace) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := spec.WriteTrace(bw, tr); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
