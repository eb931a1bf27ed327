package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/spec"
)

// addOutsider holds file of a directory of outsider logs, to audit it
// with the others as one run: as one of its logs if it is an outsider
// log (ok), else as a stray that refuses the run.
func (g *runGatherer) addOutsider(file string, ok bool) {
	d := filepath.Dir(file)
	if g.outsider[d] == nil && g.strays[d] == nil {
		g.outsiderDirs = append(g.outsiderDirs, d)
	}
	if !ok {
		g.strays[d] = append(g.strays[d], file)
		return
	}
	g.outsider[d] = append(g.outsider[d], file)
}

// strayErr refuses a run of outsider logs beside which lie files that
// are no outsider logs, naming each and what its header lacks (the
// outsider reader's error: no format, or another); nil if there is none.
func (r auditRun) strayErr() error {
	if len(r.strays) == 0 {
		return nil
	}
	why := make([]string, len(r.strays))
	for i, f := range r.strays {
		why[i] = fmt.Sprintf("%s: not an outsider log", f)
		if _, err := conformance.ReadOutsiderFiles([]string{f}); err != nil {
			why[i] = err.Error()
		}
	}
	return fmt.Errorf("%s: %s beside its outsider logs (%s) %s no \"format\":%q header, so the run is not audited: %s",
		r.name, strings.Join(r.strays, ", "), strings.Join(r.files, ", "), map[bool]string{true: "has", false: "have"}[len(r.strays) == 1], spec.OutsiderFormat, strings.Join(why, "; "))
}

// auditOutsider audits the outsider logs r.files as one run
// (conformance.AuditOutsider) and prints its verdict; it returns the
// exit status: 2 for logs that cannot be read or gathered into one run.
func (r auditRun) auditOutsider(f *cmdFlags, o auditOpts, several bool) int {
	if len(r.files) == 1 {
		r.name = r.files[0]
	}
	rep := r.readAndAudit(f, o)
	if o.json {
		printOutsiderJSON(f.stdout, r, rep)
	}
	if rep.Err != nil {
		return f.fail(exitUsage, namedErr(r.name, rep.Err))
	}
	if !o.json {
		printOutsiderVerdict(f.stdout, r, rep, several)
	}
	if rep.OK() {
		return exitOK
	}
	return exitFail
}

// readAndAudit reads and merges the outsider logs r.files and audits
// them as one run; a failure to read or merge them is the report's Err.
func (r auditRun) readAndAudit(f *cmdFlags, o auditOpts) conformance.OutsiderReport {
	err := r.strayErr()
	var run *conformance.OutsiderRun
	if err == nil {
		run, err = conformance.ReadOutsiderFiles(r.files)
	}
	if err != nil {
		var rep conformance.OutsiderReport
		rep.Err = err
		return rep
	}
	opts := conformance.Options{Drained: o.drained}
	if o.progress {
		opts.Progress = newProgress(f, r.name).report
	}
	rep, err := conformance.AuditOutsider(run, opts)
	if err != nil {
		rep.Err = err
	}
	return rep
}

// printOutsiderVerdict prints an outsider run's verdict for people,
// prefixed like printVerdict's.
func printOutsiderVerdict(w io.Writer, r auditRun, rep conformance.OutsiderReport, several bool) {
	prefix := ""
	switch {
	case len(r.files) > 1:
		prefix = fmt.Sprintf("%s (%s merged): ", r.name, plural(len(r.files), "outsider log"))
	case several:
		prefix = r.name + ": "
	}
	fmt.Fprint(w, prefix+rep.String())
}

// outsiderJSON is auditJSON with what the derivation found.
type outsiderJSON struct {
	auditJSON
	Format     string                 `json:"format"`
	Provenance []conformance.ProvLine `json:"provenance"`
	Notes      []string               `json:"notes"`
	Search     string                 `json:"search,omitempty"`
}

// printOutsiderJSON prints an outsider run's verdict as one line of
// JSON, in the implementation's snapshot ids.
func printOutsiderJSON(w io.Writer, r auditRun, rep conformance.OutsiderReport) {
	var b jsonBuffer
	printJSON(&b, auditRun{name: r.name, files: r.files}, rep.Report)
	var v outsiderJSON
	_ = json.Unmarshal(b.b, &v.auditJSON) // printJSON wrote it
	v.OK, v.Property, v.Format = rep.OK(), rep.Property(), "markerwave-outsider/1"
	if f := rep.Derived.Finding; f != nil && v.Divergence == nil {
		v.Divergence = &divergenceJSON{Action: f.Action, Line: f.Line, File: f.File, Check: f.Property, Detail: f.Detail}
	}
	v.Provenance, v.Notes, v.Search = rep.Derived.Prov, rep.Derived.Notes, rep.Search
	if v.Notes == nil {
		v.Notes = []string{}
	}
	renameOutsider(&v, rep.Derived)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "P1->P2", not "P1-\u003eP2"
	_ = enc.Encode(v)
}

// renameOutsider writes v's snapshot ids as the implementation wrote
// them (conformance.Derived.Rename), in its texts and its snapshot
// fields.
func renameOutsider(v *outsiderJSON, d conformance.Derived) {
	rn := d.Rename
	if x := v.Divergence; x != nil {
		x.Action, x.Detail, x.Expected, x.Reported, x.Diff = rn(x.Action), rn(x.Detail), rn(x.Expected), rn(x.Reported), rn(x.Diff)
	}
	id := func(s any) any {
		if f, ok := s.(float64); ok {
			return json.RawMessage(d.SnapName(spec.SnapID(f)))
		}
		return s
	}
	for i := range v.Violations {
		v.Violations[i].Detail, v.Violations[i].Snapshot = rn(v.Violations[i].Detail), id(v.Violations[i].Snapshot)
	}
	for i := range v.Incomplete {
		v.Incomplete[i].Lacks, v.Incomplete[i].Snapshot = rn(v.Incomplete[i].Lacks), id(v.Incomplete[i].Snapshot)
	}
	for i := range v.Aborted {
		v.Aborted[i].Why, v.Aborted[i].Snapshot = rn(v.Aborted[i].Why), id(v.Aborted[i].Snapshot)
	}
	for i := range v.Notes {
		v.Notes[i] = rn(v.Notes[i])
	}
	v.Search = rn(v.Search)
}

// jsonBuffer collects what printJSON writes.
type jsonBuffer struct{ b []byte }

func (j *jsonBuffer) Write(p []byte) (int, error) { j.b = append(j.b, p...); return len(p), nil }

// namedErr prefixes err with name unless it already starts with it (a
// reader's error names the file it read: a lone file's path, or a
// directory's file under name).
func namedErr(name string, err error) error {
	if strings.HasPrefix(err.Error(), name) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
