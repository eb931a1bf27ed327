package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Simulate stops before the next behaviour once Stop is closed, and says
// so; the same seed without Stop runs every behaviour.
func TestSimulateStop(t *testing.T) {
	cfg, err := Load("../tla/MCRing.cfg")
	require.NoError(t, err)
	stop := make(chan struct{})
	close(stop)
	r, err := Simulate(cfg, SimOptions{Seed: 7, Traces: 50, Stop: stop})
	require.NoError(t, err)
	assert.True(t, r.Canceled)
	assert.Zero(t, r.Traces)
	assert.Nil(t, r.Violation)

	r, err = Simulate(cfg, SimOptions{Seed: 7, Traces: 50})
	require.NoError(t, err)
	assert.False(t, r.Canceled)
	assert.Equal(t, 50, r.Traces)
	assert.Nil(t, r.Violation)
}
