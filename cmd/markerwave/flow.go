package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/dataflow/run"
)

const flowAbout = `
The dataflow demo (barrier snapshots, issue #10): the keyed aggregation
pipeline (--par sources emitting --records numbered records each, a
stateless map, a keyed shuffle into --par aggregations, a sink) with one
aggregation slowed to --slow a record, so that buffers fill and
backpressure reaches the sources. For each protocol (aligned barriers,
unaligned barriers, the Chandy-Lamport marker wave) it runs the pipeline
once without snapshots for the reference output, then again taking a
snapshot every --every, fails once two snapshots completed and
--fail-after more records reached the sink, restores every node from the
latest complete snapshot and runs on. The restored run's output must be
the reference's, every record counted at the sink exactly once.

Exit 0: exactly once under every protocol; 1: a run failed or its output
differs; 2: bad usage.`

type flowOptions struct {
	par, records, failAfter, capacity int
	slow, every, timeout              time.Duration
	runtime                           string
}

func (o *flowOptions) define(f *cmdFlags) {
	f.IntVar(&o.par, "par", 4, "parallelism: sources, maps and aggregations, 1..16")
	f.IntVar(&o.records, "records", 2000, "records each source emits, 1..1000000")
	f.IntVar(&o.capacity, "cap", 8, "records a buffer holds, 1..10000")
	f.DurationVar(&o.slow, "slow", 100*time.Microsecond, "time the slow aggregation spends on a record (0: none)")
	f.DurationVar(&o.every, "every", 10*time.Millisecond, "interval between snapshots")
	f.IntVar(&o.failAfter, "fail-after", -1, "records at the sink after the second snapshot before the failure (default: a quarter of all)")
	f.StringVar(&o.runtime, "runtime", "tcp", "runtime: tcp (an edge a loopback connection) or memory")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound on each run")
}

func (o *flowOptions) usage(f *cmdFlags) (string, bool) {
	switch {
	case f.NArg() > 0:
		return fmt.Sprintf("unexpected argument %q", f.Arg(0)), true
	case o.par < 1 || o.par > 16:
		return fmt.Sprintf("--par %d: want 1..16", o.par), true
	case o.records < 1 || o.records > 1_000_000:
		return fmt.Sprintf("--records %d: want 1..1000000", o.records), true
	case o.capacity < 1 || o.capacity > 10_000:
		return fmt.Sprintf("--cap %d: want 1..10000", o.capacity), true
	case o.slow < 0:
		return "--slow must not be negative", true
	case o.every <= 0:
		return "--every must be positive", true
	case o.timeout <= 0:
		return "--timeout must be positive", true
	case o.runtime != "tcp" && o.runtime != "memory":
		return fmt.Sprintf("--runtime %q: want tcp or memory", o.runtime), true
	}
	return "", false
}

// flowRow is what the demo found for one protocol.
type flowRow struct {
	mode      dataflow.Mode
	snaps     int
	ckpt      time.Duration // the median checkpoint duration
	align     time.Duration // the longest alignment
	channel   int           // records of channel state, over all snapshots
	restored  int           // the snapshot restored from
	atFailure int           // records at the sink when the failure came
	ok        bool
	why       string
}

func runFlow(args []string, stdout, stderr io.Writer) int {
	f := newFlags("flow", "[flags]", flowAbout, stdout, stderr)
	var o flowOptions
	o.define(f)
	if code, done := f.parse(args); done {
		return code
	}
	if msg, bad := o.usage(f); bad {
		return f.usageError("%s", msg)
	}
	runtime := run.RunTCP
	if o.runtime == "memory" {
		runtime = run.Run
	}
	total := o.par * o.records
	if o.failAfter < 0 {
		o.failAfter = total / 4
	}
	var rows []flowRow
	for _, mode := range []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned, dataflow.ChandyLamport} {
		f.errorf("%s: running", mode)
		row, err := flowProtocol(o, mode, runtime)
		if err != nil {
			return f.fail(exitFail, fmt.Errorf("%s: %w", mode, err))
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(stdout, "pipeline: %d sources x %s, %d maps, a keyed shuffle into %d aggregations (one slowed to %v a record), a sink; buffers of %d; %s runtime; a snapshot every %v\n\n",
		o.par, plural(o.records, "record"), o.par, o.par, o.slow, o.capacity, o.runtime, o.every)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "protocol\tsnapshots\tcheckpoint p50\tlongest alignment\tchannel state\tfailed at\trestored from\toutput")
	failed := 0
	for _, r := range rows {
		verdict := fmt.Sprintf("exactly once (%s)", plural(total, "record"))
		if !r.ok {
			verdict = "WRONG: " + r.why
			failed++
		}
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%s\t%s at the sink\tsnapshot %d\t%s\n", r.mode, r.snaps, r.ckpt.Round(time.Microsecond),
			r.align.Round(time.Microsecond), plural(r.channel, "record"), plural(r.atFailure, "record"), r.restored, verdict)
	}
	_ = tw.Flush()
	if failed > 0 {
		fmt.Fprintf(stdout, "\n%d of %d protocols did not restore exactly once\n", failed, len(rows))
		return exitFail
	}
	fmt.Fprintf(stdout, "\nevery protocol restored from its latest complete snapshot and ran on to the failure-free output, every record at the sink once\n")
	return exitOK
}

// flowProtocol runs the demo for one protocol: the reference run, the run
// with snapshots and a failure, the restored run, and the comparison.
func flowProtocol(o flowOptions, mode dataflow.Mode, runtime func(context.Context, *dataflow.Cluster, run.Options) (*run.Result, error)) (flowRow, error) {
	row := flowRow{mode: mode}
	g, logics, err := pipeline.Pipeline(o.par, o.records, o.capacity, mode)
	if err != nil {
		return row, err
	}
	g = g.Successively()
	slow := map[int]time.Duration{len(g.Nodes) - 2: o.slow}
	ctx := context.Background()
	ref := dataflow.NewCluster(g, logics())
	if _, err := runtime(ctx, ref, run.Options{InjectAt: -1, FailAfter: -1, Timeout: o.timeout}); err != nil {
		return row, fmt.Errorf("the reference run: %w", err)
	}
	want := ref.Sink().Logic().(*pipeline.Sink).Latest
	c := dataflow.NewCluster(g, logics())
	res, err := runtime(ctx, c, run.Options{InjectAt: 0, Interval: o.every, FailAfter: o.failAfter, FailFrom: 2,
		Throttle: slow, Timeout: o.timeout})
	if err != nil {
		return row, fmt.Errorf("the run with snapshots: %w", err)
	}
	if !res.Failed {
		return row, fmt.Errorf("the run ended before its failure (%s completed): lower --fail-after or --every", plural(len(res.Checkpoints), "snapshot"))
	}
	var took []time.Duration
	for _, cp := range res.Checkpoints {
		took = append(took, cp.Took)
		row.align = max(row.align, slices.Max(cp.Align))
		all, _ := cp.Snapshot.ChannelRecords(g)
		row.channel += all
	}
	slices.Sort(took)
	row.snaps, row.ckpt = len(took), took[len(took)/2]
	for _, n := range c.Sink().Output() {
		row.atFailure += n
	}
	latest := res.Latest()
	row.restored = latest.ID()
	r, err := dataflow.RestoreCluster(g, latest, logics())
	if err != nil {
		return row, fmt.Errorf("restore from snapshot %d: %w", latest.ID(), err)
	}
	if _, err := runtime(ctx, r, run.Options{InjectAt: 0, Interval: o.every, FailAfter: -1, Throttle: slow, Timeout: o.timeout}); err != nil {
		return row, fmt.Errorf("the run restored from snapshot %d: %w", latest.ID(), err)
	}
	row.ok, row.why = exactlyOnce(r.Sink().Output(), o.par*o.records, r.Sink().Logic().(*pipeline.Sink).Latest, want)
	return row, nil
}

// exactlyOnce checks the sink's output: every one of total records
// counted once, and the output equal to the reference's.
func exactlyOnce(counts map[dataflow.Key]int, total int, got, want map[int64]int64) (bool, string) {
	var dups []dataflow.Key
	for k, n := range counts {
		if n > 1 {
			dups = append(dups, k)
		}
	}
	switch {
	case len(counts) < total:
		return false, fmt.Sprintf("%s lost", plural(total-len(counts), "record"))
	case len(dups) > 0:
		first := slices.MinFunc(dups, func(a, b dataflow.Key) int {
			if a.Src != b.Src {
				return a.Src - b.Src
			}
			return a.I - b.I
		})
		return false, fmt.Sprintf("%s counted more than once (the first: source %d's record %d)", plural(len(dups), "record"), first.Src, first.I)
	case !maps.Equal(got, want):
		return false, "the output differs from the failure-free run's"
	}
	return true, ""
}
