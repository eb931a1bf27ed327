package snapshot

import "github.com/markerwave/markerwave/spec"

// CutSeqs exposes cutSeqs to the external tests.
func CutSeqs(g *Global) []spec.ChanCut { return g.cutSeqs() }
