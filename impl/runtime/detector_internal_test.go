package runtime

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/wire"
	"github.com/markerwave/markerwave/spec"
)

// TestDetectorBoundProperty checks the detector's rule on a clock of its
// own, free of scheduling: a peer whose frames arrive at most two
// intervals apart (what its heartbeats guarantee) is never suspected, and
// a peer that falls silent is suspected at least Timeout and at most
// DetectorConfig.Bound after its last frame (one never heard from: at
// least Startup, at most one tick later). A frame heard again withdraws
// the suspicion at the next tick.
func TestDetectorBoundProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		iv := time.Duration(rapid.IntRange(1, 50).Draw(t, "interval ms")) * time.Millisecond
		cfg := DetectorConfig{Interval: iv, Timeout: iv*3 + time.Duration(rapid.Int64Range(0, int64(20*iv)).Draw(t, "timeout above 3 intervals"))}
		cfg.Startup = time.Duration(rapid.Int64Range(0, int64(4*cfg.Timeout)).Draw(t, "startup"))
		start := time.Unix(1000, 0)
		d := newDetector(DetectorConfig{}, 7, spec.Complete(2), "P1", start) // no ticker: this test is the clock
		d.cfg = cfg

		// Live: frames at most 2 intervals apart, for a while.
		var frames []time.Duration
		at := time.Duration(0)
		for range rapid.IntRange(0, 40).Draw(t, "frames") {
			at += time.Duration(rapid.Int64Range(1, int64(2*iv)).Draw(t, "gap"))
			frames = append(frames, at)
		}
		last := time.Duration(0) // the peer counts as heard at the start
		if len(frames) > 0 {
			last = frames[len(frames)-1]
		}
		var suspectedAt time.Duration
		k := 0
		for tick := iv; suspectedAt == 0; tick += iv {
			for k < len(frames) && frames[k] <= tick {
				if rapid.Bool().Draw(t, "heartbeat") {
					d.control("P2", wire.Frame{Kind: wire.KindHeartbeat, Seq: 9})
				} else {
					d.heardOn("P2")
				}
				k++
			}
			suspect, trust := d.check(start.Add(tick))
			if len(trust) > 0 {
				t.Fatalf("trusted again at %v, never suspected", tick)
			}
			if len(suspect) > 0 {
				if len(frames) > 0 && tick <= frames[len(frames)-1] {
					t.Fatalf("a live peer (frames every <= 2 intervals) suspected at %v", tick)
				}
				suspectedAt = tick
				d.suspected[suspect[0]] = start.Add(tick)
			}
			if tick > last+10*cfg.Bound()+cfg.Startup {
				t.Fatalf("a peer silent since %v is not suspected by %v", last, tick)
			}
		}
		// A peer never heard from is trusted for Startup (at least
		// Timeout) from the start, to the next tick.
		lo, hi := last+cfg.Timeout, last+cfg.Bound()
		if len(frames) == 0 {
			lo = max(cfg.Startup, cfg.Timeout)
			hi = lo + iv
		}
		if suspectedAt > hi {
			t.Fatalf("suspected at %v, after %v (last frame at %v, %+v)", suspectedAt, hi, last, cfg)
		}
		if suspectedAt < lo {
			t.Fatalf("suspected at %v, before %v (last frame at %v, %+v)", suspectedAt, lo, last, cfg)
		}

		// Heard again: trusted at the next tick.
		d.heardOn("P2")
		_, trust := d.check(start.Add(suspectedAt + iv))
		if len(trust) != 1 {
			t.Fatalf("heard again after the suspicion, not trusted at the next tick")
		}
	})
}
