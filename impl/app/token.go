package app

import (
	"bytes"
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// TokenPayload is the token as a payload (amount 1).
var TokenPayload = []byte(`"token"`)

// Token is one process of a token ring: it holds the token or not. Its
// abstract balance is 1 while it holds the token, so the spec's money
// conservation is token conservation.
type Token struct {
	has bool
}

// NewToken returns a process that holds the token iff has.
func NewToken(has bool) *Token { return &Token{has: has} }

// HasToken reports whether the process holds the token.
func (t *Token) HasToken() bool { return t.has }

// Balance is 1 while holding the token, else 0.
func (t *Token) Balance() int64 {
	if t.has {
		return 1
	}
	return 0
}

// Amount is 1 for the token payload.
func (t *Token) Amount(p []byte) (int64, error) {
	if !bytes.Equal(p, TokenPayload) {
		return 0, fmt.Errorf("token: payload %q is not the token %s", truncate(p), TokenPayload)
	}
	return 1, nil
}

// Send passes the token on; it requires holding it.
func (t *Token) Send(to spec.ProcID, p []byte) error {
	if _, err := t.Amount(p); err != nil {
		return err
	}
	if !t.has {
		return fmt.Errorf("token: cannot send the token to %s: not holding it", string(to))
	}
	t.has = false
	return nil
}

// Apply takes the token; receiving it while holding one means two tokens.
func (t *Token) Apply(from spec.ProcID, p []byte) error {
	if _, err := t.Amount(p); err != nil {
		return err
	}
	if t.has {
		return fmt.Errorf("token: received a token from %s while already holding one (two tokens)", string(from))
	}
	t.has = true
	return nil
}

type tokenState struct {
	HasToken *bool `json:"has_token"`
}

// Capture encodes the state as {"has_token":B}.
func (t *Token) Capture() ([]byte, error) {
	if t.has {
		return []byte(`{"has_token":true}`), nil
	}
	return []byte(`{"has_token":false}`), nil
}

// Restore reads a state made by Capture, strictly.
func (t *Token) Restore(state []byte) error {
	var s tokenState
	if err := decodeStrict(state, &s); err != nil {
		return fmt.Errorf("token: restore: %w", err)
	}
	if s.HasToken == nil {
		return fmt.Errorf("token: restore: state %q has no has_token", truncate(state))
	}
	t.has = *s.HasToken
	return nil
}

// TokenHeld decodes a captured token state.
func TokenHeld(state []byte) (bool, error) {
	var t Token
	if err := t.Restore(state); err != nil {
		return false, err
	}
	return t.has, nil
}
