package app

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"github.com/markerwave/markerwave/impl/core"
	"github.com/markerwave/markerwave/spec"
)

// Params are one application kind's parameters in a cluster config: the
// fields of its "app" object besides "kind" (bank: "balances"; token:
// "holder"), decoded strictly into the value the kind's Register'ed
// constructor returns. The runtime knows applications only through Params.
type Params interface {
	// Check reports every problem of the parameters for topology t by
	// calling bad with the field's JSON path within the "app" object
	// ("balances.P3") and what is wrong with it. maxAmount is the
	// workload's largest message amount (0 without a workload).
	Check(t *spec.Topology, maxAmount int64, bad func(field, problem string))
	// New returns process p's initial application.
	New(p spec.ProcID) (core.App, error)
	// Message returns the payload of one random workload message, drawing
	// from rng; maxAmount >= 1 bounds its amount.
	Message(rng *rand.Rand, maxAmount int64) []byte
}

// Declares is what Params add whose application states invariants over
// its global snapshots (bank: Conservation; token: OneToken).
type Declares interface {
	Invariants(t *spec.Topology) []spec.Invariant
}

// InvariantsOf are the invariants p declares for topology t, none if it
// declares none.
func InvariantsOf(p Params, t *spec.Topology) []spec.Invariant {
	if d, ok := p.(Declares); ok {
		return d.Invariants(t)
	}
	return nil
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]func() Params{}
)

// Register makes an application kind available to cluster configs under
// name: newParams returns a pointer to zero parameters, which the config's
// "app" object is decoded into. It panics if name is empty or taken, like
// database/sql.Register. This package registers "bank" and "token".
func Register(name string, newParams func() Params) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if name == "" || newParams == nil {
		panic("app: Register needs a name and a constructor")
	}
	if _, dup := kinds[name]; dup {
		panic(fmt.Sprintf("app: kind %q registered twice", name))
	}
	kinds[name] = newParams
}

// NewParams returns zero parameters of the kind registered as name, and
// false if there is none.
func NewParams(name string) (Params, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	f, ok := kinds[name]
	if !ok {
		return nil, false
	}
	return f(), true
}

// Kinds lists the registered kind names, sorted.
func Kinds() []string {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func init() {
	Register("bank", func() Params { return new(BankParams) })
	Register("token", func() Params { return new(TokenParams) })
}

// BankParams configure a cluster of Banks: every process's initial
// balance.
type BankParams struct {
	Balances map[spec.ProcID]int64 `json:"balances"`
}

// Check requires one non-negative balance per process, a total that fits
// in an int64, and, with a workload, money to move and transfers no larger
// than the total.
func (b *BankParams) Check(t *spec.Topology, maxAmount int64, bad func(field, problem string)) {
	for _, p := range slices.Sorted(maps.Keys(b.Balances)) {
		if !t.Has(p) {
			bad("balances."+string(p), "not a process of the topology")
		}
	}
	total, overflow := b.total(t, bad)
	switch {
	case overflow:
		bad("balances", fmt.Sprintf("the balances total more than %d, the largest int64", int64(math.MaxInt64)))
	case maxAmount > 0 && total == 0:
		bad("balances", "all zero: the workload's transfers have no money to move")
	case maxAmount > total:
		bad("balances", fmt.Sprintf("total %d is less than the workload's max_amount %d: no such transfer can ever be made", total, maxAmount))
	}
}

// total sums the processes' balances, calling bad for each one missing
// or negative; overflow reports a total past the largest int64.
func (b *BankParams) total(t *spec.Topology, bad func(field, problem string)) (total int64, overflow bool) {
	for _, p := range t.Procs {
		v, ok := b.Balances[p]
		switch {
		case !ok:
			bad("balances."+string(p), "missing (every process needs an initial balance)")
		case v < 0:
			bad("balances."+string(p), fmt.Sprintf("negative balance %d", v))
		case total > math.MaxInt64-v:
			overflow = true
		default:
			total += v
		}
	}
	return total, overflow
}

// New returns p's account.
func (b *BankParams) New(p spec.ProcID) (core.App, error) { return NewBank(b.Balances[p]) }

// Message is a transfer of 1..maxAmount.
func (b *BankParams) Message(rng *rand.Rand, maxAmount int64) []byte {
	return Transfer(1 + rng.Int64N(maxAmount))
}

// Invariants: the bank conserves the money of t's processes' balances.
func (b *BankParams) Invariants(t *spec.Topology) []spec.Invariant {
	var total int64
	for _, p := range t.Procs {
		total += b.Balances[p]
	}
	return []spec.Invariant{Conservation(total)}
}

// TokenParams configure a token ring: the process holding the token at
// the start.
type TokenParams struct {
	Holder spec.ProcID `json:"holder"`
}

// Check requires the holder to be a process of t.
func (k *TokenParams) Check(t *spec.Topology, _ int64, bad func(field, problem string)) {
	switch {
	case k.Holder == "":
		bad("holder", "missing (the process that holds the token at the start)")
	case !t.Has(k.Holder):
		bad("holder", fmt.Sprintf("%q is not a process of the topology", string(k.Holder)))
	}
}

// New returns p's token state: held by the holder only.
func (k *TokenParams) New(p spec.ProcID) (core.App, error) { return NewToken(p == k.Holder), nil }

// Message is the token (amount 1), whatever maxAmount.
func (k *TokenParams) Message(*rand.Rand, int64) []byte { return TokenPayload }

// Invariants: one token, always.
func (k *TokenParams) Invariants(*spec.Topology) []spec.Invariant {
	return []spec.Invariant{OneToken()}
}
