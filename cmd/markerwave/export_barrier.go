package main

import (
	"fmt"
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
	var ext export.Extent
	var notes []string
	if err := writeFile(j.diagram, func(w io.Writer) (err error) {
		ext, notes, err = export.BarrierDiagram(tr, w, j.format)
		return err
	}); err != nil {
		return exportFailed(f, err)
	}
	fmt.Fprintf(f.stdout, "wrote %s: %s\n", j.diagram, ext)
	for _, l := range notes {
		fmt.Fprintf(f.stdout, "  %s\n", l)
	}
	return exitOK
}
