package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/markerwave/markerwave/conformance"
)

func init() {
	register("audit", "replay a trace against the model and check every snapshot", runAudit)
}

// runAudit replays a trace file, with the recorded snapshots and the
// drained claim it carries. Exit 0: it conforms; 1: it diverges or
// violates a property; 2: bad usage, or the trace is unreadable or
// malformed.
func runAudit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	drained := fs.Bool("drained", false, "claim the run ended drained even if TRACE's header does not: every channel must end empty and every initiated snapshot complete")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: markerwave audit [flags] TRACE.jsonl")
		fmt.Fprintln(stderr, "\nReplays TRACE step by step against the model of tla/ChandyLamport.tla and checks")
		fmt.Fprintln(stderr, "every completed snapshot against the recorded state TRACE reports (derived from the")
		fmt.Fprintln(stderr, "events if it reports none). Exit 0: conforms; 1: diverges; 2: unreadable or malformed.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	opts := conformance.Options{Drained: *drained}
	r, err := conformance.AuditFile(fs.Arg(0), opts)
	if err != nil {
		fmt.Fprintf(stderr, "markerwave audit: %v\n", err)
		return 2
	}
	if r.Err != nil {
		fmt.Fprintf(stderr, "markerwave audit: %s: %v\n", fs.Arg(0), r.Err)
		return 2
	}
	fmt.Fprint(stdout, r)
	if r.OK() {
		return 0
	}
	return 1
}
