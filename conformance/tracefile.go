package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// A trace file X.jsonl (spec.WriteTrace) may come with a sidecar
// X.snapshots.json: the recorded global states the implementation
// reported, which a trace's events do not carry. Without it they are
// derived from the events.

// SnapshotsFile is the sidecar path of trace file path.
func SnapshotsFile(path string) string {
	return strings.TrimSuffix(path, ".jsonl") + ".snapshots.json"
}

// snapshotsJSON is the sidecar's form.
type snapshotsJSON struct {
	Snapshots []snapshotJSON `json:"snapshots"`
}

type snapshotJSON struct {
	Snap  spec.SnapID                     `json:"snap"`
	Procs map[spec.ProcID]spec.LocalState `json:"procs"`
	Chans []chanJSON                      `json:"chans"`
}

type chanJSON struct {
	From spec.ProcID   `json:"from"`
	To   spec.ProcID   `json:"to"`
	Msgs []spec.AppMsg `json:"msgs"`
}

// WriteSnapshots writes recorded global states as a sidecar, by id, each
// channel (empty ones too) in (From, To) order.
func WriteSnapshots(w io.Writer, rec map[spec.SnapID]spec.GlobalState) error {
	var out snapshotsJSON
	out.Snapshots = []snapshotJSON{}
	for s, g := range rec {
		sj := snapshotJSON{Snap: s, Procs: g.Procs, Chans: []chanJSON{}}
		for c, ms := range g.Chans {
			if ms == nil {
				ms = []spec.AppMsg{}
			}
			sj.Chans = append(sj.Chans, chanJSON{From: c.From, To: c.To, Msgs: ms})
		}
		sort.Slice(sj.Chans, func(i, j int) bool {
			return spec.ChannelLess(spec.Channel{From: sj.Chans[i].From, To: sj.Chans[i].To}, spec.Channel{From: sj.Chans[j].From, To: sj.Chans[j].To})
		})
		out.Snapshots = append(out.Snapshots, sj)
	}
	sort.Slice(out.Snapshots, func(i, j int) bool { return out.Snapshots[i].Snap < out.Snapshots[j].Snap })
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadSnapshots reads a sidecar strictly.
func ReadSnapshots(r io.Reader) (map[spec.SnapID]spec.GlobalState, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var in snapshotsJSON
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	out := map[spec.SnapID]spec.GlobalState{}
	for _, sj := range in.Snapshots {
		if sj.Snap == 0 {
			return nil, fmt.Errorf("snapshots: snapshot id 0")
		}
		if _, dup := out[sj.Snap]; dup {
			return nil, fmt.Errorf("snapshots: snapshot %d listed twice", sj.Snap)
		}
		g := spec.GlobalState{Procs: sj.Procs, Chans: map[spec.Channel][]spec.AppMsg{}}
		if g.Procs == nil {
			g.Procs = map[spec.ProcID]spec.LocalState{}
		}
		for _, c := range sj.Chans {
			if len(c.Msgs) > 0 {
				g.Chans[spec.Channel{From: c.From, To: c.To}] = c.Msgs
			}
		}
		out[sj.Snap] = g
	}
	return out, nil
}

// ReadTraceFile reads trace file path with spec.ReadTrace, the line of
// each event (for reports), and its sidecar if there is one (nil if not).
func ReadTraceFile(path string) (spec.Trace, []int, map[spec.SnapID]spec.GlobalState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return spec.Trace{}, nil, nil, err
	}
	tr, err := spec.ReadTrace(bytes.NewReader(b))
	if err != nil {
		return tr, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	lines := eventLines(b)
	f, err := os.Open(SnapshotsFile(path))
	if errors.Is(err, fs.ErrNotExist) {
		return tr, lines, nil, nil
	}
	if err != nil {
		return tr, lines, nil, err
	}
	defer f.Close()
	rec, err := ReadSnapshots(f)
	if err != nil {
		return tr, lines, nil, fmt.Errorf("%s: %w", SnapshotsFile(path), err)
	}
	return tr, lines, rec, nil
}

// eventLines numbers the non-blank lines after the header, as
// spec.ReadTrace reads them.
func eventLines(b []byte) []int {
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), spec.MaxTraceLine)
	n, header := 0, false
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if !header {
			header = true
			continue
		}
		lines = append(lines, n)
	}
	return lines
}

// WriteTraceFile writes tr to path and, if rec is non-nil, its sidecar.
func WriteTraceFile(path string, tr spec.Trace, rec map[spec.SnapID]spec.GlobalState) error {
	var b bytes.Buffer
	if err := spec.WriteTrace(&b, tr); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return err
	}
	if rec == nil {
		if err := os.Remove(SnapshotsFile(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b.Reset()
	if err := WriteSnapshots(&b, rec); err != nil {
		return err
	}
	return os.WriteFile(SnapshotsFile(path), b.Bytes(), 0o644)
}

// AuditFile replays trace file path (with its sidecar, if any).
func AuditFile(path string, opts Options) (Report, error) {
	tr, lines, rec, err := ReadTraceFile(path)
	if err != nil {
		return Report{}, err
	}
	opts.Lines = lines
	if opts.Recorded == nil {
		opts.Recorded = rec
	}
	return Replay(tr, opts), nil
}
