package conformance

import (
	"bytes"
	"fmt"
	"os"

	"github.com/markerwave/markerwave/spec"
)

// A node killed while it runs (kill -9) leaves its log as far as it was
// written: its last line may be cut short, and its last steps missing,
// so the other nodes' logs hold receives whose sends no log holds. The
// incarnation it belonged to was rolled back by the recovery that
// followed, and what matters of it is what came before the snapshot
// restored. ReadCrashedNodeLog and MergeNodeLogs make such a run
// auditable without hiding what was lost: the cut line is dropped and
// reported, and a rolled-back incarnation is cut back to the events its
// logs hold all the causes of.

// ReadCrashedNodeLog reads trace file path as ReadTraceFile does, except
// that if the file does not read and is a node's log (NodeLog) whose last
// line is cut short (no newline at its end: a complete line always has
// one), that line is dropped; cut reports whether one was. Any other
// error is ReadTraceFile's.
func ReadCrashedNodeLog(path string) (tr spec.Trace, lines spec.TraceLines, cut bool, err error) {
	return ReadCrashedNodeLogProgress(path, nil)
}

// ReadCrashedNodeLogProgress is ReadCrashedNodeLog calling progress, if
// not nil, with the number of events read so far after every line
// (spec.ReadTraceLinesProgress), for a caller that reports the reading of
// a long file.
func ReadCrashedNodeLogProgress(path string, progress func(events int)) (tr spec.Trace, lines spec.TraceLines, cut bool, err error) {
	tr, lines, err = readTraceFileProgress(path, progress)
	if err == nil {
		return tr, lines, false, nil
	}
	b, rerr := os.ReadFile(path)
	i := bytes.LastIndexByte(b, '\n')
	if rerr != nil || len(b) == 0 || b[len(b)-1] == '\n' || i < 0 {
		return tr, lines, false, err
	}
	tr2, lines2, err2 := spec.ReadTraceLines(bytes.NewReader(b[:i+1]))
	if _, ok := NodeLog(tr2); err2 != nil || !ok {
		return tr, lines, false, err
	}
	return tr2, lines2, true, nil
}

// causalPrefix cuts each process's events in byProc back to the longest
// prefix whose every event's vector clock counts only steps the logs
// hold: what an incarnation's logs say for sure when a crash lost some
// of its steps. It returns how many events it dropped. Logs without
// clocks are kept whole.
func causalPrefix(t *spec.Topology, byProc map[spec.ProcID][]spec.Event) int {
	dropped := 0
	for changed := true; changed; {
		changed = false
		for p, evs := range byProc {
			for i, e := range evs {
				if !holdsCauses(t, byProc, e) {
					dropped += len(evs) - i
					byProc[p] = evs[:i]
					changed = true
					break
				}
			}
		}
	}
	return dropped
}

// holdsCauses reports whether byProc holds every step e's clock counts.
func holdsCauses(t *spec.Topology, byProc map[spec.ProcID][]spec.Event, e spec.Event) bool {
	for j, n := range e.VC {
		if q := t.Procs[j]; q != e.Proc && n > uint64(len(byProc[q])) {
			return false
		}
	}
	return true
}

// crashNote says what causalPrefix dropped from incarnation inc, "" if
// nothing.
func crashNote(inc, dropped int) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf("; %s of incarnation %d dropped, whose causes no log holds (a node crashed)", plural(dropped, "event"), inc)
}
