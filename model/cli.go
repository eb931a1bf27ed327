package model

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// Exit codes of RunCheck.
const (
	ExitOK        = 0 // every property holds
	ExitViolation = 1 // a property is violated (or a deadlock reached)
	ExitBadInput  = 2 // bad flags or model files, or an internal error
)

// RunCheck is the `check` command: it loads a TLC model and checks it
// exhaustively (or by random simulation), printing TLC's summary lines.
//
//	check --model tla/MCRing.cfg [--workers N] [--progress]
//	check --model tla/MCRing.cfg --simulate [--seed S] [--traces N] [--depth D]
//
// args are the command's arguments (a leading "check" is skipped). The
// report goes to stdout; errors and progress lines to stderr. Progress is
// printed every few seconds when stderr is a terminal or with --progress.
// It returns ExitOK, ExitViolation or ExitBadInput.
func RunCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	modelPath := fs.String("model", "", "the TLC model's .cfg file (its module, same name .tla, beside it)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "parallel workers for the exhaustive search")
	simulate := fs.Bool("simulate", false, "check random behaviours instead of every state (like TLC -simulate)")
	seed := fs.Uint64("seed", 0, "simulation seed (0: from the clock; the seed used is printed)")
	traces := fs.Int("traces", 1000, "simulation: number of behaviours")
	depth := fs.Int("depth", 100, "simulation: maximum states per behaviour")
	progress := fs.Bool("progress", false, "print progress every few seconds to stderr even when it is not a terminal")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: check --model FILE.cfg [--workers N] [--progress] [--simulate [--seed S] [--traces N] [--depth D]]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitBadInput
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "check: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return ExitBadInput
	}
	if *modelPath == "" {
		fmt.Fprintf(stderr, "check: --model is required\n")
		fs.Usage()
		return ExitBadInput
	}
	if *workers < 1 || *traces < 1 || *depth < 1 {
		fmt.Fprintf(stderr, "check: --workers, --traces and --depth must be at least 1\n")
		return ExitBadInput
	}
	cfg, err := LoadModel(*modelPath)
	if err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return ExitBadInput
	}
	checks := append(slices.Clone(cfg.Invariants), cfg.Properties...)
	fmt.Fprintf(stdout, "Model %s (%s): %s, %d processes, %d channels, %d snapshots.\n",
		cfg.Name, *modelPath, cfg.Variant, cfg.NumProcs(), cfg.NumChans(), cfg.NumSnaps())
	if len(checks) > 0 {
		fmt.Fprintf(stdout, "Checking %s.\n", spec.JoinProperties(checks))
	}

	if *simulate {
		s := *seed
		if s == 0 {
			s = uint64(time.Now().UnixNano())
		}
		fmt.Fprintf(stdout, "Running random simulation with seed %d (%d behaviours of at most %d states).\n", s, *traces, *depth)
		r, err := Simulate(cfg, SimOptions{Seed: s, Traces: *traces, Depth: *depth})
		if err != nil {
			fmt.Fprintf(stderr, "check: %v\n", err)
			return ExitBadInput
		}
		code := ExitOK
		if r.Violation != nil {
			reportViolation(stdout, cfg, r.Violation)
			code = ExitViolation
		} else {
			fmt.Fprintf(stdout, "No error has been found in %d behaviours.\n", r.Traces)
		}
		fmt.Fprintf(stdout, "%d states checked in %d behaviours (longest %d states), %d states generated.\n", r.States, r.Traces, r.MaxLen, r.Generated)
		fmt.Fprintf(stdout, "Finished in %s (%.0f states/s).\n", r.Duration.Round(time.Millisecond), perSecond(r.States, r.Duration))
		return code
	}

	fmt.Fprintf(stdout, "Running breadth-first search with %d workers.\n", *workers)
	opt := Options{Workers: *workers}
	if *progress || isTerminal(stderr) {
		opt.Progress = stderr
	}
	r, err := Explore(cfg, opt)
	if err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return ExitBadInput
	}
	code := ExitOK
	if r.Violation != nil {
		reportViolation(stdout, cfg, r.Violation)
		code = ExitViolation
	} else {
		fmt.Fprintf(stdout, "Model checking completed. No error has been found.\n")
	}
	fmt.Fprintf(stdout, "%d states generated, %d distinct states found, %d states left on queue.\n", r.Generated, r.Distinct, r.Left)
	fmt.Fprintf(stdout, "The depth of the complete state graph search is %d.\n", r.Depth)
	fmt.Fprintf(stdout, "Finished in %s (%.0f distinct states/s).\n", r.Duration.Round(time.Millisecond), perSecond(r.Distinct, r.Duration))
	return code
}

func reportViolation(w io.Writer, cfg *Config, v *Violation) {
	switch v.Kind {
	case "invariant":
		fmt.Fprintf(w, "Error: Invariant %s is violated.\n", v.Property)
		fmt.Fprintf(w, "Error: The behavior up to this point is:\n")
	case "property":
		fmt.Fprintf(w, "Error: Temporal property %s was violated.\n", v.Property)
		if v.Detail != "" {
			fmt.Fprintf(w, "Error: %s.\n", v.Detail)
		}
		fmt.Fprintf(w, "Error: The following behavior constitutes a counter-example:\n")
	case "deadlock":
		fmt.Fprintf(w, "Error: Deadlock reached.\n")
		fmt.Fprintf(w, "Error: The behavior up to this point is:\n")
	}
	WriteTrace(w, cfg, v)
}

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
