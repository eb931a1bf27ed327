// Command markerwave runs the Chandy-Lamport demo, cluster nodes, the
// model checker and the trace auditor.
//
//	markerwave demo                          # 5-node bank over loopback TCP
//	markerwave node --config cluster.json --id P1
//	markerwave check --model tla/MCRing.cfg  # explore a TLC model in Go
//	markerwave audit TRACE                   # replay a trace against the model
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand; each lives in its own file and registers
// itself in init.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "markerwave: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: markerwave COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}
