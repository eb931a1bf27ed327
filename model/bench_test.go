package model

import (
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExploreLarge explores MCLarge (197,273 distinct states) with
// every core. It reports distinct states per second and the peak heap in
// use (sampled every 20 ms, garbage included) and the mean size of a
// stored state encoding.
func BenchmarkExploreLarge(b *testing.B) {
	benchExplore(b, Options{})
}

// BenchmarkExploreScaling explores MCLarge with 1 and 2 workers, storing
// states (exact) or fingerprints, and with the whole frontier spilled to
// disk (a 1-byte frontier budget). Besides BenchmarkExploreLarge's
// metrics it reports, in fingerprint mode, the fingerprint set's bytes
// per distinct state (8-byte slots at most 3/4 full, outside the Go heap)
// and, when spilling, the frontier's bytes per state (the encoding and its
// length, as written to disk).
func BenchmarkExploreScaling(b *testing.B) {
	for _, mode := range []string{"exact", "fingerprint", "fingerprint-spill-all"} {
		for _, w := range []int{1, 2} {
			b.Run(mode+"/workers="+strconv.Itoa(w), func(b *testing.B) {
				opt := Options{Workers: w, Fingerprint: mode != "exact", TempDir: b.TempDir()}
				if mode == "fingerprint-spill-all" {
					opt.FrontierMemory = 1
				}
				benchExplore(b, opt)
			})
		}
	}
}

func benchExplore(b *testing.B, opt Options) {
	cfg, err := Load("../tla/MCLarge.cfg")
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	var last *Result
	var elapsed, cpu time.Duration
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
		cpu0 := cpuTime()
		res, err := Explore(cfg, opt)
		cpu += cpuTime() - cpu0
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if res.Violation != nil {
			b.Fatalf("MCLarge violates %s", res.Violation.Property)
		}
		if res.Distinct != 197_273 {
			b.Fatalf("MCLarge: %d distinct states, TLC finds 197,273", res.Distinct)
		}
		last = res
		elapsed += res.Duration
	}
	n := float64(last.Distinct)
	b.ReportMetric(n*float64(b.N)/elapsed.Seconds(), "distinct-states/s")
	// On a shared machine the wall-clock rate depends on the others'
	// load; the rate per CPU-second of this process much less.
	b.ReportMetric(n*float64(b.N)/cpu.Seconds(), "distinct-states/cpu-s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peak)/n, "peak-heap-B/state")
	if !last.Fingerprints {
		b.ReportMetric(float64(last.StateBytes)/n, "encoded-B/state")
		return
	}
	b.ReportMetric(float64(last.StateBytes)/n, "fpset-B/state")
	if opt.FrontierMemory == 1 {
		b.ReportMetric(float64(last.SpilledBytes)/(n-1), "frontier-B/state") // every state but the initial one is spilled once
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
