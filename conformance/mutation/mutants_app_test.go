package mutation

import "regexp"

func init() { mutants = append(mutants, appMutants...) }

// appMutants break impl/app's contract (its doc.go). Each is told apart
// from the original by an execution of impl/app's own tests:
//
//   - app-overdraft-exact: a send of exactly the balance; the original
//     debits it to 0, the mutant refuses it as an overdraft.
//   - app-apply-overflow: a credit that takes the balance past MaxInt64;
//     the original refuses it, the mutant wraps to a negative balance.
//   - app-restore-zero: restoring a captured balance of 0; the original
//     restores it, the mutant refuses it.
//   - app-token-apply-any: a non-holder receiving a payload that is not
//     the token; the original refuses it, the mutant takes it as a token.
//   - app-kinds-unsorted: three or more registered kinds; the original
//     lists them sorted, the mutant in map order.
//   - app-total-wraps: four balances of 2^62 (total 2^64); the original
//     reports that they total more than MaxInt64, the mutant's int64 sum
//     wraps to 0 and it reports nothing.
//   - app-conservation-no-flight: a snapshot with transfers in flight;
//     the original's Conservation counts them, the mutant's counts the
//     balances only and reports money lost.
var appMutants = []mutant{
	{
		Name: "app-conservation-no-flight",
		Rule: "the bank's Conservation over a global snapshot counts the transfers in flight with the balances",
		Doc:  "Conservation ignores the in-flight transfers (flight taken as 0)",
		Patches: []patch{{
			File: "impl/app/invariants.go",
			Old:  "\t\tflight, err := sumInFlight(s, DecodeTransfer)\n",
			New:  "\t\tflight, err := sumInFlight(spec.AppSnapshot{}, DecodeTransfer) // MUTANT app-conservation-no-flight: in-flight transfers not counted\n",
		}},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestConservationInvariant"}}},
		Expect: []expect{outputHas("TestConservationInvariant", "a snapshot with transfers in flight breaks Conservation",
			regexp.MustCompile(`the snapshot holds \d+ \(\d+ in balances \+ 0 in flight\)`))},
	},
	{
		Name: "app-overdraft-exact",
		Rule: "a bank refuses an overdraft, and only an overdraft: the whole balance may be sent",
		Doc:  "Bank.Send refuses a transfer equal to the balance (>= for >)",
		Patches: []patch{{
			File: "impl/app/bank.go",
			Old:  "\tif v > b.bal {\n",
			New:  "\tif v >= b.bal { // MUTANT app-overdraft-exact: sending the whole balance is refused\n",
		}},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestBankConservesMoney"}}},
		Expect: []expect{outputHas("TestBankConservesMoney", "a send of exactly the balance is refused",
			regexp.MustCompile(`step \d+: send of (\d+) with balance (\d+)\b`))},
	},
	{
		Name: "app-apply-overflow",
		Rule: "a bank's balance stays within 0..MaxInt64: a credit beyond is refused and changes nothing",
		Doc:  "Bank.Apply credits without the overflow check",
		Patches: []patch{{
			File: "impl/app/bank.go",
			Old:  "\tif b.bal > math.MaxInt64-v {\n",
			New:  "\tif b.bal < 0 && b.bal > math.MaxInt64-v { // MUTANT app-apply-overflow: the overflow check never fires\n",
		}},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestBankApplyOverflow"}}},
		Expect: []expect{outputHas("TestBankApplyOverflow", "a credit past MaxInt64 is accepted",
			regexp.MustCompile(`a credit of \d+ to balance \d+, past MaxInt64, was accepted`))},
	},
	{
		Name: "app-restore-zero",
		Rule: "Restore(Capture()) restores every state, a balance of 0 included",
		Doc:  "Bank.Restore refuses a balance of 0 as if it were negative (<= for <)",
		Patches: []patch{{
			File: "impl/app/bank.go",
			Old:  "\tif *s.Bal < 0 {\n",
			New:  "\tif *s.Bal <= 0 { // MUTANT app-restore-zero: an empty account cannot be restored\n",
		}},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestBankCaptureRestoreRoundTrip"}}},
		Expect: []expect{outputHas("TestBankCaptureRestoreRoundTrip", "a captured balance of 0 is refused",
			regexp.MustCompile(`bank: restore: negative balance 0`))},
	},
	{
		Name: "app-token-apply-any",
		Rule: "every payload that is not the token is refused by Apply, changing nothing",
		Doc:  "Token.Apply no longer checks the payload: any message makes a non-holder hold the token",
		Patches: []patch{{
			File: "impl/app/token.go",
			Old: "func (t *Token) Apply(from spec.ProcID, p []byte) error {\n" +
				"\tif _, err := t.Amount(p); err != nil {\n" +
				"\t\treturn err\n" +
				"\t}\n",
			New: "func (t *Token) Apply(from spec.ProcID, p []byte) error {\n" +
				"\t// MUTANT app-token-apply-any: the payload is not checked\n",
		}},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestTokenConserved"}}},
		Expect: []expect{outputHas("TestTokenConserved", "a payload that is not the token is received as the token",
			regexp.MustCompile(`step \d+: payload .* received as the token`))},
	},
	{
		Name: "app-kinds-unsorted",
		Rule: "Kinds lists every registered kind, sorted",
		Doc:  "Kinds returns the kinds in map iteration order",
		Patches: []patch{{
			File: "impl/app/registry.go",
			Old:  "\tsort.Strings(names)\n",
			New:  "\t// MUTANT app-kinds-unsorted: map order\n",
		}},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestRegistry"}}},
		Expect: []expect{outputHas("TestRegistry", "the kinds are not listed sorted",
			regexp.MustCompile(`Kinds is not every registered kind, sorted`))},
	},
	{
		Name: "app-total-wraps",
		Rule: "BankParams.Check reports balances totalling more than MaxInt64",
		Doc:  "the overflow of the balances' total is checked once, after an int64 sum that may have wrapped to a non-negative value",
		Patches: []patch{
			{
				File: "impl/app/registry.go",
				Old:  "\t\tcase total > math.MaxInt64-v:\n\t\t\toverflow = true\n",
				New:  "\t\t// MUTANT app-total-wraps: no overflow check while summing\n",
			},
			{
				File: "impl/app/registry.go",
				Old:  "\tswitch {\n\tcase overflow:\n",
				New:  "\toverflow = total < 0 // MUTANT app-total-wraps: checked after the sum\n\tswitch {\n\tcase overflow:\n",
			},
		},
		Runs: []goTest{{Pkg: "./impl/app", Tests: []string{"TestBankParamsCheck"}}},
		Expect: []expect{outputHas("TestBankParamsCheck", "balances totalling 2^64 or more are not reported",
			regexp.MustCompile(`Check's problems for balances map\[[^\]]*\], max_amount \d+`))},
	},
}
