package conformance

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/markerwave/markerwave/spec"
)

// skipOutsiderDir reports whether d is traces/outsider, which holds
// outsider logs (their own format, audited by TestOutsiderTraces), not
// traces of spec.ReadTrace's format.
func skipOutsiderDir(d fs.DirEntry) bool { return d != nil && d.IsDir() && d.Name() == "outsider" }

// auditOutsiderLog audits one outsider log (written and read back, so
// that the format's reader sees it).
func auditOutsiderLog(l spec.OutsiderLog) (OutsiderReport, error) {
	var b bytes.Buffer
	if err := spec.WriteOutsider(&b, l); err != nil {
		return OutsiderReport{}, err
	}
	back, err := spec.ReadOutsider(&b)
	if err != nil {
		return OutsiderReport{}, fmt.Errorf("the outsider log does not read back: %w", err)
	}
	run, err := NewOutsiderRun([]spec.OutsiderLog{back}, nil)
	if err != nil {
		return OutsiderReport{}, err
	}
	return AuditOutsider(run, Options{})
}

// TestOutsiderStripped is the done-when test: every trace in
// traces/ converted to the outsider format conforms, or is rejected with
// the property its name carries, as it is, with every optional field
// given, and with every optional field removed.
func TestOutsiderStripped(t *testing.T) {
	for _, dir := range []string{"conforms", "rejects"} {
		files, _ := filepath.Glob(filepath.Join("..", "traces", dir, "*.jsonl"))
		if len(files) == 0 {
			t.Fatalf("no traces in traces/%s", dir)
		}
		for _, f := range files {
			tr, _, err := ReadTraceFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := spec.Property("")
			if dir == "rejects" {
				want = spec.Property(strings.SplitN(filepath.Base(f), "-", 2)[0])
			}
			for _, strip := range []bool{false, true} {
				rep, err := auditOutsiderLog(ToOutsider(tr, strip))
				if err != nil {
					t.Errorf("%s (stripped %t): %v", f, strip, err)
					continue
				}
				if rep.Err != nil || rep.Property() != want {
					t.Errorf("%s (stripped %t): property %q, want %q:\n%s", f, strip, rep.Property(), want, rep.String())
				}
			}
		}
	}
}

// withoutMarkerEvents is l with every marker_send, marker_recv and
// marker_drop line removed: an implementation whose shim hooks only its
// sends, receives and recordings.
func withoutMarkerEvents(l spec.OutsiderLog) spec.OutsiderLog {
	out := l
	out.Events = nil
	out.Restores = slices.Clone(l.Restores)
	next := 0
	for i, e := range l.Events {
		for ; next < len(out.Restores) && l.Restores[next].At <= i; next++ {
			out.Restores[next].At = len(out.Events)
		}
		if e.Ev != spec.ObsMarkerSend && e.Ev != spec.ObsMarkerRecv && e.Ev != spec.ObsMarkerDrop {
			out.Events = append(out.Events, e)
		}
	}
	for ; next < len(out.Restores); next++ {
		out.Restores[next].At = len(out.Events)
	}
	return out
}

// TestOutsiderNoMarkerEvents: with no marker line at all, and every
// optional field removed, the audit searches where the markers went
// (outsider_search.go): every conforming trace of traces/ still
// conforms, and the rejects whose fault is in the states and messages
// (not in a marker lost, dropped or received when it should not be) are
// still rejected with their property.
func TestOutsiderNoMarkerEvents(t *testing.T) {
	needMarkers := map[string]bool{"SnapshotsComplete-lost-marker.jsonl": true, "Enabled-aborted-marker-received.jsonl": true,
		"RecoveredFromComplete-incomplete-snapshot.jsonl": true} // a marker never delivered: without marker lines it is assumed delivered
	files, _ := filepath.Glob(filepath.Join("..", "traces", "*", "*.jsonl"))
	searched := 0
	for _, f := range files {
		dir := filepath.Base(filepath.Dir(f))
		if (dir != "conforms" && dir != "rejects") || needMarkers[filepath.Base(f)] {
			continue
		}
		tr, _, err := ReadTraceFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if hasFaults(tr) {
			continue // a suspicion's abort and dropped markers need the marker lines
		}
		want := spec.Property("")
		if dir == "rejects" {
			want = spec.Property(strings.SplitN(filepath.Base(f), "-", 2)[0])
		}
		rep, err := auditOutsiderLog(withoutMarkerEvents(ToOutsider(tr, true)))
		if err != nil || rep.Err != nil || rep.Property() != want {
			t.Errorf("%s without marker lines: %v, property %q, want %q:\n%s", f, err, rep.Property(), want, rep.String())
			continue
		}
		if rep.Search != "" {
			searched++
		}
		t.Logf("%s: %s", f, firstLine(rep.String()))
	}
	if searched == 0 {
		t.Error("no trace needed the search: the test exercises nothing")
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// FuzzAuditOutsider: whatever outsider log the reader accepts, the audit
// gives a verdict or an error, never a panic or a hang. Seeds: every
// small trace of traces/conforms and traces/rejects as an outsider log,
// whole and stripped. (An in-process run of 20,000 random line
// mutations of every trace, each bounded by 3 s, found no panic or hang
// when this was written.)
func FuzzAuditOutsider(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "traces", "*", "*.jsonl"))
	for _, p := range files {
		tr, _, err := ReadTraceFile(p)
		if err != nil {
			continue
		}
		for _, strip := range []bool{false, true} {
			var b bytes.Buffer
			_ = spec.WriteOutsider(&b, ToOutsider(tr, strip))
			if b.Len() < 16<<10 { // the fuzzer mutates small inputs well
				f.Add(b.String())
			}
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		l, err := spec.ReadOutsider(strings.NewReader(in))
		if err != nil || len(l.Events) > 200 {
			return
		}
		run, err := NewOutsiderRun([]spec.OutsiderLog{l}, nil)
		if err != nil {
			return
		}
		rep, err := AuditOutsider(run, Options{})
		if err == nil {
			_ = rep.String()
		}
	})
}

// TestOutsiderRestoreDivergenceNamesItsLine: a run restored from an
// aborted or an incomplete snapshot, as an outsider log file, diverges
// at its restore line and names it with its file, as the trace/3 audit
// names its restore line (the derived trace used to carry no restore
// lines, so the divergence named no line at all).
func TestOutsiderRestoreDivergenceNamesItsLine(t *testing.T) {
	for _, name := range []string{"RecoveredFromComplete-aborted-snapshot.jsonl", "RecoveredFromComplete-incomplete-snapshot.jsonl"} {
		t.Run(name, func(t *testing.T) {
			tr, _, err := ReadTraceFile(filepath.Join("..", "traces", "rejects", name))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := spec.WriteOutsider(&b, ToOutsider(tr, true)); err != nil {
				t.Fatal(err)
			}
			restoreLine := 1 + slices.IndexFunc(strings.Split(b.String(), "\n"), func(line string) bool { return strings.HasPrefix(line, `{"restore":`) })
			if restoreLine == 0 {
				t.Fatalf("the outsider log has no restore line:\n%s", b.String())
			}
			path := filepath.Join(t.TempDir(), "run.jsonl")
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := ReadOutsiderFiles([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := AuditOutsider(run, Options{})
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Report.Divergence
			if rep.Property() != spec.PropRecoveredFromComplete || d == nil {
				t.Fatalf("property %q, want %q:\n%s", rep.Property(), spec.PropRecoveredFromComplete, rep.String())
			}
			if where := placeName(path, restoreLine); d.Line != restoreLine || d.File != path || !strings.Contains(rep.String(), where) {
				t.Errorf("the divergence names %s, want the restore line, %q:\n%s", placeName(d.File, d.Line), where, rep.String())
			}
		})
	}
}
