package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/snapshot"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

const nodeAbout = `
Runs node ID of the cluster that FILE describes (the format is
impl/runtime's FileConfig; see impl/runtime/testdata/cluster.json) until
SIGINT/SIGTERM or --duration: a TCP listener for its incoming channels,
dialers for its outgoing ones, the config's workload and snapshot
schedule, every local part saved under snapshot_dir and each global
snapshot assembled by the node that completes it. Start one process per
node with the same FILE. Relative directories in FILE are relative to
FILE's folder. Progress goes to stderr; the final line goes to stdout
whatever the exit status: "ID: done after D", "ID: stopped with failures
after D" or "ID: failed after D: why", with what stopped it (SIGINT,
SIGTERM or --duration).

Every start first checks the config and this machine (ports in range and
distinct, amounts and totals, the topology strongly connected, ID in it,
the directories usable, the TLS files loading) and names every problem;
--check stops there.

With the config's "tls" every connection is mutual TLS: a peer without a
certificate of the cluster's CA and name, or claiming another node, is
refused and named on stderr. Without it the node talks plain TCP, for
trusted networks only. nodes.ID.metrics serves Prometheus metrics
(GET /metrics; see docs/multi-process.md).

A peer heard nothing from for the config's failures.timeout_ms (a refused
connection: at once) is suspected and named on stderr; snapshots waiting
for it are aborted, transfers to it refused (nothing debited), and no
snapshot starts until it is heard again. A stop (--duration, SIGINT or
SIGTERM) ends the workload and schedule, then waits (failures.drain_ms at
most) until every live peer has finished sending and no snapshot is under
way here, so nothing is left in flight.

Exit 0: stopped cleanly (or, with --check, the config is usable); 1: the
run had failures, listed in a final summary on stderr (dead peers,
aborted and unfinished snapshots, frames lost, errors); 2: bad usage or a
bad config.`

// nodeOptions are node's flags.
type nodeOptions struct {
	config   string
	id       string
	duration time.Duration
	restore  uint64
	check    bool
}

func (o *nodeOptions) define(f *cmdFlags) {
	f.StringVar(&o.config, "config", "", "cluster config `FILE` (JSON; required)")
	f.StringVar(&o.id, "id", "", "this node's process `ID`, e.g. P1 (required unless --check)")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (default: run until SIGINT/SIGTERM)")
	f.Uint64Var(&o.restore, "restore", 0, "restore from the stored global snapshot with this `SNAPSHOT_ID` (restart every node with the same one; new snapshot ids lie above it)")
	f.BoolVar(&o.check, "check", false, "only check the config (and --id, --restore if given) and exit: 0 if usable, 2 naming every problem")
}

// usage returns the usage error in o, if any.
func (o *nodeOptions) usage(f *cmdFlags) (string, bool) {
	return broken(
		f.unexpected(),
		rule{o.config == "", "--config is required"},
		rule{o.id == "" && !o.check, "--id is required (or --check to only check the config)"},
		rule{o.duration < 0, "--duration must not be negative"},
	)
}

func runNode(args []string, stdout, stderr io.Writer) int {
	f := newFlags("node", "--config FILE --id ID [flags]", nodeAbout, stdout, stderr)
	var o nodeOptions
	o.define(f)
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := o.usage(f); bad {
		return f.usageError("%s", msg)
	}
	cfg, from, ok := loadNode(f, o)
	if !ok {
		return exitUsage
	}
	if o.check {
		printNodeCheck(stdout, o, cfg, from)
		return exitOK
	}
	return startNode(f, o, cfg, from)
}

// loadNode checks the config, the machine and the snapshot to restore,
// reporting every problem; ok is false if there was one.
func loadNode(f *cmdFlags, o nodeOptions) (cfg *runtime.FileConfig, from *snapshot.Global, ok bool) {
	cfg, err := runtime.LoadConfig(o.config, spec.ProcID(o.id))
	if err == nil && o.id == "" {
		err = cfg.CheckCA() // with an id, LoadConfig loaded it with the node's certificate
	}
	if err != nil {
		reportConfig(f, o.config, err)
		return nil, nil, false
	}
	if o.restore == 0 {
		return cfg, nil, true
	}
	g, err := restorePoint(cfg, spec.SnapID(o.restore))
	if err != nil {
		f.errorf("--restore %d: %v", o.restore, err)
		return nil, nil, false
	}
	return cfg, g, true
}

// reportConfig prints each problem of the config on its own line; a
// trace given for a config is named as one.
func reportConfig(f *cmdFlags, path string, err error) {
	if format, ok := traceFormat(path); ok {
		f.errorf("%s is a trace (%s), not a cluster config (impl/runtime's FileConfig: topology, nodes, app, snapshot_dir, ...)", path, format)
		return
	}
	var ce *runtime.ConfigError
	if !errors.As(err, &ce) {
		f.errorf("%v", err)
		return
	}
	for _, p := range ce.Problems {
		f.errorf("%s: %v", path, p)
	}
	f.errorf("%s: %s", path, plural(len(ce.Problems), "problem"))
}

// restorePoint loads stored snapshot id and checks that it is one of the
// config's cluster.
func restorePoint(cfg *runtime.FileConfig, id spec.SnapID) (*snapshot.Global, error) {
	if _, err := os.Stat(cfg.SnapshotDir); err != nil {
		return nil, fmt.Errorf("no snapshot to restore: %w", err)
	}
	st, err := store.Open(cfg.SnapshotDir)
	if err != nil {
		return nil, err
	}
	g, err := st.Load(id)
	if err != nil {
		return nil, err
	}
	if !g.Topology.Equal(cfg.Topology) {
		return nil, fmt.Errorf("the snapshot's topology differs from the config's")
	}
	return &g, nil
}

// printNodeCheck says what --check checked.
func printNodeCheck(w io.Writer, o nodeOptions, cfg *runtime.FileConfig, from *snapshot.Global) {
	t := cfg.Topology
	fmt.Fprintf(w, "%s: ok\n", o.config)
	row := func(what, format string, args ...any) {
		fmt.Fprintf(w, "  %-13s %s\n", what, fmt.Sprintf(format, args...))
	}
	row("topology", "%s, %s, strongly connected", plural(len(t.Procs), "node"), plural(len(t.Chans), "channel"))
	row("nodes", "%s, each listening on its own address, ports in 1-65535", plural(len(cfg.Nodes), "node"))
	var total int64
	for _, b := range cfg.Header().InitBal {
		total += b
	}
	row("app", "%s, initial total %d (fits in int64)", cfg.App.Kind, total)
	row("workload", "%s", workloadRow(cfg.Workload))
	row("snapshots", "%s", scheduleRow(cfg.Snapshots))
	d := cfg.Detector()
	row("failures", "heartbeat every %v, a silent peer suspected after %v (within %v; one never heard from after %v), stop drains up to %v",
		d.Interval, d.Timeout, d.Bound(), max(d.Startup, d.Timeout), cfg.DrainTimeout())
	row("snapshot_dir", "%s", dirState(cfg.SnapshotDir))
	row("trace_dir", "%s", traceDirRow(cfg.TraceDir))
	row("tls", "%s", tlsRow(cfg.TLS, o.id))
	if o.id != "" {
		self := spec.ProcID(o.id)
		row("--id "+o.id, "a process of the topology: %s out, %s in", plural(len(t.Out(self)), "channel"), plural(len(t.In(self)), "channel"))
	}
	if from != nil {
		row(fmt.Sprintf("--restore %d", from.ID), "stored, intact, same topology")
	}
}

// tlsRow is --check's line on mutual TLS (LoadConfig has loaded id's
// certificate and key).
func tlsRow(t *runtime.TLSConfig, id string) string {
	switch {
	case t == nil:
		return "none: plain TCP, for trusted networks only; control and metrics on loopback"
	case id == "":
		return fmt.Sprintf("mutual TLS, cluster %q, CA %s loaded (no --id: no node's certificate checked)", t.Cluster, t.CA)
	}
	return fmt.Sprintf("mutual TLS, cluster %q, CA %s; %s's certificate and key loaded", t.Cluster, t.CA, id)
}

// workloadRow is --check's line on the workload.
func workloadRow(wl *runtime.Workload) string {
	if wl == nil || wl.Transfers <= 0 {
		return "none"
	}
	return fmt.Sprintf("%s per node, amounts 1-%d, %dms apart", plural(wl.Transfers, "message"), max(wl.MaxAmount, 1), wl.PauseMS)
}

// scheduleRow is --check's line on the snapshot schedule.
func scheduleRow(s *runtime.Schedule) string {
	if s == nil || s.Count <= 0 || len(s.Initiators) == 0 {
		return "none scheduled"
	}
	return fmt.Sprintf("%d from each of %s, every %dms", s.Count, procNames(s.Initiators), s.EveryMS)
}

// traceDirRow is --check's line on the trace directory.
func traceDirRow(dir string) string {
	if dir == "" {
		return "none (no trace written)"
	}
	return dirState(dir)
}

// dirState says how a usable directory will be used.
func dirState(dir string) string {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir + ": exists, writable"
	}
	return dir + ": will be created (parent writable)"
}

func procNames(ps []spec.ProcID) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// startNode runs the node until SIGINT/SIGTERM or --duration, and ends,
// whatever the outcome, with the final line on stdout: how the node
// ended, after how long, and why it stopped.
func startNode(f *cmdFlags, o nodeOptions, cfg *runtime.FileConfig, from *snapshot.Global) int {
	start := time.Now()
	ctx, stop := nodeContext(f, o)
	defer stop()
	err := runNodeProcess(ctx, f, o, cfg, from)
	took := time.Since(start).Round(time.Millisecond)
	why := stopReason(ctx, o)
	var sum *runtime.StopSummary
	switch {
	case err == nil:
		fmt.Fprintf(f.stdout, "%s: done after %v%s\n", o.id, took, why)
		return exitOK
	case errors.As(err, &sum):
		f.errorf("%v", err)
		if sum.Orphaned != "" {
			why = " (on its own: " + sum.Orphaned + ")"
		}
		fmt.Fprintf(f.stdout, "%s: stopped with failures after %v%s: the summary is on stderr\n", o.id, took, why)
	default:
		msg := nameOnce(spec.ProcID(o.id), err.Error())
		if !strings.Contains(msg, o.id) {
			msg = o.id + ": " + msg // the node named once
		}
		f.errorf("%s", msg)
		fmt.Fprintf(f.stdout, "%s: failed after %v: %s\n", o.id, took, firstLine(nameOnce(spec.ProcID(o.id), msg)))
	}
	return exitFail
}

// runNodeProcess opens the store and runs the node (runtime.RunProcess)
// until ctx ends.
func runNodeProcess(ctx context.Context, f *cmdFlags, o nodeOptions, cfg *runtime.FileConfig, from *snapshot.Global) error {
	st, err := store.Open(cfg.SnapshotDir)
	if err != nil {
		return err
	}
	opt := runtime.ProcessOptions{Store: st, Out: f.stderr, From: from} // progress
	if os.Getenv(supervisedChildEnv) != "" {
		opt.Restarter = "its supervisor (markerwave supervise)"
	}
	return runtime.RunProcess(ctx, cfg, spec.ProcID(o.id), opt)
}

// stopSignal is the cause of a node's context when a signal stopped it.
type stopSignal struct{ sig os.Signal }

func (s stopSignal) Error() string { return "stopped on " + signalName(s.sig) }

// errDuration is the cause of a node's context when --duration ended.
var errDuration = errors.New("--duration elapsed")

// nodeContext is the node's run: it ends on SIGINT or SIGTERM (saying
// so on stderr at once, before the drain's progress) or after
// --duration, each with its cause.
func nodeContext(f *cmdFlags, o nodeOptions) (context.Context, func()) {
	return stopContext(f, o.id, o.duration)
}

// stopContext is a run of who that ends on SIGINT or SIGTERM (said on
// stderr at once) or after d (if positive), each with its cause.
func stopContext(f *cmdFlags, who string, d time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs, release := notifyStop()
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(f.stderr, "%s: got %s: stopping\n", who, signalName(sig))
			cancel(stopSignal{sig})
		case <-ctx.Done():
		}
	}()
	stop := func() { release(); cancel(nil) }
	if d <= 0 {
		return ctx, stop
	}
	tctx, tcancel := context.WithTimeoutCause(ctx, d, errDuration)
	return tctx, func() { tcancel(); stop() }
}

// notifyStop relays SIGINT and SIGTERM until release is called; tests
// replace it.
var notifyStop = func() (sigs <-chan os.Signal, release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}

// signalName is SIGINT or SIGTERM, as operators write them.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// stopReason says, in brackets, what stopped a node: a signal or
// --duration ("" if neither: it ended on its own, e.g. an error).
func stopReason(ctx context.Context, o nodeOptions) string { return stopReasonOf(ctx, o.duration) }

// stopReasonOf is stopReason for a run of --duration d.
func stopReasonOf(ctx context.Context, d time.Duration) string {
	var s stopSignal
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &s):
		return " (" + s.Error() + ")"
	case errors.Is(cause, errDuration):
		return fmt.Sprintf(" (--duration %v)", d)
	}
	return ""
}

// nameOnce drops the prefixes that name node p again from msg ("P1: ",
// "runtime P1: "): the caller names p once.
func nameOnce(p spec.ProcID, msg string) string {
	for {
		t := strings.TrimPrefix(strings.TrimPrefix(msg, string(p)+": "), "runtime "+string(p)+": ")
		if t == msg {
			return msg
		}
		msg = t
	}
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
