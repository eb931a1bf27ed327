package conformance

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Auditing an outside implementation from what it observes: its nodes'
// outsider logs (spec.OutsiderLog) are gathered into one run
// (NewOutsiderRun), a trace of the spec is derived from them (Derive),
// and that trace is replayed against the model as any other (Replay).
// The report says which checks ran on the implementation's own values
// and which on derived ones, explains in the implementation's terms (its
// nodes' steps, its snapshot ids), and names a marker the implementation
// never sent. Where the log leaves the spec's step open (a node that
// logs no marker receipts), the audit searches the candidates
// (outsider_search.go).

// IsOutsiderTraceFile reports whether the file at path is an outsider
// trace: its first non-blank line is an outsider header.
func IsOutsiderTraceFile(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			return spec.IsOutsiderTrace(l)
		}
	}
	return false
}

// ReadOutsiderFiles reads the outsider logs at paths and gathers them
// into one run; errors name the file, the line and the field.
func ReadOutsiderFiles(paths []string) (*OutsiderRun, error) {
	logs := make([]spec.OutsiderLog, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		l, err := spec.ReadOutsider(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		logs = append(logs, l)
	}
	return NewOutsiderRun(logs, paths)
}

// OutsiderReport is the audit of an outsider run: the replay's verdict
// on the derived trace, with what the derivation found.
type OutsiderReport struct {
	Report
	Derived Derived
	// Search says how the candidates were searched, "" if the log left no
	// step open.
	Search string
}

// Property names the property violated: the marker the implementation
// never sent first (SnapshotsComplete), else the replay's.
func (r OutsiderReport) Property() spec.Property {
	if f := r.Derived.Finding; f != nil && r.Err == nil {
		return f.Property
	}
	return r.Report.Property()
}

// OK reports whether the run conforms.
func (r OutsiderReport) OK() bool { return r.Report.OK() && r.Derived.Finding == nil }

// String renders the verdict in the implementation's terms: its
// snapshot ids, what was derived, the notes.
func (r OutsiderReport) String() string {
	var b strings.Builder
	body := r.Report.String()
	if f := r.Derived.Finding; f != nil && r.Err == nil {
		head := "the implementation never sent a marker the spec sends"
		if f.Property == spec.CheckEnabled {
			head = "the implementation sent a marker the spec does not send"
		}
		fmt.Fprintf(&b, "%s: %s (%s)\n", head, f.Detail, f.Action)
		body = strings.Replace(body, "property: "+string(r.Report.Property()), "property: "+string(r.Property()), 1)
	}
	b.WriteString(body)
	r.writeDerivation(&b)
	return r.Derived.rename(b.String())
}

// writeDerivation writes what the derivation found: the notes, the
// search, which values were the implementation's and which derived.
func (r OutsiderReport) writeDerivation(b *strings.Builder) {
	for _, n := range r.Derived.Notes {
		fmt.Fprintf(b, "  note: %s\n", n)
	}
	if r.Search != "" {
		fmt.Fprintf(b, "  search: %s\n", r.Search)
	}
	own, derived := r.Derived.provSplit()
	if own != "" {
		fmt.Fprintf(b, "  checked on the implementation's own values: %s\n", own)
	}
	if derived != "" {
		fmt.Fprintf(b, "  derived from the log (the checks on them hold by construction): %s\n", derived)
	}
}

// rename writes the spec's ids of the implementation's snapshots that
// are not positive integers (0, strings) back as the implementation
// wrote them.
func (d Derived) rename(s string) string {
	if d.names == nil {
		return s
	}
	var pairs []string
	for id := d.names.next - 1; id >= freshSnapBase; id-- {
		pairs = append(pairs, strconv.FormatUint(uint64(id), 10), d.names.name(id))
	}
	if len(pairs) == 0 {
		return s
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// Rename is rename for callers that render parts of the report
// themselves (markerwave audit --json).
func (d Derived) Rename(s string) string { return d.rename(s) }
