// Package app holds the applications markerwave nodes run: a bank whose
// balance is the spec's bal, and a token ring whose bal is 1 while the
// process holds the token. Both implement core.App, and core.Quantities
// (their abstraction to the spec's bal and amt); each declares its
// property of a global snapshot as a spec.Invariant (Conservation,
// OneToken; the Params declare them through Declares, InvariantsOf).
// Payloads and states are JSON so that they read well in traces. The registry (Register,
// NewParams, Kinds) makes application kinds available to cluster configs.
//
// Use it in this order: a cluster config names a kind; NewParams returns
// its zero Params, which the config's "app" object is decoded into; Check
// reports every problem of them; New builds each process's application;
// Message draws the workload's payloads; InvariantsOf gives the invariants
// every collected snapshot is checked against. The core then calls Send,
// Apply, Amount, Balance, Capture and Restore.
//
// What it promises:
//
//   - Payloads: a bank transfer is the canonical decimal of a positive
//     amount (Transfer; DecodeTransfer and Amount accept exactly the
//     payloads Transfer makes, for every amount 1..MaxInt64); the token
//     is the JSON string "token" (TokenPayload), amount 1. Every other
//     payload is refused by Amount, Send and Apply.
//   - Effects: Bank.Send debits the amount, refusing an overdraft (an
//     amount above the balance; the whole balance may be sent);
//     Bank.Apply credits it, refusing a balance above MaxInt64. A bank's
//     balance stays in 0..MaxInt64. Token.Send requires holding the
//     token and gives it up; Token.Apply takes it, refusing a second
//     token. So in a closed system of banks (tokens) the balances plus
//     the amounts sent and not yet applied are constant, whatever the
//     sequence of calls.
//   - Refusal: every refused call (payload, overdraft, overflow, token
//     not held, two tokens, malformed state) returns an error saying why
//     and leaves the application's state exactly as it was.
//   - States: Capture encodes the state ({"bal":N}, {"has_token":B});
//     Restore(Capture()) restores it, for every state. Restore (and
//     BankBalance, TokenHeld) decode strictly (spec.DecodeStrict: unknown
//     fields, trailing data, wrong JSON kinds are errors) and refuse a
//     state without its field, a negative balance or one beyond int64.
//   - Registry: Register panics on an empty name, a nil constructor or a
//     name taken; NewParams returns fresh parameters on every call, and
//     false for an unknown kind; Kinds lists every registered kind,
//     sorted. "bank" and "token" are registered.
//   - Parameters: BankParams.Check reports, by JSON path, each balance of
//     a process the topology lacks, each process without a balance, each
//     negative balance, balances totalling more than MaxInt64, and with a
//     workload (maxAmount > 0) balances all zero or a total below
//     maxAmount; Message draws amounts in 1..maxAmount, each possible.
//     TokenParams.Check reports a missing holder or one the topology
//     lacks; exactly the holder starts with the token.
package app
