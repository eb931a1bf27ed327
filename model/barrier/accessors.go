package barrier

// Accessors for the explorer page (web/explorer), which shows the state
// on screen in the spec's terms.

// FairEnabled reports whether an action FairnessV (tla/BarrierSnapshots.tla
// lines 292-294) or FairnessA (tla/BarrierAdaptive.tla lines 190-192)
// makes weakly fair is enabled in st: where none is, a behaviour
// stuttering in st is fair, and BarriersComplete must hold there (the
// argument of doc.go).
func FairEnabled(cfg *Config, st *State) bool { return fairEnabled(cfg, st) }

// ModeOf is mode[n] (tla/BarrierAdaptive.tla line 57): unaligned once n
// switched.
func ModeOf(st *State, n int) SnapType { return modeType(st.Switched, n) }

// TakenType mirrors TakenType(n) (tla/BarrierAdaptive.tla line 71): the
// type of snapshot node n really took, aligned iff every input it aligns
// on had delivered its barrier when it recorded.
func TakenType(st *State, n int) SnapType {
	if st.CutAligned&(1<<n) != 0 {
		return TypeAligned
	}
	return TypeUnaligned
}
