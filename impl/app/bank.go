package app

import (
	"fmt"
	"math"
	"strconv"

	"github.com/markerwave/markerwave/spec"
)

// Bank is one account. Transfers move a positive amount; a send debits,
// a receive credits.
type Bank struct {
	bal int64
}

// NewBank returns an account holding initial (which must be >= 0).
func NewBank(initial int64) (*Bank, error) {
	if initial < 0 {
		return nil, fmt.Errorf("bank: negative initial balance %d", initial)
	}
	return &Bank{bal: initial}, nil
}

// Transfer encodes a transfer of amount as a payload: its decimal digits,
// a JSON number.
func Transfer(amount int64) []byte { return strconv.AppendInt(nil, amount, 10) }

// DecodeTransfer reads a payload made by Transfer. Only the canonical form
// of a positive amount is accepted.
func DecodeTransfer(p []byte) (int64, error) {
	v, err := strconv.ParseInt(string(p), 10, 64)
	if err != nil || strconv.FormatInt(v, 10) != string(p) {
		return 0, fmt.Errorf("bank: transfer payload %q is not a decimal amount", truncate(p))
	}
	if v <= 0 {
		return 0, fmt.Errorf("bank: transfer amount %d is not positive", v)
	}
	return v, nil
}

// Balance is the account's balance (the spec's bal).
func (b *Bank) Balance() int64 { return b.bal }

// Amount is the transfer's amount.
func (b *Bank) Amount(p []byte) (int64, error) { return DecodeTransfer(p) }

// Send debits the transfer; it refuses an overdraft.
func (b *Bank) Send(to spec.ProcID, p []byte) error {
	v, err := DecodeTransfer(p)
	if err != nil {
		return err
	}
	if v > b.bal {
		return fmt.Errorf("bank: insufficient funds: balance %d, transfer of %d to %s", b.bal, v, string(to))
	}
	b.bal -= v
	return nil
}

// Apply credits a received transfer.
func (b *Bank) Apply(from spec.ProcID, p []byte) error {
	v, err := DecodeTransfer(p)
	if err != nil {
		return err
	}
	if b.bal > math.MaxInt64-v {
		return fmt.Errorf("bank: transfer of %d from %s overflows balance %d", v, string(from), b.bal)
	}
	b.bal += v
	return nil
}

type bankState struct {
	Bal *int64 `json:"bal"`
}

// Capture encodes the account as {"bal":N}.
func (b *Bank) Capture() ([]byte, error) {
	out := append(make([]byte, 0, 32), `{"bal":`...)
	out = strconv.AppendInt(out, b.bal, 10)
	return append(out, '}'), nil
}

// Restore reads a state made by Capture, strictly.
func (b *Bank) Restore(state []byte) error {
	var s bankState
	if err := decodeStrict(state, &s); err != nil {
		return fmt.Errorf("bank: restore: %w", err)
	}
	if s.Bal == nil {
		return fmt.Errorf("bank: restore: state %q has no bal", truncate(state))
	}
	if *s.Bal < 0 {
		return fmt.Errorf("bank: restore: negative balance %d", *s.Bal)
	}
	b.bal = *s.Bal
	return nil
}

// BankBalance decodes the balance of a captured bank state.
func BankBalance(state []byte) (int64, error) {
	var b Bank
	if err := b.Restore(state); err != nil {
		return 0, err
	}
	return b.bal, nil
}

// decodeStrict reads an application state through spec.DecodeStrict
// (unknown fields, trailing data and wrong JSON kinds are errors, named by
// field) and says which state it was.
func decodeStrict(b []byte, v any) error {
	if err := spec.DecodeStrict(b, v); err != nil {
		return fmt.Errorf("malformed state %q: %w", truncate(b), err)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
