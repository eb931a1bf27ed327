package app_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/impl/core"
)

var (
	_ core.App = (*app.Bank)(nil)
	_ core.App = (*app.Token)(nil)
)

func TestBank(t *testing.T) {
	_, err := app.NewBank(-1)
	require.ErrorContains(t, err, "negative initial balance -1")

	b, err := app.NewBank(100)
	require.NoError(t, err)
	assert.Equal(t, int64(100), b.Balance())

	require.NoError(t, b.Send("P2", app.Transfer(30)))
	assert.Equal(t, int64(70), b.Balance())
	err = b.Send("P2", app.Transfer(71))
	require.ErrorContains(t, err, "insufficient funds: balance 70, transfer of 71 to P2")
	assert.Equal(t, int64(70), b.Balance())
	require.NoError(t, b.Apply("P2", app.Transfer(5)))
	assert.Equal(t, int64(75), b.Balance())

	for _, bad := range []string{"", "0", "-5", "+5", "05", " 5", "5.0", "x", `"5"`} {
		_, err := b.Amount([]byte(bad))
		assert.Error(t, err, "payload %q", bad)
		assert.Error(t, b.Send("P2", []byte(bad)), "payload %q", bad)
		assert.Error(t, b.Apply("P2", []byte(bad)), "payload %q", bad)
		assert.Equal(t, int64(75), b.Balance())
	}
	amt, err := b.Amount(app.Transfer(42))
	require.NoError(t, err)
	assert.Equal(t, int64(42), amt)

	big, _ := app.NewBank(math.MaxInt64 - 1)
	require.ErrorContains(t, big.Apply("P1", app.Transfer(2)), "overflows")
	assert.Equal(t, int64(math.MaxInt64-1), big.Balance())
}

func TestBankCaptureRestore(t *testing.T) {
	b, _ := app.NewBank(123)
	st, err := b.Capture()
	require.NoError(t, err)
	assert.Equal(t, `{"bal":123}`, string(st))
	bal, err := app.BankBalance(st)
	require.NoError(t, err)
	assert.Equal(t, int64(123), bal)

	c, _ := app.NewBank(0)
	require.NoError(t, c.Restore(st))
	assert.Equal(t, int64(123), c.Balance())
	for _, bad := range []string{``, `{}`, `{"bal":-1}`, `{"bal":1,"x":2}`, `{"bal":1}{}`, `[1]`, `{"bal":"1"}`} {
		assert.Error(t, c.Restore([]byte(bad)), "state %q", bad)
		assert.Equal(t, int64(123), c.Balance())
	}
}

func TestToken(t *testing.T) {
	tk := app.NewToken(false)
	assert.Equal(t, int64(0), tk.Balance())
	require.ErrorContains(t, tk.Send("P3", app.TokenPayload), "not holding it")
	require.NoError(t, tk.Apply("P1", app.TokenPayload))
	assert.True(t, tk.HasToken())
	assert.Equal(t, int64(1), tk.Balance())
	require.ErrorContains(t, tk.Apply("P1", app.TokenPayload), "two tokens")
	assert.True(t, tk.HasToken())
	_, err := tk.Amount([]byte(`"coin"`))
	require.ErrorContains(t, err, "is not the token")
	require.Error(t, tk.Send("P3", []byte(`1`)))
	assert.True(t, tk.HasToken())

	st, err := tk.Capture()
	require.NoError(t, err)
	assert.Equal(t, `{"has_token":true}`, string(st))
	require.NoError(t, tk.Send("P3", app.TokenPayload))
	assert.False(t, tk.HasToken())
	require.NoError(t, tk.Restore(st))
	assert.True(t, tk.HasToken())
	held, err := app.TokenHeld([]byte(`{"has_token":false}`))
	require.NoError(t, err)
	assert.False(t, held)
	for _, bad := range []string{``, `{}`, `{"has_token":1}`, `{"has_token":true,"x":1}`} {
		assert.Error(t, tk.Restore([]byte(bad)), "state %q", bad)
		assert.True(t, tk.HasToken())
	}
}
