package export

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// Usage is the export command's synopsis.
const Usage = `usage: markerwave export [flags] TRACE

Exports a trace (JSON lines, as written by the runtime) as:
  --diagram FILE     a space-time diagram with every snapshot's cut;
                     FILE ending in .svg (SVG) or .html (XHTML page);
                     prints each snapshot's total (the reported one if
                     the trace has recorded lines) and its orphan and
                     missing messages
  --shiviz FILE      a ShiViz log (parser regex on its first line)
  --tlc DIR          a TLC trace-validation model: DIR/MCTrace.tla, .cfg
                     and the spec modules tla/ChandyLamport.tla and
                     tla/TraceChandyLamport.tla
  --run-tlc JAR      with --tlc: also run TLC (tla2tools.jar at JAR; default
                     $TLA2TOOLS) and print its verdict
  --spec-dir DIR     where the spec modules are (default: the repository's
                     tla/, found from the working directory, or
                     $MARKERWAVE_TLA_DIR)
  --java CMD         the java command (default java)
  --tlc-timeout D    bound on the TLC run (default 5m)

Exit status: 0 done (and, with --run-tlc, the trace accepted); 1 TLC
rejected the trace: it is not a behaviour of tla/ChandyLamport.tla; 2 bad
usage, an unreadable or malformed trace, or TLC could not run.`

// Command runs `markerwave export ARGS`.
func Command(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	diagram := fs.String("diagram", "", "")
	shiviz := fs.String("shiviz", "", "")
	tlcDir := fs.String("tlc", "", "")
	runTLC := fs.String("run-tlc", "", "")
	specDir := fs.String("spec-dir", "", "")
	java := fs.String("java", "java", "")
	timeout := fs.Duration("tlc-timeout", 5*time.Minute, "")
	fail := func(err error) int {
		fmt.Fprintf(stderr, "markerwave export: %s\n", strings.TrimPrefix(err.Error(), "export: "))
		return 2
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "markerwave export: %s\n\n%s\n", msg, Usage)
		return 2
	}
	// Flags may come before or after TRACE.
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				fmt.Fprintln(stdout, Usage)
				return 0
			}
			return usage(err.Error())
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 1 {
		return usage(fmt.Sprintf("want exactly one TRACE, got %d", len(pos)))
	}
	if *diagram == "" && *shiviz == "" && *tlcDir == "" {
		return usage("nothing to do: give --diagram, --shiviz or --tlc")
	}
	jarSet := false
	fs.Visit(func(f *flag.Flag) { jarSet = jarSet || f.Name == "run-tlc" })
	if jarSet && *tlcDir == "" {
		return usage("--run-tlc needs --tlc DIR")
	}
	var format Format
	if *diagram != "" {
		var err error
		if format, err = FormatOf(*diagram); err != nil {
			return usage(strings.TrimPrefix(err.Error(), "export: "))
		}
	}

	path := pos[0]
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "markerwave export: %v\n", err)
		return 2
	}
	tr, err := spec.ReadTrace(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "markerwave export: %s: %v\n", path, err)
		return 2
	}

	write := func(out string, gen func(io.Writer) error) bool {
		f, err := os.Create(out)
		if err == nil {
			err = gen(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "markerwave export: %s: %v\n", out, err)
			return false
		}
		fmt.Fprintf(stdout, "wrote %s\n", out)
		return true
	}
	if *diagram != "" {
		if !write(*diagram, func(w io.Writer) error { return Diagram(tr, w, format) }) {
			return 2
		}
		if a, err := Analyze(tr); err == nil {
			for _, c := range a.Cuts {
				line := fmt.Sprintf("  %s; %d orphan, %d missing", c.Summary(), a.Count(c.Snap, Orphan), a.Count(c.Snap, Missing))
				if n := a.Count(c.Snap, Spurious); n > 0 {
					line += fmt.Sprintf(", %d spurious", n)
				}
				fmt.Fprintln(stdout, line)
			}
			if n := len(a.Orphans()); n > 0 {
				fmt.Fprintf(stdout, "  %d orphan message(s), drawn in red\n", n)
			}
			if n := a.countAny(Missing); n > 0 {
				fmt.Fprintf(stdout, "  %d missing message(s), drawn in red dashed\n", n)
			}
			if n := a.countAny(Spurious); n > 0 {
				fmt.Fprintf(stdout, "  %d spurious message(s), drawn in red dotted\n", n)
			}
		}
	}
	if *shiviz != "" {
		if !write(*shiviz, func(w io.Writer) error { return ShiViz(tr, w) }) {
			return 2
		}
		fmt.Fprintf(stdout, "  ShiViz parser regex (first line of the file): %s\n", ShiVizRegex)
	}
	if *tlcDir == "" {
		return 0
	}
	sd := *specDir
	if sd == "" {
		if sd, err = FindSpecDir(); err != nil {
			return fail(err)
		}
	}
	if err := ExportTLCFrom(tr, *tlcDir, sd); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "wrote %s/MCTrace.tla and MCTrace.cfg (%d events), with %s\n", *tlcDir, len(tr.Events), strings.Join(SpecFiles, ", "))
	if !jarSet {
		return 0
	}
	jar := *runTLC
	if jar == "" {
		jar = os.Getenv("TLA2TOOLS")
	}
	if jar == "" {
		return usage("--run-tlc: no tla2tools.jar given and TLA2TOOLS is unset")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	v, err := RunTLC(ctx, *java, jar, *tlcDir)
	if err != nil {
		return fail(err)
	}
	if v.Accepted && v.Events != len(tr.Events) {
		fmt.Fprintf(stderr, "markerwave export: TLC consumed %d events but the trace has %d; is %s/MCTrace.tla stale?\n", v.Events, len(tr.Events), *tlcDir)
		return 2
	}
	if v.Accepted {
		fmt.Fprintf(stdout, "TLC: ACCEPTED: all %d events are a behaviour of ChandyLamport; invariants hold along it\n", v.Events)
		return 0
	}
	fmt.Fprintf(stdout, "TLC: REJECTED: the trace is not a behaviour of ChandyLamport\n")
	for _, e := range v.Errors {
		fmt.Fprintf(stdout, "  %s\n", e)
	}
	if v.Consumed >= 0 && v.Consumed < len(tr.Events) {
		fmt.Fprintf(stdout, "  matched %d of %d events; the first that does not match is event %d: %s\n",
			v.Consumed, len(tr.Events), v.Consumed+1, tr.Events[v.Consumed])
	}
	return 1
}
