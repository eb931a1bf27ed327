package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

const recoverAbout = `
Brings a cluster back after a crash (a node killed with kill -9, say) by
rolling every node back to the latest snapshot all of them hold complete,
as Recover does in tla/ChandyLamportFaults.tla: the snapshot saved last
whose global file is intact and whose every node's part is stored and
intact (a snapshot a node has no part of, one never assembled because it
never completed or was aborted, or a damaged one, is passed over, saying
why). With no such snapshot the cluster restarts from its initial state.

A node that crashed cannot rejoin the running ones: the survivors stop
on their own one detection bound after suspecting it (else SIGTERM; a
stopped process needs kill -CONT first, or SIGKILL), then run recover. It prints
the recovery point and the command that restarts each node from it
("markerwave node --config FILE --id ID --restore N"); each restarted
node is a new incarnation, and nodes restored from different snapshots
refuse each other at the handshake, naming both ids. With --start it
runs those commands itself, one child process per node on this machine,
after checking that no node's address is still in use, and waits for
them (SIGINT/SIGTERM is passed on).
Exit 0: the recovery point was found (with --start: every node stopped
cleanly); 1: a node is still running, or a restarted node failed; 2: bad
usage, a bad config or no snapshot store.`

// recoverOptions are recover's flags.
type recoverOptions struct {
	config   string
	json     bool
	start    bool
	duration time.Duration
}

func runRecover(args []string, stdout, stderr io.Writer) int {
	f := newFlags("recover", "--config FILE [--start [--duration D]] [--json]", recoverAbout, stdout, stderr)
	var o recoverOptions
	o.define(f)
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := o.usage(f); bad {
		return f.usageError("%s", msg)
	}
	cfg, r, code := recoveryPoint(f, o.config)
	if code != exitOK {
		return code
	}
	cmds := restartCommands(o.config, cfg.Topology, r.From)
	if code := reportRecovery(f, o, r, cmds); code != exitOK || !o.start {
		return code
	}
	return restart(f, cfg, cmds, o.duration)
}

func (o *recoverOptions) define(f *cmdFlags) {
	f.StringVar(&o.config, "config", "", "cluster config `FILE` (required)")
	f.BoolVar(&o.json, "json", false, "print the recovery point as one JSON object")
	f.BoolVar(&o.start, "start", false, "restart every node from the recovery point as a child process and wait for them")
	f.DurationVar(&o.duration, "duration", 0, "with --start: pass --duration to every node (default: run until SIGINT/SIGTERM)")
}

// usage returns the usage error in o, if any.
func (o *recoverOptions) usage(f *cmdFlags) (string, bool) {
	return broken(
		f.unexpected(),
		rule{o.config == "", "--config is required"},
		rule{o.duration < 0, "--duration must not be negative"},
		rule{o.duration > 0 && !o.start, "--duration needs --start"},
	)
}

// recoveryPoint loads the config and finds the latest snapshot every
// node holds complete (store.LatestComplete); code is exitUsage, reported,
// if it cannot.
func recoveryPoint(f *cmdFlags, config string) (*runtime.FileConfig, store.Recovery, int) {
	cfg, err := runtime.LoadConfig(config, "")
	if err != nil {
		reportConfig(f, config, err)
		return nil, store.Recovery{}, exitUsage
	}
	st, err := store.OpenExisting(cfg.SnapshotDir)
	if err != nil {
		return nil, store.Recovery{}, f.fail(exitUsage, err)
	}
	if err := st.CheckCatalog(cfg.Topology); err != nil && !errors.Is(err, store.ErrNotFound) {
		f.errorf("warning: %v; the recovery point below is chosen from the parts on disk, each checked against its own checksum", err)
	}
	r, err := st.LatestComplete(cfg.Topology)
	if err != nil {
		return nil, store.Recovery{}, f.fail(exitUsage, err)
	}
	return cfg, r, exitOK
}

// reportRecovery prints the recovery point and the restart commands,
// for people or as JSON.
func reportRecovery(f *cmdFlags, o recoverOptions, r store.Recovery, cmds []restartCommand) int {
	if o.json {
		return writeJSON(f, f.stdout, recoveryJSON(r, cmds), exitOK)
	}
	printRecovery(f.stdout, r, cmds)
	return exitOK
}

// restart runs the restart commands (startNodes) once no node of cfg is
// still running.
func restart(f *cmdFlags, cfg *runtime.FileConfig, cmds []restartCommand, d time.Duration) int {
	busy := busyNodes(cfg)
	if len(busy) == 0 {
		return startNodes(f, cmds, d)
	}
	for _, b := range busy {
		f.errorf("%s", b)
	}
	f.errorf("stop the surviving nodes first: a node that crashed cannot rejoin them, every node restarts from the recovery point. Survivors stop on their own one detection bound after suspecting it; else SIGTERM; a stopped process (kill -STOP, Ctrl-Z) acts on SIGTERM only once continued (kill -CONT), or end it with SIGKILL")
	return exitFail
}

// restartCommand is the command that restarts one node from the
// recovery point.
type restartCommand struct {
	Node spec.ProcID `json:"node"`
	Args []string    `json:"args"` // after "markerwave"
}

// restartCommands are the commands that restart every node of t from
// snapshot from (nil: from the initial state).
func restartCommands(config string, t *spec.Topology, from *store.Entry) []restartCommand {
	var out []restartCommand
	for _, p := range t.Procs {
		args := []string{"node", "--config", config, "--id", string(p)}
		if from != nil {
			args = append(args, "--restore", fmt.Sprint(from.ID))
		}
		out = append(out, restartCommand{Node: p, Args: args})
	}
	return out
}

// printRecovery writes the recovery point, what was passed over and the
// commands, for people.
func printRecovery(w io.Writer, r store.Recovery, cmds []restartCommand) {
	if e := r.From; e != nil {
		fmt.Fprintf(w, "recovery point: snapshot %d (saved %s UTC), held complete by every node: total %d (%d in flight)\n",
			e.ID, e.Time.Format("2006-01-02 15:04:05.000"), e.Total, e.InFlight)
	} else {
		fmt.Fprintln(w, "recovery point: the initial state (no snapshot is held complete by every node)")
	}
	for _, p := range r.Passed {
		fmt.Fprintf(w, "  passed over snapshot %d (saved %s UTC): %s\n", p.Entry.ID, p.Entry.Time.Format("2006-01-02 15:04:05.000"), strings.Join(p.Why, "; "))
	}
	fmt.Fprintln(w, "restart every node from it (each a new incarnation), once the surviving nodes are stopped:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  markerwave %s\n", strings.Join(c.Args, " "))
	}
}

// recoveryJSON is the JSON form of the recovery point.
func recoveryJSON(r store.Recovery, cmds []restartCommand) any {
	type passedJSON struct {
		Snapshot entryJSON `json:"snapshot"`
		Why      []string  `json:"why"`
	}
	out := struct {
		From     *entryJSON       `json:"from"` // null: the initial state
		Passed   []passedJSON     `json:"passed_over"`
		Commands []restartCommand `json:"commands"`
	}{Passed: []passedJSON{}, Commands: cmds}
	if r.From != nil {
		e := toEntryJSON(*r.From)
		out.From = &e
	}
	for _, p := range r.Passed {
		out.Passed = append(out.Passed, passedJSON{Snapshot: toEntryJSON(p.Entry), Why: p.Why})
	}
	return out
}

// busyNodes names the nodes whose listen address is in use on this
// machine: a survivor still running (or another program).
func busyNodes(cfg *runtime.FileConfig) []string {
	var busy []string
	for _, p := range cfg.Topology.Procs {
		addr := cfg.Nodes[p].Listen
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			busy = append(busy, fmt.Sprintf("%s's address %s is in use (is %s still running?): %v", string(p), addr, string(p), err))
			continue
		}
		ln.Close()
	}
	return busy
}

// startNodes runs cmds as child processes of this binary, passes
// SIGINT/SIGTERM on, and waits for all of them: exitOK if every one
// stopped cleanly, else exitFail naming the nodes that did not.
func startNodes(f *cmdFlags, cmds []restartCommand, d time.Duration) int {
	exe, err := os.Executable()
	if err != nil {
		return f.fail(exitFail, fmt.Errorf("cannot find this program to start the nodes: %w", err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The children write their lines through one lock each way: stdout
	// and stderr may be any writer, not only a file.
	k := children{ctx: ctx, exe: exe, stdout: &lockedWriter{w: f.stdout}, stderr: &lockedWriter{w: f.stderr}}
	for _, c := range cmds {
		k.start(c, d)
	}
	k.wg.Wait()
	if len(k.failed) > 0 {
		for _, m := range k.failed {
			f.errorf("%s", m)
		}
		return exitFail
	}
	f.errorf("every node stopped cleanly")
	return exitOK
}

// children are the node processes recover --start runs.
type children struct {
	ctx            context.Context // canceled on SIGINT/SIGTERM: passed on as SIGTERM
	exe            string
	stdout, stderr *lockedWriter
	wg             sync.WaitGroup
	mu             sync.Mutex
	failed         []string // what went wrong, a line per node
}

// start starts c (with --duration d if d > 0) and waits for it in the
// background.
func (k *children) start(c restartCommand, d time.Duration) {
	args := c.Args
	if d > 0 {
		args = append(append([]string(nil), args...), "--duration", d.String())
	}
	cmd := exec.Command(k.exe, args...)
	cmd.Stdout, cmd.Stderr = k.stdout, k.stderr
	cmd.Env = append(os.Environ(), recoverChildEnv+"=1")
	if err := cmd.Start(); err != nil {
		k.fail("%s did not start: %v", string(c.Node), err)
		return
	}
	k.stderr.printf("markerwave recover: started %s (pid %d): markerwave %s\n", string(c.Node), cmd.Process.Pid, strings.Join(args, " "))
	k.wg.Add(1)
	go k.wait(c.Node, cmd)
}

// wait waits for node p's process, sending it SIGTERM if k.ctx ends.
func (k *children) wait(p spec.ProcID, cmd *exec.Cmd) {
	defer k.wg.Done()
	done := make(chan struct{})
	go func() {
		select {
		case <-k.ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	if err != nil && k.ctx.Err() == nil {
		// Said at once, not when the others have stopped too.
		k.stderr.printf("markerwave recover: %s (pid %d) died: %v; the other nodes stop on their own once they suspect it\n", string(p), cmd.Process.Pid, err)
	}
	if err != nil {
		k.fail("%s: %v", string(p), err)
	}
}

func (k *children) fail(format string, a ...any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failed = append(k.failed, fmt.Sprintf(format, a...))
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) printf(format string, a ...any) { fmt.Fprintf(l, format, a...) }

// recoverChildEnv is set in the environment of the nodes recover
// --start runs (a test binary standing in for markerwave runs dispatch
// when it sees it).
const recoverChildEnv = "MARKERWAVE_RECOVER_CHILD"

// supervisedChildEnv is set in the environment of the nodes markerwave
// supervise runs: a node that stops on its own for a crashed peer then
// says its supervisor restarts the cluster, not the operator.
const supervisedChildEnv = "MARKERWAVE_SUPERVISED"
