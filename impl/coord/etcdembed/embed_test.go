package etcdembed

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A port taken between its pick and etcd's bind (by an outgoing
// connection under load, say) does not fail Start: it starts again on new
// ports and serves.
func TestStartRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if err == nil && calls == 1 {
			ports[0] = taken.Addr().(*net.TCPAddr).Port
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	s, err := Start(Config{})
	require.NoError(t, err)
	defer s.Stop()
	assert.Equal(t, 2, calls, "picked again after the taken port")
	assert.NotEqual(t, taken.Addr().String(), s.Addr())
}

// A port named in the Config and taken is an error naming it: no other
// port would be the member the caller asked for.
func TestStartNamesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = Start(Config{ClientPort: taken.Addr().(*net.TCPAddr).Port})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "etcdembed: start: listen tcp "+taken.Addr().String()+": bind: address already in use")
}
