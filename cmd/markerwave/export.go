package main

import "github.com/markerwave/markerwave/conformance/export"

// markerwave export: diagram, ShiViz log and TLC trace validation of a
// trace file; see conformance/export.Usage.
func init() {
	register("export", "export a trace: --diagram, --shiviz, --tlc DIR [--run-tlc JAR]", export.Command)
}
