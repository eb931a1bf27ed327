package main

import (
	"io"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
)

// exportBarrier draws barrier trace j.trace (a dataflow run): the one
// export a barrier trace has, --diagram.
func (j *exportJob) exportBarrier(f *cmdFlags) int {
	if j.shiviz != "" || j.tlcDir != "" || f.isSet("snap") || j.window != "" {
		return f.usageError("%s is a barrier trace: it has a --diagram only (no --shiviz, --tlc, --snap or --window)", j.trace)
	}
	tr, err := conformance.ReadBarrierTraceFile(j.trace)
	if err != nil {
		return exportFailed(f, err)
	}
	_, code := j.drawDiagram(f, func(w io.Writer) (export.Extent, []string, error) {
		return export.BarrierDiagram(tr, w, j.format)
	})
	return code
}
