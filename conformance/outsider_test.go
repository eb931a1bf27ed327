package conformance

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
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
