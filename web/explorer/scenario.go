package explorer

import (
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/spec"
	"github.com/markerwave/markerwave/tla"
)

// Scenario is one of the page's ready-made models: a TLC model of tla/
// (Model), or constants of its own (the P1/P2 puzzle has no TLC model).
type Scenario struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	About string `json:"about"`
	// Model is the TLC model file the constants come from, "" for
	// Constants.
	Model string `json:"model,omitempty"`
	// Constants are the scenario's constants as the page's editor shows
	// them.
	Constants Constants `json:"constants"`
	// Article is the article's run of the scenario, as a schedule (see
	// Token), "" if the scenario has none.
	Article string `json:"article,omitempty"`
	// Variant is the specification the scenario opens under: the one
	// whose actions it needs (a crash needs tla/ChandyLamportFaults.tla).
	Variant model.Variant `json:"variant"`
}

// Variants are the specifications the page offers, with what each
// demonstrates: tla/ChandyLamport.tla's Spec, the three counter-example
// modules, the lossy channels of tla/ChandyLamportLossy.tla and the
// specifications of tla/ChandyLamportFaults.tla (crashes need a scenario
// whose MaxCrash is positive: "Two accounts, one crash").
var Variants = []struct {
	Variant model.Variant `json:"variant"`
	Title   string        `json:"title"`
	About   string        `json:"about"`
}{
	{model.VariantSpec, "Chandy-Lamport", "tla/ChandyLamport.tla: FIFO channels, channel recording, marker forwarding"},
	{model.VariantNonFIFO, "non-FIFO channels", "tla/ChandyLamportNonFIFO.tla: any queued message may be received, so a transfer can overtake a marker (an orphan: ConsistentCut)"},
	{model.VariantNoRecord, "no channel recording", "tla/ChandyLamportNoRecord.tla: messages in flight are never recorded, so money in transit vanishes from the snapshot (Conservation)"},
	{model.VariantNoForward, "no marker forwarding", "tla/ChandyLamportNoForward.tla: a process records on its first marker but forwards none, so the snapshot never completes (SnapshotsComplete)"},
	{model.VariantLossy, "lossy channels", "tla/ChandyLamportLossy.tla: a channel may lose the message at its head (Lose) and nothing retransmits it, so a lost marker leaves the snapshot incomplete forever (SnapshotsComplete)"},
	{model.VariantFaults, "crashes, detector, recovery", "tla/ChandyLamportFaults.tla SpecFaults: processes may crash, a failure detector suspects the crashed, every snapshot that cannot complete is aborted, and the system recovers from the latest complete snapshot (SnapshotsEnd and every invariant hold)"},
	{model.VariantNoDetector, "crashes, no detector", "tla/ChandyLamportFaults.tla SpecNoDetector: processes may crash but nothing suspects them, so nothing aborts and a snapshot waiting on a crashed process stays pending forever (SnapshotsEnd)"},
	{model.VariantRecoverAny, "recovery from any snapshot", "tla/ChandyLamportFaults.tla SpecRecoverAny: recovery may restore an aborted or incomplete snapshot, which loses or creates money (MoneyConserved, RecoveredFromComplete)"},
}

// validVariant reports whether v is one of Variants.
func validVariant(v model.Variant) bool {
	for _, x := range Variants {
		if x.Variant == v {
			return true
		}
	}
	return false
}

// scenarioSource is a scenario before its constants are read.
type scenarioSource struct {
	id, title, about, model, article string
	constants                        *Constants
	variant                          model.Variant // "" for model.VariantSpec
}

// sources are the page's scenarios, in the order it lists them.
var sources = []scenarioSource{
	{id: "two-accounts", title: "Two accounts ($150)", model: "MCTwoBank",
		about:   "The article's two accounts: P1 holds $100, P2 $50, and $30 transfers go both ways while P1 takes a snapshot. Every complete snapshot totals $150; the article's run records the $30 in flight on P2->P1.",
		article: "S1x30.I1.M0.R1.M1"},
	{id: "token-ring", title: "Token ring (one token)", model: "MCRing",
		about:   "The article's three-process token ring P1 -> P2 -> P3 -> P1: P1 initiates without the token, P2 passes it to P3 ahead of the marker. Every snapshot holds exactly one token.",
		article: "I1.S1x1.M0.R1.M1.M2"},
	{id: "puzzle", title: "The P1/P2 puzzle",
		about:   "The article's puzzle: $20 from P2 is in transit when P1 initiates; P1's recorded memory is pre-m21 ($100), P2's post-send ($30), and P2->P1 holds the $20.",
		article: "S1x20.I1.R1.M0.M1",
		constants: &Constants{
			Procs: []spec.ProcID{"P1", "P2"}, Chans: [][2]spec.ProcID{{"P1", "P2"}, {"P2", "P1"}},
			InitBal: map[spec.ProcID]int64{"P1": 100, "P2": 50}, Amount: []int64{20},
			Budget: map[spec.ProcID]int{"P1": 0, "P2": 1}, Initiator: map[spec.SnapID]spec.ProcID{1: "P1"},
		}},
	{id: "concurrent", title: "Concurrent snapshots", model: "MCConcurrent",
		about: "Three processes, fully connected, one unit of money, two snapshots running at once (P1 initiates 1, P3 initiates 2): their markers share the channels and each completes on its own."},
	{id: "crash", title: "Two accounts, one crash", model: "MCFaultsTwoBank",
		about:   "The two accounts with one crash and one recovery allowed, under a specification of crashes: P1 initiates, P2 crashes before the marker reaches it. With the failure detector P1 suspects P2 and aborts the snapshot; without one the snapshot stays pending forever.",
		variant: model.VariantFaults},
}

// Scenarios lists the page's scenarios with their constants.
func Scenarios() ([]Scenario, error) { return scenarios() }

// scenarios reads the scenarios' TLC models once.
var scenarios = sync.OnceValues(func() ([]Scenario, error) {
	out := make([]Scenario, 0, len(sources))
	for _, src := range sources {
		sc := Scenario{ID: src.id, Title: src.title, About: src.about, Model: src.model, Article: src.article, Variant: src.variant}
		if sc.Variant == "" {
			sc.Variant = model.VariantSpec
		}
		if src.model != "" {
			cfg, err := loadModel(src.model)
			if err != nil {
				return nil, err
			}
			sc.Constants = constantsOf(cfg)
		} else {
			sc.Constants = *src.constants
		}
		out = append(out, sc)
	}
	return out, nil
})

// scenario finds scenario id.
func scenario(id string) (Scenario, error) {
	all, err := Scenarios()
	if err != nil {
		return Scenario{}, err
	}
	for _, sc := range all {
		if sc.ID == id {
			return sc, nil
		}
	}
	return Scenario{}, fmt.Errorf("no scenario %q", id)
}

// loadModel reads TLC model name (MCTwoBank) from the embedded tla/ files.
func loadModel(name string) (*model.Config, error) {
	read := func(path string) (string, error) {
		b, err := fs.ReadFile(tla.Models, path)
		return string(b), err
	}
	cfgSrc, err := read(name + ".cfg")
	if err != nil {
		return nil, err
	}
	tlaSrc, err := read(name + ".tla")
	if err != nil {
		return nil, err
	}
	return model.Parse("tla/"+name+".cfg", cfgSrc, "tla/"+name+".tla", tlaSrc)
}

// Constants are a model's constants (model.Constants) as the page edits
// them: lists and maps of ids, in JSON.
type Constants struct {
	Procs     []spec.ProcID               `json:"procs"`
	Chans     [][2]spec.ProcID            `json:"chans"`
	InitBal   map[spec.ProcID]int64       `json:"init_bal"`
	Amount    []int64                     `json:"amount"`
	Budget    map[spec.ProcID]int         `json:"budget"`
	Initiator map[spec.SnapID]spec.ProcID `json:"initiator"`
	// The constants of tla/ChandyLamportFaults.tla, read by its
	// specifications only.
	MaxCrash       int  `json:"max_crash,omitempty"`
	MaxRecover     int  `json:"max_recover,omitempty"`
	FalseSuspicion bool `json:"false_suspicion,omitempty"`
}

// The limits on constants of one's own, which keep every step of the page
// quick in a browser. The page states them.
const (
	MaxProcs     = 6
	MaxSnaps     = 3
	MaxAmounts   = 3
	MaxBudgetSum = 12
	MaxFaults    = 2   // crashes, and recoveries
	MaxSteps     = 400 // the longest schedule a page runs
)

// Limits describes the limits for people.
func Limits() string {
	return fmt.Sprintf("at most %d processes, %d snapshots, %d amounts, a total budget of %d sends, %d crashes and %d recoveries, %d steps",
		MaxProcs, MaxSnaps, MaxAmounts, MaxBudgetSum, MaxFaults, MaxFaults, MaxSteps)
}

// constantsOf reads a model's constants back into the page's form.
func constantsOf(cfg *model.Config) Constants {
	k := Constants{
		Procs: slices.Clone(cfg.Topo.Procs), InitBal: map[spec.ProcID]int64{}, Amount: slices.Clone(cfg.Amount),
		Budget: map[spec.ProcID]int{}, Initiator: map[spec.SnapID]spec.ProcID{},
		MaxCrash: cfg.MaxCrash, MaxRecover: cfg.MaxRecover, FalseSuspicion: cfg.FalseSuspicion,
	}
	for _, c := range cfg.Topo.Chans {
		k.Chans = append(k.Chans, [2]spec.ProcID{c.From, c.To})
	}
	for i, p := range cfg.Topo.Procs {
		k.InitBal[p] = cfg.InitBal[i]
		k.Budget[p] = cfg.Budget[i]
	}
	for i, s := range cfg.Snap {
		k.Initiator[s] = cfg.Topo.Procs[cfg.Initiator[i]]
	}
	return k
}

// config builds the model of constants k under variant v, checking the
// page's limits first and then the spec's ASSUME (model.NewConfig). The
// model checks every invariant of the spec (spec.Invariants), or, for a
// specification of tla/ChandyLamportFaults.tla, those its positive TLC
// model MCFaultsTwoBank checks; the temporal property is checked by the
// session where the variant is fair.
func (k Constants) config(v model.Variant) (*model.Config, error) {
	if !validVariant(v) {
		return nil, fmt.Errorf("no variant %q: want one of %s", v, variantNames())
	}
	if err := k.checkLimits(); err != nil {
		return nil, err
	}
	invariants, err := invariantsOf(v)
	if err != nil {
		return nil, err
	}
	topo, err := k.topology()
	if err != nil {
		return nil, err
	}
	snaps := slices.Sorted(maps.Keys(k.Initiator))
	return model.NewConfig(model.Constants{
		Topo: topo, InitBal: k.InitBal, Amount: k.Amount, Budget: k.Budget, Snap: snaps, Initiator: k.Initiator,
		MaxCrash: k.MaxCrash, MaxRecover: k.MaxRecover, FalseSuspicion: k.FalseSuspicion,
	}, v, invariants, nil)
}

// checkLimits checks the page's limits (Limits).
func (k Constants) checkLimits() error {
	budget := 0
	for _, b := range k.Budget {
		budget += b
	}
	switch {
	case len(k.Procs) > MaxProcs:
		return fmt.Errorf("%d processes: the page runs at most %d", len(k.Procs), MaxProcs)
	case len(k.Initiator) > MaxSnaps:
		return fmt.Errorf("%d snapshots: the page runs at most %d", len(k.Initiator), MaxSnaps)
	case len(k.Amount) > MaxAmounts:
		return fmt.Errorf("%d amounts: the page runs at most %d", len(k.Amount), MaxAmounts)
	case budget > MaxBudgetSum:
		return fmt.Errorf("a total budget of %d sends: the page runs at most %d", budget, MaxBudgetSum)
	case k.MaxCrash > MaxFaults || k.MaxRecover > MaxFaults:
		return fmt.Errorf("max_crash %d and max_recover %d: the page runs at most %d of each", k.MaxCrash, k.MaxRecover, MaxFaults)
	}
	return nil
}

// invariantsOf are the invariants the page checks under variant v: the
// spec's (spec.Invariants), or for a specification of
// tla/ChandyLamportFaults.tla those of faultsModel.
func invariantsOf(v model.Variant) ([]spec.Property, error) {
	if !v.Faults() {
		return spec.Invariants, nil
	}
	faults, err := loadModel(faultsModel)
	if err != nil {
		return nil, err
	}
	return faults.Invariants, nil
}

// topology is the constants' topology; init_bal and budget name only its
// processes.
func (k Constants) topology() (*spec.Topology, error) {
	chans := make([]spec.Channel, 0, len(k.Chans))
	for _, c := range k.Chans {
		chans = append(chans, spec.Channel{From: c[0], To: c[1]})
	}
	topo, err := spec.NewTopology(k.Procs, chans)
	if err != nil {
		return nil, err
	}
	if err := namesProcs(topo, "init_bal", maps.Keys(k.InitBal)); err != nil {
		return nil, err
	}
	return topo, namesProcs(topo, "budget", maps.Keys(k.Budget))
}

// namesProcs checks that every process field names is one of topo's.
func namesProcs(topo *spec.Topology, field string, names iter.Seq[spec.ProcID]) error {
	for p := range names {
		if !topo.Has(p) {
			return fmt.Errorf("%s names %q, which is not a process", field, p)
		}
	}
	return nil
}

// faultsModel is the TLC model whose invariants the page checks under a
// specification of tla/ChandyLamportFaults.tla.
const faultsModel = "MCFaultsTwoBank"

// variantNames lists the variants for an error.
func variantNames() string {
	var names []string
	for _, x := range Variants {
		names = append(names, string(x.Variant))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
