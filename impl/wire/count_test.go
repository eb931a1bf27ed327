package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/markerwave/markerwave/spec"
)

func TestCountByChan(t *testing.T) {
	c12, c21 := spec.Channel{From: "P1", To: "P2"}, spec.Channel{From: "P2", To: "P1"}
	envs := []Envelope{{Chan: c21}, {Chan: c12}, {Chan: c21}, {Chan: c12}, {Chan: c12}}
	assert.Equal(t, "P1->P2: 3, P2->P1: 2", CountByChan(envs))
	assert.Empty(t, CountByChan(nil))
}
