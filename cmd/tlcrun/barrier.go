package main

import (
	"fmt"
	"math"
	"runtime"

	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/model/engine"
	"github.com/markerwave/markerwave/tla"
)

// exploreBarrier runs model/barrier's explorer, with every core, on a
// model of tla/BarrierSnapshots.tla (cfgPath).
func exploreBarrier(cfgPath string) (tla.Measure, error) {
	cfg, err := barrier.Load(cfgPath)
	if err != nil {
		return tla.Measure{}, err
	}
	res, err := barrier.Explore(cfg, engine.Options{})
	if err != nil {
		return tla.Measure{}, err
	}
	got := tla.Measure{
		Distinct:  res.Distinct,
		Generated: res.Generated,
		Depth:     int64(res.Depth),
		Seconds:   math.Round(res.Duration.Seconds()*1000) / 1000,
		Version:   runtime.Version(),
	}
	if v := res.Violation; v != nil {
		if v.Property == "" {
			return got, fmt.Errorf("the Go explorer reports a %s", v.Kind)
		}
		got.Violation = v.Property
	}
	return got, nil
}
