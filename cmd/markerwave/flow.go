package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/dataflow/run"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"github.com/markerwave/markerwave/spec"
)

const flowAbout = `
The dataflow demo (barrier snapshots, issue #10): the keyed aggregation
pipeline (--par sources emitting --records numbered records each, a
stateless map, a keyed shuffle into --par aggregations, a sink) with one
aggregation slowed to --slow a record, so that buffers fill and
backpressure reaches the sources. For each protocol (aligned barriers,
unaligned barriers, the Chandy-Lamport marker wave, and adaptive
barriers: aligned, switching to unaligned once an operator has aligned
for --aligned-timeout, tla/BarrierAdaptive.tla) it runs the pipeline
once without snapshots for the reference output, then again taking a
snapshot every --every, fails once two snapshots completed and
--fail-after more records reached the sink, restores every node from the
latest complete snapshot and runs on. The restored run's output must be
the reference's, every record counted at the sink exactly once. For the
adaptive protocol it says which operators switched, how long they were
blocked and the bytes of channel state the switches cost;
--force-aligned names edges (A->B, comma-separated) whose senders never
switch.

With --measure it runs no failure: it measures, side by side in one
run, checkpoint duration, time blocked and channel-state bytes of every
protocol and of adaptive at aligned timeouts of 1, 10 and 100 ms, with
the slow stage (backpressure) and without, on the in-memory and TCP
runtimes (docs/barriers.md has the table). Without the slow stage the
sources wait --pace after each record, below the pipeline's capacity,
so that no barrier waits behind a full buffer there.

The sink writes the results into a database through a two-phase-commit
sink (docs/sink.md): a transaction per snapshot, pre-committed at the
sink's barrier, committed once the snapshot is complete; --kill-sink K
kills it right after its pre-commit of snapshot K, before the commit.
After the restore (its recovery commits the pre-committed transactions
of complete snapshots and aborts the others) flow queries the rows back:
each record must be there exactly once. The database is DIR/sink.db
(SQLite) with --out, a temporary SQLite file without, or --sink-url's:
an SQLite file or a PostgreSQL URL (max_prepared_transactions > 0).
A database that cannot be opened, a table of the sink's in another
shape, or a database holding flow's output already is bad input.

With --out DIR it also writes DIR/aligned.jsonl, DIR/unaligned.jsonl
and DIR/adaptive.jsonl (the protocols tla/BarrierSnapshots.tla and
tla/BarrierAdaptive.tla have): the barrier trace
(traces/README.md, "Barrier traces") of one more run of each, on a graph
the spec takes (--par sources, each into its own map, all maps into the
slow aggregation, a sink), with a single snapshot, the failure
--fail-after records later and the restore; markerwave audit replays it
against the spec and markerwave export --diagram draws it. Each
protocol's run also leaves its sink trace, DIR/MODE-sink.jsonl
(tla/BarrierSink.tla's vocabulary: markerwave audit replays it), and
DIR/flow.txt is the table.

Exit 0: exactly once under every protocol; 1: a run failed or its output
differs; 2: bad usage, --out holds a run or cannot be written, or a bad
--sink-url database.`

type flowOptions struct {
	par, records, capacity int
	failAfter              optionalInt
	slow, every, timeout   time.Duration
	pace                   time.Duration // --measure: a source's wait after each record, without the slow stage
	alignedTimeout         time.Duration
	forceAligned           string
	measure                bool
	runtime                string
	out                    string
	sinkURL                string
	killSink               int
	sink                   *flowSink // flowsink.go
}

// optionalInt is an int flag whose default is described in its usage,
// not printed: set is false until the flag is given.
type optionalInt struct {
	n   int
	set bool
}

func (v *optionalInt) String() string {
	if v == nil || !v.set {
		return ""
	}
	return strconv.Itoa(v.n)
}

func (v *optionalInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("parse error")
	}
	v.n, v.set = n, true
	return nil
}

// or is the value given, else def.
func (v optionalInt) or(def int) int {
	if v.set {
		return v.n
	}
	return def
}

func (o *flowOptions) define(f *cmdFlags) {
	f.IntVar(&o.par, "par", 4, "parallelism: sources, maps and aggregations, 1..16")
	f.IntVar(&o.records, "records", 2000, "records each source emits, 1..1000000")
	f.IntVar(&o.capacity, "cap", 8, "records a buffer holds, 1..10000")
	f.DurationVar(&o.slow, "slow", 100*time.Microsecond, "time the slow aggregation spends on a record (0: none)")
	f.DurationVar(&o.every, "every", 10*time.Millisecond, "interval between snapshots")
	f.Var(&o.failAfter, "fail-after", "`N` records at the sink after the second snapshot before the failure, 0 or more (default: a quarter of all)")
	f.StringVar(&o.runtime, "runtime", "tcp", "runtime: tcp (an edge a loopback connection) or memory")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound on each run")
	f.StringVar(&o.out, "out", "", "write each protocol's barrier trace and the table into `DIR`, empty or new (default: none)")
	f.DurationVar(&o.alignedTimeout, "aligned-timeout", time.Millisecond, "adaptive: how long an operator aligns before it switches to unaligned (0: at once)")
	f.StringVar(&o.forceAligned, "force-aligned", "", "adaptive: `EDGES` that never switch, A->B comma-separated, e.g. map0->agg0 (default: none)")
	f.BoolVar(&o.measure, "measure", false, "measure every protocol side by side, with and without backpressure, on both runtimes (no failure)")
	f.DurationVar(&o.pace, "pace", 50*time.Microsecond, "--measure: without the slow stage, how long each source waits after a record, below the pipeline's capacity (0: not paced)")
	f.IntVar(&o.killSink, "kill-sink", 0, "kill the sink right after it pre-commits snapshot `K`, before the commit: the run's failure if --fail-after's has not come (0: no kill)")
	f.StringVar(&o.sinkURL, "sink-url", "", "the database the sink writes to: a PostgreSQL `URL` (postgres://...) or an SQLite file (default: DIR/sink.db with --out, else a temporary file)")
}

func (o *flowOptions) usage(f *cmdFlags) (string, bool) {
	return broken(
		f.unexpected(),
		rule{outside(o.par, 1, 16), fmt.Sprintf("--par %d: want 1..16", o.par)},
		rule{outside(o.records, 1, 1_000_000), fmt.Sprintf("--records %d: want 1..1000000", o.records)},
		rule{outside(o.capacity, 1, 10_000), fmt.Sprintf("--cap %d: want 1..10000", o.capacity)},
		rule{o.killSink < 0, fmt.Sprintf("--kill-sink %d must not be negative", o.killSink)},
		rule{o.failAfter.or(0) < 0, fmt.Sprintf("--fail-after %d must not be negative", o.failAfter.n)},
		rule{o.slow < 0, "--slow must not be negative"},
		rule{o.pace < 0, fmt.Sprintf("--pace %v must not be negative", o.pace)},
		rule{o.every <= 0, "--every must be positive"},
		rule{o.timeout <= 0, "--timeout must be positive"},
		rule{o.alignedTimeout < 0, fmt.Sprintf("--aligned-timeout %v must not be negative", o.alignedTimeout)},
		rule{o.runtime != "tcp" && o.runtime != "memory", fmt.Sprintf("--runtime %q: want tcp or memory", o.runtime)},
	)
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
	queried   string        // the rows queried back from the database
	ok        bool
	why       string
	// The adaptive protocol: the operators that switched (in how many
	// snapshots each), the longest time blocked, the channel-state bytes.
	switched map[string]int
	bytes    int
	latest   []string // the operators that switched in the snapshot restored from
}

// runner is a dataflow runtime of impl/dataflow/run: Run or RunTCP.
type runner = func(context.Context, *dataflow.Cluster, run.Options) (*run.Result, error)

// flowModes are the protocols the demo runs, in order.
var flowModes = []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned, dataflow.ChandyLamport, dataflow.Adaptive}

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
	if err := o.checkForceAligned(); err != nil {
		return f.usageError("%s", err)
	}
	if o.measure {
		return runMeasure(f, o)
	}
	if err := makeOut(o.out); err != nil {
		return f.fail(exitUsage, err)
	}
	var err error
	if o.sink, err = openFlowSink(o); err != nil {
		return f.fail(exitUsage, err)
	}
	defer o.sink.close()
	rows, err := flowRuns(f, o, runtimeNamed(o.runtime))
	if err != nil {
		return f.fail(exitFail, err)
	}
	return flowReport(f, o, rows)
}

// runtimeNamed is the runtime --runtime names: memory (Run) or tcp
// (RunTCP).
func runtimeNamed(name string) runner {
	if name == "memory" {
		return run.Run
	}
	return run.RunTCP
}

// makeOut creates --out, if given, once checkOut found it usable.
func makeOut(out string) error {
	if out == "" {
		return nil
	}
	if err := checkOut(out); err != nil {
		return err
	}
	return os.MkdirAll(out, 0o755)
}

// flowRuns runs the demo for every protocol and, with --out, writes its
// trace.
func flowRuns(f *cmdFlags, o flowOptions, rt runner) ([]flowRow, error) {
	var rows []flowRow
	for _, mode := range flowModes {
		f.errorf("%s: running", mode)
		row, err := flowProtocol(o, mode, rt)
		if err == nil && o.out != "" {
			err = flowTrace(f, o, mode, rt)
		}
		if err == nil {
			err = o.sink.writeTrace(mode)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", mode, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// flowReport prints the table (and, with --out, writes it to
// DIR/flow.txt) and returns the exit status.
func flowReport(f *cmdFlags, o flowOptions, rows []flowRow) int {
	var b bytes.Buffer
	failed := writeFlowTable(&b, o, rows)
	_, _ = f.stdout.Write(b.Bytes())
	if o.out != "" {
		path := filepath.Join(o.out, "flow.txt")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return f.fail(exitFail, err)
		}
		fmt.Fprintf(f.stdout, "wrote %s/: %s.jsonl (barrier traces: markerwave audit, markerwave export --diagram), %s-sink.jsonl (sink traces: markerwave audit) and flow.txt\n", o.out, joinModes(tracedModes), strings.ReplaceAll(joinModes(flowModes), ".jsonl", "-sink.jsonl"))
	}
	if failed > 0 {
		return exitFail
	}
	return exitOK
}

func joinModes(modes []dataflow.Mode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = m.String()
	}
	return strings.Join(s, ".jsonl, ")
}

// writeFlowTable writes the pipeline, a row per protocol and the verdict
// to w, and returns how many protocols did not restore exactly once.
func writeFlowTable(w io.Writer, o flowOptions, rows []flowRow) int {
	total := o.par * o.records
	fmt.Fprintf(w, "pipeline: %d sources x %s, %d maps, a keyed shuffle into %d aggregations (one slowed to %v a record), a sink; buffers of %d; %s runtime; a snapshot every %v\n",
		o.par, plural(o.records, "record"), o.par, o.par, o.slow, o.capacity, o.runtime, o.every)
	fmt.Fprintf(w, "the sink: two-phase commit into %s, a job per protocol, its rows queried back after the restore\n\n", o.sink.where())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "protocol\tsnapshots\tcheckpoint p50\tlongest alignment\tchannel state\tfailed at\trestored from\tsink recovery\tqueried back\toutput")
	failed := 0
	for _, r := range rows {
		verdict := fmt.Sprintf("exactly once (%s)", plural(total, "record"))
		if !r.ok {
			verdict = "WRONG: " + r.why
			failed++
		}
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%s\t%s at the sink\tsnapshot %d\t%s\t%s\t%s\n", r.mode, r.snaps, r.ckpt.Round(time.Microsecond),
			r.align.Round(time.Microsecond), plural(r.channel, "record"), plural(r.atFailure, "record"), r.restored, o.sink.recovery[r.mode], r.queried, verdict)
	}
	_ = tw.Flush()
	writeSwitches(w, o, rows)
	if failed > 0 {
		fmt.Fprintf(w, "\n%d of %d protocols did not restore exactly once\n", failed, len(rows))
	} else {
		fmt.Fprintf(w, "\nevery protocol restored from its latest complete snapshot and ran on to the failure-free output, every record at the sink once\n")
	}
	return failed
}

// tracedModes are the protocols tla/BarrierSnapshots.tla has, whose runs
// flow --out traces (the Chandy-Lamport marker wave is the marker
// protocol of tla/ChandyLamport.tla, on a dataflow graph: no barrier
// trace).
var tracedModes = []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned, dataflow.Adaptive}

// traceGraph is the graph of flow's traced runs, one
// tla/BarrierSnapshots.tla takes (every operator one output): --par
// sources, each feeding its own map, all maps fanning into one
// aggregation (the slow one), a sink.
func traceGraph(o flowOptions, mode dataflow.Mode) (*dataflow.Graph, error) {
	g := dataflow.Graph{Cap: o.capacity, Mode: mode}
	agg := 2 * o.par
	for i := range o.par {
		g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: fmt.Sprintf("S%d", i+1), Kind: dataflow.Source, Budget: o.records})
		g.Edges = append(g.Edges, dataflow.EdgeSpec{From: i, To: o.par + i}, dataflow.EdgeSpec{From: o.par + i, To: agg})
	}
	for i := range o.par {
		g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: fmt.Sprintf("M%d", i+1), Kind: dataflow.Operator})
	}
	g.Nodes = append(g.Nodes, dataflow.NodeSpec{Name: "A", Kind: dataflow.Operator}, dataflow.NodeSpec{Name: "K", Kind: dataflow.Sink})
	g.Edges = append(g.Edges, dataflow.EdgeSpec{From: agg, To: agg + 1})
	return dataflow.NewGraph(g)
}

// forceAlign force-aligns --force-aligned's edges of g in the adaptive
// mode (usage checked them against the pipeline; none in a traced run's
// graph, which has other names).
func (o flowOptions) forceAlign(g *dataflow.Graph) (*dataflow.Graph, error) {
	if g.Mode != dataflow.Adaptive || o.forceAligned == "" {
		return g, nil
	}
	edges, err := parseEdges(o.forceAligned)
	if err != nil {
		return nil, err
	}
	return g.ForceAlign(edges)
}

// flowTrace runs traceGraph for mode with a tracer attached and writes
// the barrier trace to --out/<mode>.jsonl: one snapshot (the trace
// format, like tla/BarrierSnapshots.tla, has one), injected once a
// quarter of the records were emitted, the failure --fail-after records
// later, the restore from the snapshot and the run to the end.
func flowTrace(f *cmdFlags, o flowOptions, mode dataflow.Mode, rt runner) error {
	if !slices.Contains(tracedModes, mode) {
		f.errorf("%s: no barrier trace (tla/BarrierSnapshots.tla and tla/BarrierAdaptive.tla have the aligned, unaligned and adaptive protocols)", mode)
		return nil
	}
	g, err := traceGraph(o, mode)
	if err != nil {
		return err
	}
	path := filepath.Join(o.out, mode.String()+".jsonl")
	h := spec.BarrierHeader{Drained: true, Source: "markerwave flow",
		Note: fmt.Sprintf("%s, %d sources x %s fanning into one aggregation, buffers of %d, %s runtime", mode, o.par, plural(o.records, "record"), o.capacity, o.runtime)}
	if err := writeBarrierTrace(path, g, h, func(tr *dataflow.Tracer) error { return tracedRun(o, g, tr, rt) }); err != nil {
		return err
	}
	f.errorf("%s: wrote %s", mode, path)
	return nil
}

// writeBarrierTrace writes the barrier trace of g's runs to path: header
// h, then every step of the clusters run attaches the tracer to.
func writeBarrierTrace(path string, g *dataflow.Graph, h spec.BarrierHeader, run func(*dataflow.Tracer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer file.Close()
	tr, err := dataflow.NewTracer(file, g, h)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := run(tr); err != nil {
		return fmt.Errorf("the traced run: %w", err)
	}
	if err := tr.Flush(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return file.Close()
}

// tracedRun is flowTrace's run: to the failure, then restored to the end.
func tracedRun(o flowOptions, g *dataflow.Graph, tr *dataflow.Tracer, rt runner) error {
	total := o.par * o.records
	slow := map[int]time.Duration{2 * o.par: o.slow}
	c := dataflow.NewCluster(g, nil)
	tr.Attach(c)
	res, err := rt(context.Background(), c, run.Options{InjectAt: total / 4, FailAfter: o.failAfter.or(total / 4), Throttle: slow, Timeout: o.timeout,
		AlignedTimeout: o.alignedTimeout})
	if err != nil || !res.Failed {
		return err // a run that ended before its failure is traced whole
	}
	if res.Latest() == nil {
		return errors.New("the failure came before the snapshot completed")
	}
	r, err := dataflow.RestoreCluster(g, res.Latest(), nil)
	if err != nil {
		return err
	}
	tr.Restore(r)
	_, err = rt(context.Background(), r, run.Options{InjectAt: -1, FailAfter: -1, Throttle: slow, Timeout: o.timeout})
	return err
}

// flowProtocol runs the demo for one protocol: the reference run, the run
// with snapshots and a failure, the restored run, and the comparison.
func flowProtocol(o flowOptions, mode dataflow.Mode, rt runner) (flowRow, error) {
	row := flowRow{mode: mode}
	g, logics, err := pipeline.Pipeline(o.par, o.records, o.capacity, mode)
	if err == nil {
		g, err = o.forceAlign(g)
	}
	if err != nil {
		return row, err
	}
	p := flowPlan{o: o, g: g.Successively(), logics: logics, rt: rt}
	want, err := p.reference()
	if err != nil {
		return row, fmt.Errorf("the reference run: %w", err)
	}
	c, res, err := p.failing()
	if err != nil {
		return row, err
	}
	row.measure(p.g, c, res)
	r, d, err := p.restored(res)
	if err != nil {
		return row, err
	}
	defer d.Store().Close()
	row.ok, row.why = exactlyOnce(r.Sink().Output(), o.par*o.records, sinkOutput(r), want)
	o.sink.verdict(&row, d, o.par*o.records)
	return row, nil
}

// flowPlan is one protocol's runs of the pipeline g.
type flowPlan struct {
	o      flowOptions
	g      *dataflow.Graph
	logics func() []dataflow.Logic
	rt     runner
}

// slow is the throttle on the slow aggregation (the last before the sink).
func (p flowPlan) slow() map[int]time.Duration {
	return map[int]time.Duration{len(p.g.Nodes) - 2: p.o.slow}
}

// sinkOutput is the pipeline sink's latest count per key.
func sinkOutput(c *dataflow.Cluster) map[int64]int64 {
	return c.Sink().Logic().(*pipeline.Sink).Latest
}

// reference runs the pipeline without snapshots and returns its output.
func (p flowPlan) reference() (map[int64]int64, error) {
	ref := dataflow.NewCluster(p.g, p.logics())
	_, err := p.rt(context.Background(), ref, run.Options{InjectAt: -1, FailAfter: -1, Timeout: p.o.timeout})
	return sinkOutput(ref), err
}

// failing runs the pipeline with snapshots every --every until its
// failure, --fail-after records at the sink after the second snapshot.
func (p flowPlan) failing() (*dataflow.Cluster, *run.Result, error) {
	c := dataflow.NewCluster(p.g, p.logics())
	d, _, err := p.o.sink.driver(p.g, nil)
	if err != nil {
		return nil, nil, err
	}
	defer d.Store().Close() // the sink dies with the failure
	d.KillAfterPreCommit(p.o.killSink)
	res, err := p.rt(context.Background(), c, run.Options{InjectAt: 0, Interval: p.o.every, FailAfter: p.o.failAfter.or(p.o.par * p.o.records / 4), FailFrom: 2,
		Throttle: p.slow(), Timeout: p.o.timeout, AlignedTimeout: p.o.alignedTimeout, Sink: d})
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("the run with snapshots: %w", err)
	case !res.Failed:
		return nil, nil, fmt.Errorf("the run ended before its failure (%s completed): lower --fail-after or --every", plural(len(res.Checkpoints), "snapshot"))
	}
	return c, res, nil
}

// restored restores every node from the failed run's latest snapshot,
// and a sink (its recovery commits and aborts), and runs on to the end.
func (p flowPlan) restored(res *run.Result) (*dataflow.Cluster, *sink.Driver, error) {
	latest := res.Latest()
	r, err := dataflow.RestoreCluster(p.g, latest, p.logics())
	if err != nil {
		return nil, nil, fmt.Errorf("restore from snapshot %d: %w", latest.ID(), err)
	}
	d, rec, err := p.o.sink.driver(p.g, completeIDs(res))
	if err != nil {
		return nil, nil, fmt.Errorf("the sink's recovery: %w", err)
	}
	p.o.sink.recovery[p.g.Mode] = recovered(rec)
	if _, err := p.rt(context.Background(), r, run.Options{InjectAt: 0, Interval: p.o.every, FailAfter: -1, Throttle: p.slow(), Timeout: p.o.timeout,
		AlignedTimeout: p.o.alignedTimeout, Sink: d}); err != nil {
		d.Store().Close()
		return nil, nil, fmt.Errorf("the run restored from snapshot %d: %w", latest.ID(), err)
	}
	return r, d, nil
}

// measure fills the row's figures from the failing run: the snapshots
// and their checkpoint durations, alignments and channel state, the
// records at the sink at the failure and the snapshot restored from.
func (row *flowRow) measure(g *dataflow.Graph, c *dataflow.Cluster, res *run.Result) {
	var took []time.Duration
	row.switched = map[string]int{}
	for _, cp := range res.Checkpoints {
		took = append(took, cp.Took)
		row.align = max(row.align, slices.Max(cp.Align))
		all, _ := cp.Snapshot.ChannelRecords(g)
		row.channel += all
		row.switches(g, cp)
	}
	slices.Sort(took)
	row.snaps, row.ckpt = len(took), took[len(took)/2]
	for _, n := range c.Sink().Output() {
		row.atFailure += n
	}
	row.restored = res.Latest().ID()
}

// exactlyOnce checks the sink's output: every one of total records
// counted once, and the output equal to the reference's.
func exactlyOnce(counts map[dataflow.Key]int, total int, got, want map[int64]int64) (bool, string) {
	dups := duplicates(counts)
	switch {
	case len(counts) < total:
		return false, fmt.Sprintf("%s lost", plural(total-len(counts), "record"))
	case len(dups) > 0:
		first := slices.MinFunc(dups, func(a, b dataflow.Key) int { return cmp.Or(a.Src-b.Src, a.I-b.I) })
		return false, fmt.Sprintf("%s counted more than once (the first: source %d's record %d)", plural(len(dups), "record"), first.Src, first.I)
	case !maps.Equal(got, want):
		return false, "the output differs from the failure-free run's"
	}
	return true, ""
}

// duplicates are the records counted more than once.
func duplicates(counts map[dataflow.Key]int) []dataflow.Key {
	var dups []dataflow.Key
	for k, n := range counts {
		if n > 1 {
			dups = append(dups, k)
		}
	}
	return dups
}
