package main

import (
	"io"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
)

// exportSink draws sink trace j.trace (a two-phase-commit sink's steps,
// markerwave-sink-trace/1): the one export a sink trace has, --diagram.
// The trace is audited first (conformance.AuditSink), and the step
// where the audit diverges, if it does, is marked.
func (j *exportJob) exportSink(f *cmdFlags) int {
	if j.shiviz != "" || j.tlcDir != "" || f.isSet("snap") || j.window != "" {
		return f.usageError("%s is a sink trace: it has a --diagram only (no --shiviz, --tlc, --snap or --window)", j.trace)
	}
	tr, err := conformance.ReadSinkTraceFile(j.trace)
	if err != nil {
		return exportFailed(f, err)
	}
	r := conformance.AuditSink(tr, conformance.Options{})
	if r.Err != nil {
		return exportFailed(f, r.Err)
	}
	mark := sinkMark(r)
	_, code := j.drawDiagram(f, func(w io.Writer) (export.Extent, []string, error) {
		return export.SinkDiagram(tr, mark, w, j.format)
	})
	return code
}

// sinkMark is where audit r diverges, for the diagram: nil if the trace
// conforms; the property named is the one the run violates (r.Property).
func sinkMark(r conformance.Report) *export.SinkMark {
	if r.OK() {
		return nil
	}
	m := &export.SinkMark{Property: string(r.Property())}
	if d := r.Divergence; d != nil {
		m.Step, m.Detail = d.Step, d.Detail
	} else if len(r.Violations) > 0 {
		m.Detail = r.Violations[0].Detail
	}
	return m
}
