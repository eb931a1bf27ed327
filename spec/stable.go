package spec

import "fmt"

// StablePredicate is one entry of the spec's catalogue of stable properties
// (tla/ChandyLamport.tla, StableCatalogue): once true in a run, true forever.
type StablePredicate struct {
	Name  string // "Terminated", "Conserved" or "RcvdAtLeast"
	Proc  ProcID // RcvdAtLeast only
	K     int    // RcvdAtLeast only
	Total int64  // Conserved only: the money the system holds (TotalMoney)
}

func (sp StablePredicate) String() string {
	if sp.Name == "RcvdAtLeast" {
		return fmt.Sprintf("RcvdAtLeast(%s, %d)", string(sp.Proc), sp.K)
	}
	return sp.Name
}

// Holds evaluates the predicate on g. budget maps each process to its
// application-send budget (TLA+ Budget).
func (sp StablePredicate) Holds(g GlobalState, budget map[ProcID]int) bool {
	switch sp.Name {
	case "Terminated":
		return Terminated(g, budget)
	case "Conserved":
		return g.Total() == sp.Total
	case "RcvdAtLeast":
		return g.Procs[sp.Proc].Rcvd >= sp.K
	}
	return false
}

// Terminated mirrors TLA+ Terminated(st): every process has spent its
// budget and no application message is in flight.
func Terminated(g GlobalState, budget map[ProcID]int) bool {
	for p, l := range g.Procs {
		if l.Sent < budget[p] {
			return false
		}
	}
	for _, ms := range g.Chans {
		if len(ms) > 0 {
			return false
		}
	}
	return true
}

// StableCatalogue mirrors TLA+ StableCatalogue: Terminated, Conserved
// (balances plus amounts in flight equal total, true initially), and
// RcvdAtLeast(p, k) for every process p and 1 <= k <= maxRcvd.
func StableCatalogue(procs []ProcID, maxRcvd int, total int64) []StablePredicate {
	cat := []StablePredicate{{Name: "Terminated"}, {Name: "Conserved", Total: total}}
	for _, p := range procs {
		for k := 1; k <= maxRcvd; k++ {
			cat = append(cat, StablePredicate{Name: "RcvdAtLeast", Proc: p, K: k})
		}
	}
	return cat
}
