package barrier

// FairEnabled reports whether an action FairnessV (tla/BarrierSnapshots.tla
// lines 292-294) or FairnessA (tla/BarrierAdaptive.tla lines 131-133)
// makes weakly fair is enabled in st: where none is, a behaviour
// stuttering in st is fair, and BarriersComplete must hold there (the
// argument of doc.go). The explorer page asks it of the state on screen.
func FairEnabled(cfg *Config, st *State) bool { return fairEnabled(cfg, st) }
