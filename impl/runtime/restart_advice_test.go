package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRestartAdvice: a node that stops on its own for a crashed peer
// names who restarts the cluster: the operator by default, its
// supervisor when it has one (ProcessOptions.Restarter).
func TestRestartAdvice(t *testing.T) {
	assert.Equal(t, "restart every node from the latest complete snapshot (markerwave recover)", (&process{}).restartAdvice())
	p := &process{opt: ProcessOptions{Restarter: "its supervisor (markerwave supervise)"}}
	assert.Equal(t, "its supervisor (markerwave supervise) restarts every node from the latest complete snapshot", p.restartAdvice())
}
