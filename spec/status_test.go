package spec

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Status's values are the specs' Status set, in both modules.
func TestStatusIsTheSpecsStatus(t *testing.T) {
	re := regexp.MustCompile(`(?m)^Status\s*==\s*\{"(\w+)", "(\w+)", "(\w+)"\}`)
	for _, m := range []string{"../tla/ChandyLamport.tla", "../tla/BarrierSnapshots.tla"} {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		got := re.FindStringSubmatch(string(b))
		require.NotNil(t, got, "%s has no Status line", m)
		assert.Equal(t, []string{Idle.String(), Recording.String(), Done.String()}, got[1:], m)
	}
}
