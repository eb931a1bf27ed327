package main

import (
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
	if v := res.Violation; v != nil {
		return measured(res.Counts, v.Property, v.Kind)
	}
	return measured(res.Counts, "", "")
}

// exploreSink runs model/barrier's explorer of the two-phase-commit sink,
// with every core, on a model of tla/BarrierSink.tla (cfgPath).
func exploreSink(cfgPath string) (tla.Measure, error) {
	cfg, err := barrier.LoadSink(cfgPath)
	if err != nil {
		return tla.Measure{}, err
	}
	res, err := barrier.SinkExplore(cfg, engine.Options{})
	if err != nil {
		return tla.Measure{}, err
	}
	if v := res.Violation; v != nil {
		return measured(res.Counts, v.Property, v.Kind)
	}
	return measured(res.Counts, "", "")
}
