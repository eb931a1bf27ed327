package model

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// BenchmarkExploreLarge explores MCLarge (197,273 distinct states) with
// every core. It reports distinct states per second and the peak heap in
// use (sampled every 20 ms, garbage included) and the mean size of a
// stored state encoding.
func BenchmarkExploreLarge(b *testing.B) {
	cfg, err := LoadModel("../tla/MCLarge.cfg")
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	var distinct, stateBytes int64
	var elapsed time.Duration
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak {
					peak = ms.HeapInuse
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		res, err := Explore(cfg, Options{})
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if res.Violation != nil {
			b.Fatalf("MCLarge violates %s", res.Violation.Property)
		}
		distinct, stateBytes = res.Distinct, res.StateBytes
		elapsed += res.Duration
	}
	b.ReportMetric(float64(distinct)*float64(b.N)/elapsed.Seconds(), "distinct-states/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peak)/float64(distinct), "peak-heap-B/state")
	b.ReportMetric(float64(stateBytes)/float64(distinct), "encoded-B/state")
}
