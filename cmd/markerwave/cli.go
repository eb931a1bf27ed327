package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// The exit codes every subcommand uses.
const (
	exitOK    = 0 // success: the run conforms, the model holds, the node stopped cleanly
	exitFail  = 1 // a property is violated, a trace diverges, a run failed
	exitUsage = 2 // bad flags or arguments, or a bad input file
)

// cmdFlags is a subcommand's flag set with the conventions every
// subcommand follows: -h/--help prints the usage to stdout and exits 0; a
// usage error prints "markerwave NAME: what" and a hint to stderr and
// exits 2; results go to stdout, diagnostics to stderr, each prefixed
// "markerwave NAME: ". The flag help comes from the flag definitions.
type cmdFlags struct {
	*flag.FlagSet
	name     string // the subcommand
	synopsis string // the arguments after the name, e.g. "[flags] TRACE..."
	about    string // what the command does, a paragraph
	stdout   io.Writer
	stderr   io.Writer
	args     []string // the positional arguments, after parse
}

// newFlags starts the flag set of subcommand name.
func newFlags(name, synopsis, about string, stdout, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors itself, with the prefix
	fs.Usage = func() {}
	return &cmdFlags{FlagSet: fs, name: name, synopsis: synopsis, about: about, stdout: stdout, stderr: stderr}
}

// parse parses args; flags may come before, between or after the
// positional arguments, and "--" ends the flags. When done is true the
// command must return code at once: 0 after -h/--help, exitUsage after a
// flag error (reported).
func (f *cmdFlags) parse(args []string) (code int, done bool) {
	f.args = nil
	for {
		err := f.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			f.printUsage(f.stdout)
			return exitOK, true
		case err != nil:
			return f.usageError("%v", err), true
		}
		rest := f.FlagSet.Args()
		if len(rest) == 0 {
			return exitOK, false
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			f.args = append(f.args, rest...)
			return exitOK, false
		}
		f.args = append(f.args, rest[0])
		args = rest[1:]
	}
}

// Args are the positional arguments parse found.
func (f *cmdFlags) Args() []string { return f.args }

// NArg is the number of positional arguments.
func (f *cmdFlags) NArg() int { return len(f.args) }

// Arg is the i-th positional argument, "" if there is none.
func (f *cmdFlags) Arg(i int) string {
	if i < 0 || i >= len(f.args) {
		return ""
	}
	return f.args[i]
}

// isSet reports whether flag name was given on the command line.
func (f *cmdFlags) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// printUsage writes the synopsis, the description and the flags to w.
func (f *cmdFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: markerwave %s %s\n", f.name, f.synopsis)
	if f.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(f.about))
	}
	n := 0
	f.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		f.SetOutput(w)
		f.PrintDefaults()
		f.SetOutput(io.Discard)
	}
}

// usageError reports a usage error and returns exitUsage.
func (f *cmdFlags) usageError(format string, args ...any) int {
	fmt.Fprintf(f.stderr, "markerwave %s: %s\n", f.name, fmt.Sprintf(format, args...))
	fmt.Fprintf(f.stderr, "run 'markerwave %s --help' for usage\n", f.name)
	return exitUsage
}

// errorf reports a diagnostic on stderr with the command's prefix.
func (f *cmdFlags) errorf(format string, args ...any) {
	fmt.Fprintf(f.stderr, "markerwave %s: %s\n", f.name, fmt.Sprintf(format, args...))
}

// fail reports err with the command's prefix and returns code.
func (f *cmdFlags) fail(code int, err error) int {
	f.errorf("%v", err)
	return code
}

// rule is one check of a command's flags: when bad, msg is the usage
// error.
type rule struct {
	bad bool
	msg string
}

// broken is the message of the first bad rule, if any: a command's flag
// checks as one list, in the order they are reported.
func broken(rules ...rule) (string, bool) {
	for _, r := range rules {
		if r.bad {
			return r.msg, true
		}
	}
	return "", false
}

// outside reports whether v is not in lo..hi.
func outside[T cmp.Ordered](v, lo, hi T) bool { return v < lo || v > hi }

// unexpected is the rule that a command takes no positional arguments.
func (f *cmdFlags) unexpected() rule {
	return rule{f.NArg() > 0, fmt.Sprintf("unexpected argument %q", f.Arg(0))}
}

// plural renders n and the noun, with an s (es after s, x, ch, sh) unless
// n is 1: "1 snapshot", "3 snapshots", "2 processes".
func plural(n int, noun string) string {
	switch {
	case n == 1:
		return fmt.Sprintf("%d %s", n, noun)
	case slices.ContainsFunc([]string{"s", "x", "ch", "sh"}, func(end string) bool { return strings.HasSuffix(noun, end) }):
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// isTerminal reports whether w is a terminal (progress is then printed
// without being asked for).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressEvery is how often long-running commands report progress (a
// variable for the tests).
var progressEvery = 2 * time.Second

// traceFormat is the format of the trace in file path, if its first
// non-blank line is a trace header ("markerwave-trace/3",
// "markerwave-barrier-trace/1"): commands that take a model or a config
// name a trace given in its place for what it is.
func traceFormat(path string) (string, bool) {
	b, err := readHead(path, 1<<16)
	if err != nil {
		return "", false
	}
	for l := range bytes.SplitSeq(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) == 0 {
			continue
		}
		var h struct {
			Format string `json:"format"`
		}
		dec := json.NewDecoder(bytes.NewReader(l))
		if dec.Decode(&h) != nil || !strings.HasPrefix(h.Format, "markerwave-") || !strings.Contains(h.Format, "trace/") {
			return "", false
		}
		return h.Format, true
	}
	return "", false
}

// readHead reads at most n bytes from the start of file path.
func readHead(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// isBlankFile reports whether file path exists and holds nothing but
// white space.
func isBlankFile(path string) bool {
	b, err := readHead(path, 1<<16)
	return err == nil && len(bytes.TrimSpace(b)) == 0 && len(b) < 1<<16
}
