package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/markerwave/markerwave/conformance"
)

func init() {
	register("audit", "replay a trace against the model and check every snapshot", runAudit)
}

// runAudit replays a trace file. Exit 0: it conforms; 1: it diverges or
// violates a property; 2: bad usage, or the trace (or its sidecar) is
// unreadable or malformed.
func runAudit(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	drained := fs.Bool("drained", false, "the run ended drained: every initiated snapshot must be complete (also claimed by \""+conformance.DrainedTag+"\" in the header's note)")
	snaps := fs.String("snapshots", "", "recorded snapshots `file` (default: TRACE's .snapshots.json sidecar if present, else derived from the events)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: markerwave audit [flags] TRACE.jsonl")
		fmt.Fprintln(stderr, "\nReplays TRACE step by step against the model of tla/ChandyLamport.tla and checks")
		fmt.Fprintln(stderr, "every completed snapshot. Exit 0: conforms; 1: diverges; 2: unreadable or malformed.")
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
	if *snaps != "" {
		f, err := os.Open(*snaps)
		if err != nil {
			fmt.Fprintf(stderr, "markerwave audit: %v\n", err)
			return 2
		}
		opts.Recorded, err = conformance.ReadSnapshots(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "markerwave audit: %s: %v\n", *snaps, err)
			return 2
		}
	}
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
