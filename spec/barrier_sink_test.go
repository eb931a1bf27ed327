package spec

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The sink's trace actions are distinct and are not barrier actions; its
// properties are manifest properties, each once.
func TestSinkVocabulary(t *testing.T) {
	barrier := []string{BarrierEmit, BarrierInject, BarrierProcess, BarrierRecvBarrier, BarrierRestore}
	seen := map[string]bool{}
	for _, a := range SinkActions {
		assert.False(t, seen[a], "%s twice", a)
		seen[a] = true
		assert.NotContains(t, barrier, a)
	}
	assert.Len(t, SinkActions, 6)
	for _, p := range slices.Concat(SinkInvariants, SinkTemporal) {
		assert.Contains(t, ManifestProperties, p)
	}
	assert.Equal(t, []Property{PropSinkTypeOK, PropNoDuplicateOutput, PropExactlyOnceOutput, PropCommittedOnlyComplete}, SinkInvariants)
}
