package run

import (
	"context"
	"os"
	"testing"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
)

func BenchmarkZZTCPOnly(b *testing.B) {
	proto := os.Getenv("ZZPROTO")
	if proto == "" {
		proto = "none"
	}
	rt := RunTCP
	if os.Getenv("ZZMEM") != "" {
		rt = Run
	}
	for b.Loop() {
		_, _, opt, _ := tradeoffSetup(b, "pipeline", false, proto)
		g, logics, _ := pipeline.Pipeline(4, 20000, 256, dataflow.Aligned)
		g = g.Successively()
		c := dataflow.NewCluster(g, logics())
		res, err := rt(context.Background(), c, opt)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(80000)/res.Elapsed.Seconds(), "rec/s")
	}
}
