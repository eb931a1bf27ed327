package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/dataflow/run"
)

// flow --measure: every protocol side by side in one run, with the slow
// stage (backpressure) and without, on both runtimes, no failure.

// measureProtocol is one column of the measurement: a protocol, and for
// the adaptive one its aligned timeout.
type measureProtocol struct {
	mode    dataflow.Mode
	timeout time.Duration
}

func (p measureProtocol) String() string {
	if p.mode == dataflow.Adaptive {
		return fmt.Sprintf("adaptive %v", p.timeout)
	}
	return p.mode.String()
}

// measureProtocols are aligned, unaligned and adaptive at 1, 10 and 100 ms.
var measureProtocols = []measureProtocol{{mode: dataflow.Aligned}, {mode: dataflow.Unaligned},
	{dataflow.Adaptive, time.Millisecond}, {dataflow.Adaptive, 10 * time.Millisecond}, {dataflow.Adaptive, 100 * time.Millisecond}}

// measured is one protocol's figures in one setting: the checkpoints'
// median and longest durations, the median and the longest of each
// checkpoint's longest time blocked, the channel-state bytes per
// checkpoint (mean), and the checkpoints in which some operator switched
// (out: on the output side, its barrier behind a full buffer).
type measured struct {
	p                          measureProtocol
	snaps, switched, out       int
	ckpt, worst, held, heldMax time.Duration
	bytes                      int
}

// runMeasure runs the measurement and prints the table and its two
// verdicts; exit 1 when a run failed.
func runMeasure(f *cmdFlags, o flowOptions) int {
	w := f.stdout
	fmt.Fprintf(w, "pipeline: %d sources x %s, %d maps, a keyed shuffle into %d aggregations, a sink; buffers of %d; a snapshot every %v, no failure\n",
		o.par, plural(o.records, "record"), o.par, o.par, o.capacity, o.every)
	for _, rt := range []string{"memory", "tcp"} {
		for _, slow := range []time.Duration{o.slow, 0} {
			ms, err := measureSetting(f, o, rt, slow)
			if err != nil {
				return f.fail(exitFail, err)
			}
			writeMeasured(w, rt, slow, o.pace, ms)
		}
	}
	return exitOK
}

// measureSetting runs every protocol on runtime rt with the slow stage
// at slow a record (0: none).
func measureSetting(f *cmdFlags, o flowOptions, rt string, slow time.Duration) ([]measured, error) {
	runner := runtimeNamed(rt)
	var ms []measured
	for _, p := range measureProtocols {
		f.errorf("measure: %s runtime, slow stage %v: %s", rt, slow, p)
		m, err := measureOne(o, runner, p, slow)
		if err != nil {
			return nil, fmt.Errorf("%s runtime, %s: %w", rt, p, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// measureOne runs the pipeline under protocol p to the end, a snapshot
// every --every, and measures its checkpoints.
func measureOne(o flowOptions, rt runner, p measureProtocol, slow time.Duration) (measured, error) {
	g, logics, err := pipeline.Pipeline(o.par, o.records, o.capacity, p.mode)
	if err == nil {
		g, err = o.forceAlign(g)
	}
	if err != nil {
		return measured{}, err
	}
	g = g.Successively()
	c := dataflow.NewCluster(g, logics())
	res, err := rt(context.Background(), c, run.Options{InjectAt: 0, Interval: o.every, FailAfter: -1, Timeout: o.timeout,
		Throttle: measureThrottle(g, slow, o.pace), AlignedTimeout: p.timeout})
	if err != nil {
		return measured{}, err
	}
	if len(res.Checkpoints) == 0 {
		return measured{}, fmt.Errorf("no checkpoint completed: raise --records or lower --every")
	}
	return measure(p, res), nil
}

// measureThrottle is the slow stage at slow a record, or without it (slow
// 0) the sources paced at pace a record.
func measureThrottle(g *dataflow.Graph, slow, pace time.Duration) map[int]time.Duration {
	if slow > 0 {
		return map[int]time.Duration{len(g.Nodes) - 2: slow}
	}
	th := map[int]time.Duration{}
	for i, n := range g.Nodes {
		if n.Kind == dataflow.Source {
			th[i] = pace
		}
	}
	return th
}

// measure computes p's figures from the run's checkpoints.
func measure(p measureProtocol, res *run.Result) measured {
	m := measured{p: p, snaps: len(res.Checkpoints)}
	var took, held []time.Duration
	for _, cp := range res.Checkpoints {
		took = append(took, cp.Took)
		longest, sw, out := time.Duration(0), false, false
		for _, c := range cp.Costs() {
			longest = max(longest, c.Blocked)
			m.bytes += c.Bytes
			sw, out = sw || c.Switched, out || c.OutTimeout
		}
		held = append(held, longest)
		m.switched += count(sw)
		m.out += count(out)
	}
	m.bytes /= m.snaps
	m.ckpt, m.worst, m.held, m.heldMax = median(took), slices.Max(took), median(held), slices.Max(held)
	return m
}

// count is 1 for true, 0 for false.
func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// median is the median of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2]
}

// writeMeasured writes one setting's table and its verdict: without
// backpressure, whether adaptive recorded no channel state; with it,
// whether adaptive's median checkpoint stayed within its timeout plus
// unaligned's median.
func writeMeasured(w io.Writer, rt string, slow, pace time.Duration, ms []measured) {
	bp := fmt.Sprintf("no slow stage, the sources paced at %v a record (no backpressure)", pace)
	if slow > 0 {
		bp = fmt.Sprintf("slow stage %v a record (backpressure)", slow)
	}
	fmt.Fprintf(w, "\n%s runtime, %s:\n", rt, bp)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "protocol\tsnapshots\tcheckpoint p50\tcheckpoint max\tblocked p50\tblocked max\tchannel bytes/ckpt\tswitched (output side)\tverdict")
	unaligned := ms[1].ckpt
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t%v\t%d\t%d (%d) of %d\t%s\n", m.p, m.snaps, round(m.ckpt), round(m.worst), round(m.held),
			round(m.heldMax), m.bytes, m.switched, m.out, m.snaps, m.verdict(slow > 0, unaligned))
	}
	_ = tw.Flush()
}

// verdict is the adaptive target in this setting, met or not.
func (m measured) verdict(backpressure bool, unaligned time.Duration) string {
	switch {
	case m.p.mode != dataflow.Adaptive:
		return "-"
	case backpressure && m.ckpt <= m.p.timeout+unaligned:
		return fmt.Sprintf("within timeout + unaligned (%v)", round(m.p.timeout+unaligned))
	case backpressure:
		return fmt.Sprintf("OVER timeout + unaligned (%v)", round(m.p.timeout+unaligned))
	case m.bytes == 0:
		return "no channel state"
	}
	return "CHANNEL STATE without backpressure"
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
