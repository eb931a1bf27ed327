package app_test

import (
	"bytes"
	"fmt"
	"github.com/markerwave/markerwave/impl/core"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/spec"
)

// amount draws a positive amount, small or anywhere up to MaxInt64.
func amount() *rapid.Generator[int64] {
	return rapid.OneOf(rapid.Int64Range(1, 1000), rapid.Int64Range(1, math.MaxInt64), rapid.Just(int64(math.MaxInt64)))
}

// balance draws a balance, 0 and MaxInt64 included.
func balance() *rapid.Generator[int64] {
	return rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, 1000), rapid.Int64Range(0, math.MaxInt64), rapid.Just(int64(math.MaxInt64)))
}

// nearTransfer draws payloads that look like amounts: signs, leading
// zeros, spaces, decimals, exponents, quotes, huge numbers.
func nearTransfer() *rapid.Generator[[]byte] {
	return rapid.Custom(func(t *rapid.T) []byte {
		s := rapid.OneOf(
			rapid.StringMatching(`[+-]?0*[0-9]{1,21}`),
			rapid.StringMatching(`[ "]?[0-9]{1,5}(\.[0-9]*|e[0-9])?[ "]?`),
			rapid.String(),
		).Draw(t, "payload")
		return []byte(s)
	})
}

// DecodeTransfer (and Bank.Amount) accept exactly the payloads Transfer
// makes, and give back their amount, for every amount 1..MaxInt64.
func TestTransferCodec(t *testing.T) {
	b, err := app.NewBank(0)
	require.NoError(t, err)
	rapid.Check(t, func(t *rapid.T) {
		v := amount().Draw(t, "amount")
		got, err := app.DecodeTransfer(app.Transfer(v))
		require.NoError(t, err)
		require.Equal(t, v, got)

		p := nearTransfer().Draw(t, "p")
		got, err = b.Amount(p)
		canonical := false
		if n, perr := strconv.ParseInt(string(p), 10, 64); perr == nil && n > 0 && bytes.Equal(app.Transfer(n), p) {
			canonical = true
		}
		if canonical {
			require.NoError(t, err, "payload %q", p)
			require.Equal(t, string(p), strconv.FormatInt(got, 10))
		} else {
			require.Error(t, err, "payload %q accepted as %d", p, got)
		}
	})
}

// bankOp is one call of the closed bank system.
type bankOp int

const (
	opSend bankOp = iota
	opApply
	opSendMalformed
	opApplyMalformed
)

// In a closed system of banks, arbitrary sequences of sends (amounts up
// to, at and beyond the balance), applies of the transfers in flight, and
// calls with malformed payloads conserve the money: the balances plus the
// amounts in flight are the initial total. A send is accepted iff its
// amount is at most the balance; every refused call changes nothing.
func TestBankConservesMoney(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 4).Draw(t, "banks")
		limit := rapid.SampledFrom([]int64{100, math.MaxInt64 / int64(n)}).Draw(t, "limit")
		banks := make([]*app.Bank, n)
		var total int64
		for i := range banks {
			b, err := app.NewBank(rapid.Int64Range(0, limit).Draw(t, "initial"))
			require.NoError(t, err)
			banks[i] = b
			total += b.Balance()
		}
		type transfer struct {
			to      int
			payload []byte
			amt     int64
		}
		var inFlight []transfer
		balances := func() []int64 {
			out := make([]int64, n)
			for i, b := range banks {
				out[i] = b.Balance()
			}
			return out
		}
		for step := range rapid.IntRange(1, 60).Draw(t, "steps") {
			before := balances()
			op := rapid.SampledFrom([]bankOp{opSend, opSend, opApply, opSendMalformed, opApplyMalformed}).Draw(t, "op")
			from := rapid.IntRange(0, n-1).Draw(t, "from")
			to := (from + rapid.IntRange(1, n-1).Draw(t, "to")) % n
			to_ := spec.ProcID(fmt.Sprintf("P%d", to+1))
			switch op {
			case opSend:
				bal := banks[from].Balance()
				v := rapid.OneOf(rapid.Just(bal), rapid.Just(bal+1), rapid.Just(bal-1), amount()).Filter(func(v int64) bool { return v > 0 }).Draw(t, "amount")
				err := banks[from].Send(to_, app.Transfer(v))
				if v <= bal {
					require.NoError(t, err, "step %d: send of %d with balance %d", step, v, bal)
					inFlight = append(inFlight, transfer{to, app.Transfer(v), v})
					require.Equal(t, bal-v, banks[from].Balance(), "step %d: the send debits its amount", step)
				} else {
					require.ErrorContains(t, err, fmt.Sprintf("insufficient funds: balance %d, transfer of %d", bal, v), "step %d", step)
				}
			case opApply:
				if len(inFlight) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(inFlight)-1).Draw(t, "deliver")
				tr := inFlight[k]
				inFlight = slices.Delete(inFlight, k, k+1)
				bal := banks[tr.to].Balance()
				require.NoError(t, banks[tr.to].Apply("P0", tr.payload), "step %d", step)
				require.Equal(t, bal+tr.amt, banks[tr.to].Balance(), "step %d: the apply credits its amount", step)
			case opSendMalformed, opApplyMalformed:
				p := nearTransfer().Filter(func(p []byte) bool {
					v, err := strconv.ParseInt(string(p), 10, 64)
					return err != nil || v <= 0 || !bytes.Equal(app.Transfer(v), p)
				}).Draw(t, "malformed")
				var err error
				if op == opSendMalformed {
					err = banks[from].Send(to_, p)
				} else {
					err = banks[to].Apply("P0", p)
				}
				require.Error(t, err, "step %d: payload %q accepted", step, p)
			}
			after := balances()
			sum := int64(0)
			for _, b := range after {
				require.GreaterOrEqual(t, b, int64(0), "step %d: negative balance", step)
				sum += b
			}
			for _, tr := range inFlight {
				sum += tr.amt
			}
			require.Equal(t, total, sum, "step %d (%v): balances %v plus in flight is not the initial total", step, op, after)
			changed := 0
			for i := range after {
				if after[i] != before[i] {
					changed++
				}
			}
			require.LessOrEqual(t, changed, 1, "step %d: one call changed %d balances", step, changed)
		}
	})
}

// Apply credits any amount up to MaxInt64 in all; beyond, it refuses and
// changes nothing.
func TestBankApplyOverflow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bal := balance().Draw(t, "balance")
		v := amount().Draw(t, "amount")
		b, err := app.NewBank(bal)
		require.NoError(t, err)
		err = b.Apply("P2", app.Transfer(v))
		if bal <= math.MaxInt64-v {
			require.NoError(t, err)
			require.Equal(t, bal+v, b.Balance())
		} else {
			require.Error(t, err, "a credit of %d to balance %d, past MaxInt64, was accepted", v, bal)
			require.ErrorContains(t, err, fmt.Sprintf("transfer of %d from P2 overflows balance %d", v, bal))
			require.Equal(t, bal, b.Balance())
		}
		_, err = app.NewBank(-v)
		require.ErrorContains(t, err, fmt.Sprintf("negative initial balance %d", -v))
	})
}

// Restore(Capture()) restores every balance, 0 and MaxInt64 included, into
// a bank of any balance; BankBalance reads it.
func TestBankCaptureRestoreRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bal := balance().Draw(t, "balance")
		b, err := app.NewBank(bal)
		require.NoError(t, err)
		st, err := b.Capture()
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf(`{"bal":%d}`, bal), string(st))
		c, err := app.NewBank(balance().Draw(t, "other"))
		require.NoError(t, err)
		require.NoError(t, c.Restore(st))
		require.Equal(t, bal, c.Balance())
		got, err := app.BankBalance(st)
		require.NoError(t, err)
		require.Equal(t, bal, got)
	})
}

// malformedBankState draws a state Restore must refuse.
func malformedBankState() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.Int64Range(0, math.MaxInt64).Draw(t, "n")
		switch rapid.IntRange(0, 9).Draw(t, "kind") {
		case 0:
			return fmt.Sprintf(`{"bal":-%d}`, rapid.Int64Range(1, math.MaxInt64).Draw(t, "neg"))
		case 1:
			k := rapid.StringMatching(`[a-z_]{1,6}`).Filter(func(k string) bool { return !strings.EqualFold(k, "bal") }).Draw(t, "key")
			return fmt.Sprintf(`{"bal":%d,%q:%d}`, n, k, n)
		case 2:
			return fmt.Sprintf(`{"bal":%d}%s`, n, rapid.SampledFrom([]string{"{}", "1", `"x"`, "]", "x", "{"}).Draw(t, "trailing"))
		case 3:
			return fmt.Sprintf(`{"bal":"%d"}`, n)
		case 4:
			return fmt.Sprintf(`{"bal":%d.5}`, n)
		case 5:
			return fmt.Sprintf(`{"bal":%d0}`, uint64(math.MaxInt64)+rapid.Uint64Range(1, 1<<60).Draw(t, "beyond"))
		case 6:
			return rapid.SampledFrom([]string{``, `{}`, `null`, `[]`, `{"bal":null}`, `{"bal":true}`, `"bal"`, `{"bal":}`}).Draw(t, "shape")
		case 7:
			return fmt.Sprintf(`[{"bal":%d}]`, n)
		case 8:
			return fmt.Sprintf(`{"bal":%d`, n)
		default:
			return fmt.Sprintf(`{"bal":1e%d}`, rapid.IntRange(1, 30).Draw(t, "exp"))
		}
	})
}

// Restore refuses every malformed state and leaves the balance as it was;
// so does BankBalance.
func TestBankRestoreRefusesMalformed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bal := balance().Draw(t, "balance")
		b, err := app.NewBank(bal)
		require.NoError(t, err)
		st := malformedBankState().Draw(t, "state")
		require.Error(t, b.Restore([]byte(st)), "state %s accepted", st)
		require.Equal(t, bal, b.Balance(), "a refused restore changed the balance")
		_, err = app.BankBalance([]byte(st))
		require.Error(t, err)
	})
}

// A ring of tokens with one token: arbitrary sequences of passes (by the
// holder or not), deliveries, second tokens and malformed payloads keep
// exactly one token, held or in flight. Send is accepted iff the sender
// holds the token, Apply iff the receiver does not; every refused call
// changes nothing.
func TestTokenConserved(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5).Draw(t, "procs")
		holder := rapid.IntRange(0, n-1).Draw(t, "holder")
		toks := make([]*app.Token, n)
		for i := range toks {
			toks[i] = app.NewToken(i == holder)
		}
		inFlight := -1 // the receiver of the token in flight, or -1
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			before := make([]bool, n)
			for i, k := range toks {
				before[i] = k.HasToken()
			}
			i := rapid.IntRange(0, n-1).Draw(t, "proc")
			to := spec.ProcID(fmt.Sprintf("P%d", (i+1)%n+1))
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0: // pass the token on (whoever i is)
				err := toks[i].Send(to, app.TokenPayload)
				if before[i] {
					require.NoError(t, err, "step %d", step)
					inFlight = (i + 1) % n
				} else {
					require.ErrorContains(t, err, "not holding it", "step %d", step)
				}
			case 1: // deliver the token in flight
				if inFlight < 0 {
					continue
				}
				require.NoError(t, toks[inFlight].Apply("P0", app.TokenPayload), "step %d", step)
				inFlight = -1
			case 2: // a second token arrives at whoever holds one
				for _, k := range toks {
					if k.HasToken() {
						require.ErrorContains(t, k.Apply("P0", app.TokenPayload), "two tokens", "step %d", step)
					}
				}
			default: // malformed payloads, sent or received
				p := []byte(rapid.String().Filter(func(s string) bool { return s != string(app.TokenPayload) }).Draw(t, "payload"))
				_, err := toks[i].Amount(p)
				require.Error(t, err, "step %d: payload %q is a token", step, p)
				require.Error(t, toks[i].Send(to, p), "step %d: payload %q sent as the token", step, p)
				require.Error(t, toks[i].Apply("P0", p), "step %d: payload %q received as the token", step, p)
			}
			tokens := 0
			for _, k := range toks {
				tokens += int(k.Balance())
			}
			if inFlight >= 0 {
				tokens++
			}
			require.Equal(t, 1, tokens, "step %d: %d tokens", step, tokens)
		}
	})
}

// Restore(Capture()) restores both token states; malformed states are
// refused and change nothing.
func TestTokenCaptureRestore(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		has := rapid.Bool().Draw(t, "has")
		st, err := app.NewToken(has).Capture()
		require.NoError(t, err)
		other := app.NewToken(rapid.Bool().Draw(t, "other"))
		require.NoError(t, other.Restore(st))
		require.Equal(t, has, other.HasToken())
		held, err := app.TokenHeld(st)
		require.NoError(t, err)
		require.Equal(t, has, held)

		bad := rapid.SampledFrom([]string{``, `{}`, `null`, `{"has_token":null}`, `{"has_token":1}`, `{"has_token":"true"}`,
			`{"has_token":true,"x":1}`, `{"has_token":false}{}`, `[true]`, `{"has_token":tru}`}).Draw(t, "bad")
		require.Error(t, other.Restore([]byte(bad)), "state %s accepted", bad)
		require.Equal(t, has, other.HasToken(), "a refused restore changed the state")
	})
}

// topology draws a topology of 1..6 processes P1..Pn.
func topology() *rapid.Generator[*spec.Topology] {
	return rapid.Custom(func(t *rapid.T) *spec.Topology {
		n := rapid.IntRange(1, 6).Draw(t, "procs")
		if rapid.Bool().Draw(t, "complete") {
			return spec.Complete(n)
		}
		return spec.Ring(n)
	})
}

// BankParams.Check reports exactly the problems of arbitrary balances
// (computed here with exact arithmetic), by field; parameters without
// problems make each process's bank with its balance, and messages of
// every amount in 1..maxAmount, and no other.
func TestBankParamsCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		topo := topology().Draw(t, "topology")
		bal := rapid.OneOf(rapid.Int64Range(-5, 100), rapid.Int64Range(math.MaxInt64/4, math.MaxInt64), rapid.Int64Range(math.MinInt64, -1))
		if rapid.Bool().Draw(t, "huge") {
			// Four or more of these total 2^64 or more: an int64 sum
			// wraps, possibly to a non-negative value.
			bal = rapid.Int64Range(1<<62, math.MaxInt64)
		}
		balances := map[spec.ProcID]int64{}
		for _, p := range topo.Procs {
			if rapid.IntRange(0, 9).Draw(t, "has balance") > 0 {
				balances[p] = bal.Draw(t, "balance")
			}
		}
		for _, q := range rapid.SliceOfN(rapid.SampledFrom([]spec.ProcID{"P7", "P8", "Q", "p1"}), 0, 2).Draw(t, "foreign") {
			balances[q] = bal.Draw(t, "balance")
		}
		maxAmount := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(1, 200), rapid.Int64Range(1, math.MaxInt64)).Draw(t, "max amount")
		params := &app.BankParams{Balances: balances}

		var want []string
		var foreign []string
		for q := range balances {
			if !topo.Has(q) {
				foreign = append(foreign, string(q))
			}
		}
		slices.Sort(foreign)
		for _, q := range foreign {
			want = append(want, "balances."+q+": not a process of the topology")
		}
		total := new(big.Int)
		for _, p := range topo.Procs {
			v, ok := balances[p]
			switch {
			case !ok:
				want = append(want, "balances."+string(p)+": missing (every process needs an initial balance)")
			case v < 0:
				want = append(want, fmt.Sprintf("balances.%s: negative balance %d", p, v))
			default:
				total.Add(total, big.NewInt(v))
			}
		}
		switch {
		case !total.IsInt64():
			want = append(want, fmt.Sprintf("balances: the balances total more than %d, the largest int64", int64(math.MaxInt64)))
		case maxAmount > 0 && total.Sign() == 0:
			want = append(want, "balances: all zero: the workload's transfers have no money to move")
		case maxAmount > total.Int64():
			want = append(want, fmt.Sprintf("balances: total %d is less than the workload's max_amount %d: no such transfer can ever be made", total.Int64(), maxAmount))
		}
		require.Equal(t, want, problems(params, topo, maxAmount), "Check's problems for balances %v, max_amount %d", balances, maxAmount)
		if len(want) > 0 {
			return
		}
		for _, p := range topo.Procs {
			a, err := params.New(p)
			require.NoError(t, err)
			require.Equal(t, balances[p], core.InitialBalance(a))
		}
	})
}

// Message draws amounts in 1..maxAmount, every one of them for small
// maxAmount, and valid transfers for any.
func TestBankParamsMessage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxAmount := rapid.OneOf(rapid.Int64Range(1, 5), rapid.Int64Range(1, math.MaxInt64)).Draw(t, "max amount")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7))
		var params app.BankParams
		seen := map[int64]bool{}
		for range 200 {
			v, err := app.DecodeTransfer(params.Message(rng, maxAmount))
			require.NoError(t, err)
			require.True(t, v >= 1 && v <= maxAmount, "amount %d outside 1..%d", v, maxAmount)
			seen[v] = true
		}
		if maxAmount <= 5 {
			require.Len(t, seen, int(maxAmount), "not every amount in 1..%d drawn in 200 messages: %v", maxAmount, seen)
		}
	})
}

// TokenParams.Check reports a missing holder or one the topology lacks;
// otherwise exactly the holder starts with the token, and every message
// is the token.
func TestTokenParamsCheck(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		topo := topology().Draw(t, "topology")
		holder := rapid.SampledFrom(append([]spec.ProcID{"", "P9", "p1"}, topo.Procs...)).Draw(t, "holder")
		params := &app.TokenParams{Holder: holder}
		maxAmount := rapid.Int64Range(0, math.MaxInt64).Draw(t, "max amount")
		got := problems(params, topo, maxAmount)
		switch {
		case holder == "":
			require.Equal(t, []string{"holder: missing (the process that holds the token at the start)"}, got)
			return
		case !topo.Has(holder):
			require.Equal(t, []string{fmt.Sprintf("holder: %q is not a process of the topology", holder)}, got)
			return
		}
		require.Empty(t, got)
		tokens := 0
		for _, p := range topo.Procs {
			a, err := params.New(p)
			require.NoError(t, err)
			require.Equal(t, p == holder, core.InitialBalance(a) == 1, "%s", p)
			tokens += int(core.InitialBalance(a))
			amt, err := core.AmountOf(a, params.Message(nil, maxAmount))
			require.NoError(t, err)
			require.Equal(t, int64(1), amt)
		}
		require.Equal(t, 1, tokens)
	})
}
