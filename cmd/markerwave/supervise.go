package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/markerwave/markerwave/impl/coord"
	"github.com/markerwave/markerwave/impl/coord/etcdembed"
	"github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/store"
	"github.com/markerwave/markerwave/spec"
)

const superviseAbout = `
Runs every node of the cluster FILE describes as a child process
("markerwave node"), and recovers without an operator: when a node dies
(its process exits, or its lease in etcd expires), the survivors are
stopped (SIGTERM: they abort what cannot complete and drain), the
incarnation is advanced in etcd by a compare-and-swap, and every node is
restarted from the latest complete snapshot of the catalog in etcd whose
parts on disk agree with it (each part that disagrees is named). This is
the supervisor of one machine: on several machines each runs one for
its nodes (--procs), against the same etcd (docs/supervised.md).

--etcd embed (the default) starts a real etcd in this process, on
loopback, in a temporary directory; --etcd ADDR (host:port or URL) names
a running one, reached over mutual TLS with --etcd-ca, --etcd-cert and
--etcd-key. Keys lie under /markerwave/--etcd-cluster/. Complete
snapshots are published to the catalog as the nodes save them;
--metrics ADDR serves the recovery metrics (time to detect, time to
recover) for Prometheus on GET /metrics.

The final line on stdout says how many automatic recoveries there were
and the last incarnation. Exit 0: stopped (--duration, SIGINT/SIGTERM)
with every node stopped cleanly (a node stopped as it started, within
its startup grace and before any snapshot was complete, may name peers
it never heard from: they were starting with it, no failure; the
survivors a recovery stops name the dead node: no failure either); 1: a
recovery or a node's final stop failed; 2: bad usage, a bad config, an
unreachable etcd (named), or a node that cannot run (its exit 2).`

// superviseOptions are supervise's flags.
type superviseOptions struct {
	config, etcd, cluster, metrics string
	ca, cert, key                  string
	procs                          string
	duration, dialTimeout          time.Duration
	keep                           int
}

func (o *superviseOptions) define(f *cmdFlags) {
	f.StringVar(&o.config, "config", "", "cluster config `FILE` (JSON; required)")
	f.StringVar(&o.etcd, "etcd", "embed", "etcd: `embed` (a real one in this process) or ADDR (host:port or URL of a running one)")
	f.StringVar(&o.cluster, "etcd-cluster", "default", "the cluster's `NAME` in etcd (keys under /markerwave/NAME/)")
	f.StringVar(&o.ca, "etcd-ca", "", "CA `FILE` (PEM) of etcd's server certificate (mutual TLS with --etcd-cert, --etcd-key)")
	f.StringVar(&o.cert, "etcd-cert", "", "client certificate `FILE` (PEM) for etcd")
	f.StringVar(&o.key, "etcd-key", "", "client key `FILE` (PEM) for etcd")
	f.DurationVar(&o.dialTimeout, "etcd-timeout", 3*time.Second, "how long an unreachable etcd is waited for")
	f.StringVar(&o.metrics, "metrics", "", "serve the recovery metrics on `ADDR` (loopback), GET /metrics")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (default: run until SIGINT/SIGTERM)")
	f.StringVar(&o.procs, "procs", "", "run only these `P1,P2,...` of the config (a supervisor per machine, against the same etcd); default: every node")
	f.IntVar(&o.keep, "keep", 0, "keep only the last `N` complete snapshots (catalog and store); 0 keeps all")
}

// usage returns the usage error in o, if any.
func (o *superviseOptions) usage(f *cmdFlags) (string, bool) {
	tlsFiles := countSet(o.ca, o.cert, o.key)
	return broken(
		f.unexpected(),
		rule{o.config == "", "--config is required"},
		rule{o.etcd == "", "--etcd must be embed or an address"},
		rule{o.duration < 0, "--duration must not be negative"},
		rule{o.keep < 0, "--keep must not be negative"},
		rule{o.dialTimeout <= 0, "--etcd-timeout must be positive"},
		rule{tlsFiles != 0 && tlsFiles != 3, "--etcd-ca, --etcd-cert and --etcd-key go together"},
		rule{tlsFiles == 3 && o.etcd == "embed", "--etcd-ca, --etcd-cert and --etcd-key are for --etcd ADDR (the embedded etcd is plain, on loopback)"},
	)
}

// countSet counts the non-empty strings.
func countSet(ss ...string) int {
	n := 0
	for _, s := range ss {
		if s != "" {
			n++
		}
	}
	return n
}

func runSupervise(args []string, stdout, stderr io.Writer) int {
	f := newFlags("supervise", "--config FILE [--etcd embed|ADDR] [flags]", superviseAbout, stdout, stderr)
	var o superviseOptions
	o.define(f)
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := o.usage(f); bad {
		return f.usageError("%s", msg)
	}
	cfg, err := runtime.LoadConfig(o.config, "")
	if err != nil {
		reportConfig(f, o.config, err)
		return exitUsage
	}
	procs, err := procsOf(o.procs, cfg)
	if err != nil {
		return f.usageError("%v", err)
	}
	co, stopEtcd, err := openEtcd(o, f.stderr)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	defer stopEtcd()
	defer co.Close()
	return supervise(f, o, cfg, procs, co)
}

// procsOf is the processes --procs names (every one of the config's
// topology if empty); each must be one of the topology's, named once.
func procsOf(list string, cfg *runtime.FileConfig) ([]spec.ProcID, error) {
	if list == "" {
		return cfg.Topology.Procs, nil
	}
	var out []spec.ProcID
	for _, s := range strings.Split(list, ",") {
		p := spec.ProcID(strings.TrimSpace(s))
		switch {
		case !slices.Contains(cfg.Topology.Procs, p):
			return nil, fmt.Errorf("--procs %s: %q is not a process of the config (%s)", list, p, procNames(cfg.Topology.Procs))
		case slices.Contains(out, p):
			return nil, fmt.Errorf("--procs %s: %s is named twice", list, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// openEtcd starts the embedded etcd or names the one at --etcd, and
// connects within --etcd-timeout.
func openEtcd(o superviseOptions, log io.Writer) (*coord.Coord, func(), error) {
	stop := func() {}
	endpoint := o.etcd
	if o.etcd == "embed" {
		srv, err := etcdembed.Start(etcdembed.Config{})
		if err != nil {
			return nil, stop, err
		}
		stop = srv.Stop
		endpoint = srv.Endpoint()
		fmt.Fprintf(log, "supervisor: etcd embedded in this process at %s\n", endpoint)
	}
	tc, err := etcdTLS(o)
	if err != nil {
		stop()
		return nil, func() {}, err
	}
	co, err := coord.Open(context.Background(), coord.Config{Endpoints: []string{endpoint}, Cluster: o.cluster, TLS: tc, DialTimeout: o.dialTimeout})
	if err != nil {
		stop()
		return nil, func() {}, fmt.Errorf("--etcd %s: %w", o.etcd, err)
	}
	return co, stop, nil
}

// etcdTLS is the client's mutual TLS from --etcd-ca, --etcd-cert,
// --etcd-key (nil without them).
func etcdTLS(o superviseOptions) (*tls.Config, error) {
	if o.ca == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.cert, o.key)
	if err != nil {
		return nil, fmt.Errorf("--etcd-cert %s, --etcd-key %s: %w", o.cert, o.key, err)
	}
	pem, err := os.ReadFile(o.ca)
	if err != nil {
		return nil, fmt.Errorf("--etcd-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--etcd-ca %s: no PEM certificate in it", o.ca)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// supervise runs the supervisor until --duration or a signal, and ends
// with the final line on stdout.
func supervise(f *cmdFlags, o superviseOptions, cfg *runtime.FileConfig, procs []spec.ProcID, co *coord.Coord) int {
	start := time.Now()
	st, err := store.Open(cfg.SnapshotDir)
	if err != nil {
		return f.fail(exitUsage, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return f.fail(exitFail, fmt.Errorf("cannot find this program to start the nodes: %w", err))
	}
	log := &lockedWriter{w: f.stderr}
	recoveries := 0
	nodes := newChildNodes(exe, o.config, cfg, procs, log)
	sup, err := coord.NewSupervisor(coord.SupervisorConfig{
		Coord: co, Store: st, Topology: cfg.Topology, Procs: procs, Keep: o.keep, Log: log,
		Name: "markerwave supervise " + hostname(), OnRecovery: func(coord.Recovery) { recoveries++ },
		OnPublish: nodes.onPublish,
	})
	if err != nil {
		return f.fail(exitFail, err)
	}
	ctx, stop := stopContext(f, "supervise", o.duration)
	defer stop()
	if o.metrics != "" {
		closeMetrics, err := serveSupervisorMetrics(o.metrics, sup.Metrics.Handler())
		if err != nil {
			return f.fail(exitUsage, err)
		}
		defer closeMetrics()
	}
	go publishLoop(ctx, sup, log)
	err = sup.Run(ctx, nodes)
	took := time.Since(start).Round(time.Millisecond)
	inc, _ := sup.Running()
	return superviseEnd(f, err, nodes.finalFailures(), superviseSummary{took, recoveries, inc.N, stopReasonOf(ctx, o.duration)})
}

// superviseSummary is what the final line says.
type superviseSummary struct {
	took        time.Duration
	recoveries  int
	incarnation uint64
	why         string
}

// superviseEnd writes the final line and chooses the exit code.
func superviseEnd(f *cmdFlags, err error, failed []string, s superviseSummary) int {
	what := fmt.Sprintf("%s, incarnation %d", recoveriesText(s.recoveries), s.incarnation)
	var fatal *coord.FatalError
	switch {
	case errors.As(err, &fatal):
		f.errorf("%v", err)
		fmt.Fprintf(f.stdout, "supervise: failed after %v: %s cannot run; %s\n", s.took, fatal.Death.Proc, what)
		return exitUsage
	case errors.Is(err, coord.ErrCatalogDisagrees):
		f.errorf("%v", err)
		fmt.Fprintf(f.stdout, "supervise: failed after %v: %v; %s\n", s.took, coord.ErrCatalogDisagrees, what)
		return exitUsage
	case err != nil:
		f.errorf("%v", err)
		fmt.Fprintf(f.stdout, "supervise: failed after %v: %s; %s\n", s.took, firstLine(err.Error()), what)
		return exitFail
	case len(failed) > 0:
		for _, m := range failed {
			f.errorf("%s", m)
		}
		fmt.Fprintf(f.stdout, "supervise: stopped with failures after %v%s: %s\n", s.took, s.why, what)
		return exitFail
	}
	fmt.Fprintf(f.stdout, "supervise: done after %v%s: %s\n", s.took, s.why, what)
	return exitOK
}

// publishLoop publishes the store's new complete snapshots in the
// catalog every 100 ms until ctx ends.
func publishLoop(ctx context.Context, sup *coord.Supervisor, log io.Writer) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var last string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := sup.PublishNew(ctx); err != nil && ctx.Err() == nil && err.Error() != last {
			last = err.Error()
			fmt.Fprintf(log, "supervisor: publish: %v\n", err)
		}
	}
}

// serveSupervisorMetrics serves h at addr, which must be loopback.
func serveSupervisorMetrics(addr string, h http.Handler) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ((ip == nil || !ip.IsLoopback()) && host != "localhost") {
		return nil, fmt.Errorf("--metrics %s: want a loopback address (127.0.0.1:PORT)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return strings.SplitN(h, ".", 2)[0]
}

// recoveriesText is "1 automatic recovery", "N automatic recoveries".
func recoveriesText(n int) string {
	if n == 1 {
		return "1 automatic recovery"
	}
	return fmt.Sprintf("%d automatic recoveries", n)
}
