package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

func init() {
	register("node", "run one node of a multi-process cluster from a config file", runNode)
}

func runNode(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "cluster config file (JSON; see impl/runtime/testdata/cluster.json)")
	id := fs.String("id", "", "this node's process id, e.g. P1")
	duration := fs.Duration("duration", 0, "stop after this long (default: run until SIGINT/SIGTERM)")
	restore := fs.Uint64("restore", 0, "restore from this stored global snapshot id (restart every node with the same id; new snapshot ids lie above it)")
	check := fs.Bool("check", false, "only validate the config and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "node: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *config == "" {
		fmt.Fprintln(stderr, "node: --config is required")
		return 2
	}
	if *duration < 0 {
		fmt.Fprintln(stderr, "node: --duration must not be negative")
		return 2
	}
	b, err := os.ReadFile(*config)
	if err != nil {
		fmt.Fprintf(stderr, "node: %v\n", err)
		return 1
	}
	cfg, err := runtime.ParseConfig(b)
	if err != nil {
		fmt.Fprintf(stderr, "node: %s: %v\n", *config, err)
		return 1
	}
	if *check {
		fmt.Fprintf(stdout, "%s: ok (%d processes, %d channels)\n", *config, len(cfg.Topology.Procs), len(cfg.Topology.Chans))
		return 0
	}
	if *id == "" {
		fmt.Fprintln(stderr, "node: --id is required")
		return 2
	}
	self := spec.ProcID(*id)
	if !cfg.Topology.Has(self) {
		fmt.Fprintf(stderr, "node: --id %s is not a process of the topology in %s\n", *id, *config)
		return 2
	}
	st, err := store.Open(cfg.SnapshotDir)
	if err != nil {
		fmt.Fprintf(stderr, "node: snapshot_dir: %v\n", err)
		return 1
	}
	opt := runtime.ProcessOptions{Store: st, Out: stdout}
	if *restore != 0 {
		g, err := st.Load(spec.SnapID(*restore))
		if err != nil {
			fmt.Fprintf(stderr, "node: --restore %d: %v\n", *restore, err)
			return 1
		}
		if !sameTopology(g.Topology, cfg.Topology) {
			fmt.Fprintf(stderr, "node: --restore %d: the snapshot's topology differs from the config's\n", *restore)
			return 1
		}
		opt.From = &g
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	start := time.Now()
	if err := runtime.RunProcess(ctx, cfg, self, opt); err != nil {
		fmt.Fprintf(stderr, "node: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: done after %v\n", *id, time.Since(start).Round(time.Millisecond))
	return 0
}

func sameTopology(a, b *spec.Topology) bool {
	if len(a.Procs) != len(b.Procs) || len(a.Chans) != len(b.Chans) {
		return false
	}
	for i := range a.Procs {
		if a.Procs[i] != b.Procs[i] {
			return false
		}
	}
	for i := range a.Chans {
		if a.Chans[i] != b.Chans[i] {
			return false
		}
	}
	return true
}
