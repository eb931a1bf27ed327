// Command markerwave runs the Chandy-Lamport demo, cluster nodes, the
// model checker, the trace auditor and the trace exporter.
//
//	markerwave demo                          # 5-node bank over loopback TCP
//	markerwave node --config cluster.json --id P1
//	markerwave snapshot --config cluster.json   # take one now
//	markerwave snapshots --config cluster.json  # what the store holds
//	markerwave recover --config cluster.json    # after a crash
//	markerwave check --model tla/MCRing.cfg  # explore a TLC model in Go
//	markerwave audit TRACE                   # replay a trace against the model
//	markerwave export --diagram run.html TRACE
//	markerwave serve                         # the explorer page on 127.0.0.1:8080
//
// Every subcommand follows the same conventions (cli.go): -h/--help and
// `markerwave help COMMAND` print its usage to stdout and exit 0; results
// go to stdout, diagnostics and progress to stderr, prefixed
// "markerwave COMMAND: "; exit status 0 is success, 1 a violated property,
// a diverging trace or a failed run, 2 bad usage or a bad input file.
// `markerwave --version` prints the version; `markerwave`, `-h`, `--help`
// and `help` print the command list to stdout and exit 0, except that
// markerwave with no arguments at all prints it to stderr and exits 2 (a
// usage error, as the go command does).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is the one list of subcommands, in the order `markerwave help`
// prints them; each run function lives in the file of its name.
var commands = []command{
	{"demo", "bank cluster over loopback TCP: transfers, concurrent snapshots, conservation check", runDemo},
	{"flow", "dataflow demo: barrier snapshots (aligned, unaligned, Chandy-Lamport), a failure, exactly-once restore", runFlow},
	{"node", "run one node of a multi-process cluster from a config file", runNode},
	{"snapshot", "take a snapshot now on a running cluster (at a node's control endpoint)", runSnapshot},
	{"snapshots", "list what a snapshot store holds: id, time, complete or not, total", runSnapshots},
	{"supervise", "run a cluster's nodes and recover them without an operator, coordinated through etcd", runSupervise},
	{"recover", "after a crash, restart a cluster from the latest snapshot every node holds complete", runRecover},
	{"check", "explore a TLC model (.cfg) exhaustively in Go, or simulate it", runCheck},
	{"audit", "replay traces against the model and check every snapshot", runAudit},
	{"export", "export a trace as a diagram, a ShiViz log or a TLC trace-validation model", runExport},
	{"serve", "serve the explorer page: the model in the browser, stepped by hand; trace audit", runServe},
}

// lookup finds subcommand name in commands.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// fallbackVersion is the version of a binary built without module
// version or VCS information (go run, go test, a source tarball).
const fallbackVersion = "devel"

// version is the binary's version, from its build information.
func version() string { return versionOf(debug.ReadBuildInfo()) }

// versionOf is the module version the binary was built at (go install
// ...@v1.2.3), else the VCS revision it was built from, else
// fallbackVersion.
func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return fallbackVersion
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := vcsRevision(info.Settings)
	if rev == "" {
		return fallbackVersion
	}
	if dirty {
		rev += "-dirty"
	}
	return fallbackVersion + " (" + rev + ")"
}

// vcsRevision is the VCS revision in settings, cut to 12 characters, and
// whether the tree had changes.
func vcsRevision(settings []debug.BuildSetting) (rev string, dirty bool) {
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

// dispatch runs the subcommand args name and returns the exit status.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		return help(rest, stdout, stderr)
	case "-version", "--version":
		fmt.Fprintf(stdout, "markerwave %s\n", version())
		return exitOK
	}
	c, ok := lookup(name)
	if !ok {
		what := "command"
		if strings.HasPrefix(name, "-") {
			what = "flag"
		}
		fmt.Fprintf(stderr, "markerwave: unknown %s %q\n", what, name)
		fmt.Fprintln(stderr, "run 'markerwave help' for the commands")
		return exitUsage
	}
	return c.run(rest, stdout, stderr)
}

// help runs `markerwave help [COMMAND]`: the command list, or COMMAND's
// usage (what COMMAND --help prints).
func help(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		usage(stdout)
		return exitOK
	case 1:
		if c, ok := lookup(args[0]); ok {
			return c.run([]string{"--help"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "markerwave help: unknown command %q\n", args[0])
	default:
		fmt.Fprintf(stderr, "markerwave help: want one command, got %d arguments\n", len(args))
	}
	fmt.Fprintln(stderr, "run 'markerwave help' for the commands")
	return exitUsage
}

// usage writes the command list to w.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: markerwave COMMAND [flags] [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n'markerwave help COMMAND' (or 'markerwave COMMAND --help') describes a command;")
	fmt.Fprintln(w, "'markerwave --version' prints the version.")
	fmt.Fprintln(w, "\nexit status: 0 success; 1 a property is violated, a trace diverges or a run")
	fmt.Fprintln(w, "failed; 2 bad usage or a bad input file; 3 check stopped by --max-states or")
	fmt.Fprintln(w, "--max-memory (not a pass); 130 interrupted (Ctrl-C).")
}
