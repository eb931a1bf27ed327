package loopback

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The addresses are distinct loopback addresses, and free again once
// returned: each can be listened on.
func TestFreeAddrs(t *testing.T) {
	addrs, err := FreeAddrs(8)
	require.NoError(t, err)
	require.Len(t, addrs, 8)
	seen := map[string]bool{}
	for _, a := range addrs {
		assert.False(t, seen[a], "%s twice", a)
		seen[a] = true
		host, _, err := net.SplitHostPort(a)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1", host)
		ln, err := net.Listen("tcp", a)
		require.NoError(t, err, "%s is not free", a)
		require.NoError(t, ln.Close())
	}
}
