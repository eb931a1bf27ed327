package explorer

import "encoding/json"

// Catalogue is what the page offers before a run starts: the scenarios,
// Chandy-Lamport and barrier, their specifications and the limits on
// constants of one's own. The WebAssembly's scenarios() replies with it,
// and the server renders it into index.html (First).
type Catalogue struct {
	Scenarios        []Scenario        `json:"scenarios"`
	Variants         any               `json:"variants"`
	BarrierScenarios []BarrierScenario `json:"barrier_scenarios"`
	BarrierVariants  []BarrierVariant  `json:"barrier_variants"`
	Limits           string            `json:"limits"`
}

// NewCatalogue reads the scenarios' models (once: Scenarios and
// BarrierScenarios keep them).
func NewCatalogue() (Catalogue, error) {
	sc, err := Scenarios()
	if err != nil {
		return Catalogue{}, err
	}
	bsc, err := BarrierScenarios()
	if err != nil {
		return Catalogue{}, err
	}
	return Catalogue{Scenarios: sc, Variants: Variants, BarrierScenarios: bsc, BarrierVariants: BarrierVariants, Limits: Limits()}, nil
}

// FirstPaint is what the page shows before its WebAssembly has started:
// the catalogue and the view of the first scenario's initial state, under
// its own specification, as the model renders it. The server computes it
// with the same Go model the WebAssembly runs, so that the page a browser
// first paints (or a headless screenshot takes) is the page, with the
// initial state's processes, channels, enabled actions and properties,
// not a notice that the model is loading.
type FirstPaint struct {
	Catalogue Catalogue `json:"catalogue"`
	View      any       `json:"view"`
}

// First is the page's FirstPaint, of catalogue cat (NewCatalogue), as
// JSON.
func First(cat Catalogue) ([]byte, error) {
	s, err := Start(cat.Scenarios[0].ID, "")
	if err != nil {
		return nil, err
	}
	v, err := s.Render()
	if err != nil {
		return nil, err
	}
	return json.Marshal(FirstPaint{Catalogue: cat, View: v})
}
