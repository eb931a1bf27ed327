//go:build !race

package run

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"github.com/markerwave/markerwave/impl/dataflow/sink/pgtest"
	"github.com/markerwave/markerwave/impl/dataflow/sink/sinkdb"
)

// The cost of exactly once to the outside world, side by side in one run
// (docs/sink.md): the pipeline (2 sources, 2 maps, a keyed shuffle into 2
// aggregations, a sink, sinkBenchRecords records a source, buffers of
// 8, aligned barriers, the in-memory runtime) with a snapshot every
// interval, writing its results nowhere (none: latency is emit to the
// sink), with the at-least-once sink into SQLite (latency: emit to
// written), and with the two-phase-commit sink into SQLite and into a
// real PostgreSQL (latency: emit to committed). Both stores durable:
// SQLite synchronous=FULL in WAL mode, PostgreSQL fsync=on. Run:
//
//	go test -run '^$' -bench BenchmarkSink -benchtime 1x -count 3 ./impl/dataflow/run
//
// Metrics: rec/s (records through the sink per second of the run), and
// p50-ms, p99-ms of the latency.

// sinkBenchRecords is how many records each source emits.
const sinkBenchRecords = 40000

func BenchmarkSink(b *testing.B) {
	pgtest.SharedOptions.Fsync = true
	for _, every := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		for _, kind := range []string{"none", "at-least-once-sqlite", "2pc-sqlite", "2pc-postgres"} {
			b.Run(fmt.Sprintf("interval=%v/sink=%s", every, kind), func(b *testing.B) {
				for range b.N {
					rate, p50, p99, snaps := sinkBenchRun(b, kind, every)
					b.ReportMetric(rate, "rec/s")
					b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
					b.ReportMetric(float64(snaps), "snapshots")
				}
			})
		}
	}
}

// sinkBenchRun is one run of the pipeline with sink kind.
func sinkBenchRun(b *testing.B, kind string, every time.Duration) (float64, time.Duration, time.Duration, int) {
	ctx := context.Background()
	g, logics, err := pipeline.Pipeline(2, sinkBenchRecords, 8, dataflow.Aligned)
	if err != nil {
		b.Fatal(err)
	}
	c := dataflow.NewCluster(g.Successively(), logics())
	opt := Options{InjectAt: 0, Interval: every, FailAfter: -1, Timeout: 5 * time.Minute}
	var d *sink.Driver
	if kind != "none" {
		d = sinkBenchDriver(b, kind)
		defer d.Store().Close()
		opt.Sink = d
	}
	res, err := Run(ctx, c, opt)
	if err != nil {
		b.Fatal(err)
	}
	lat := res.Latency
	if d != nil {
		lat = d.Latency()
	}
	slices.Sort(lat)
	if len(lat) != 2*sinkBenchRecords {
		b.Fatalf("%d latencies for %d records", len(lat), 2*sinkBenchRecords)
	}
	return float64(2*sinkBenchRecords) / res.Elapsed.Seconds(), percentile(lat, 0.5), percentile(lat, 0.99), len(res.Checkpoints)
}

// sinkBenchDriver is a started sink of kind, into a fresh database.
func sinkBenchDriver(b *testing.B, kind string) *sink.Driver {
	ctx := context.Background()
	var st sink.Store
	var err error
	if kind == "2pc-postgres" {
		st, err = sinkdb.OpenPostgres(ctx, pgtest.Shared(b), sinkdb.Config{})
	} else {
		st, err = sinkdb.OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"), sinkdb.Config{})
	}
	if err != nil {
		b.Fatal(err)
	}
	g := sink.ExactlyOnce
	if kind == "at-least-once-sqlite" {
		g = sink.AtLeastOnce
	}
	d := sink.NewDriver(ctx, st, g, 0)
	if _, err := d.Start(nil); err != nil {
		b.Fatal(err)
	}
	return d
}
