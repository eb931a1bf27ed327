package loopback

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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

// The ports are below the kernel's ephemeral range, where neither a
// listener on port 0 nor an outgoing connection gets one, and a port is
// never handed out twice while reserved, however many calls ask.
func TestFreeAddrsReserved(t *testing.T) {
	lo, hi := portRange()
	if hi-lo < 1000 {
		t.Skipf("the ephemeral range starts at %d: no room below it, the kernel picks", hi)
	}
	seen := map[string]bool{}
	for range 20 {
		addrs, err := FreeAddrs(10)
		require.NoError(t, err)
		for _, a := range addrs {
			assert.False(t, seen[a], "%s handed out twice", a)
			seen[a] = true
			_, p, err := net.SplitHostPort(a)
			require.NoError(t, err)
			port, err := strconv.Atoi(p)
			require.NoError(t, err)
			assert.True(t, port >= lo && port < hi, "%d outside %d-%d", port, lo, hi-1)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(p)
	assert.GreaterOrEqual(t, port, hi, "the kernel's own pick is in its ephemeral range, above FreeAddrs' ports")
}

// A reservation older than ReserveFor is taken over; a fresh one is not.
func TestReserveTakesOverStale(t *testing.T) {
	dir := t.TempDir()
	ok, err := reserve(dir, 12345)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = reserve(dir, 12345)
	require.NoError(t, err)
	assert.False(t, ok, "held")
	old := time.Now().Add(-ReserveFor - time.Minute)
	require.NoError(t, os.Chtimes(filepath.Join(dir, "12345"), old, old))
	ok, err = reserve(dir, 12345)
	require.NoError(t, err)
	assert.True(t, ok, "ran out")
	ok, err = reserve(dir, 12345)
	require.NoError(t, err)
	assert.False(t, ok, "taken over, so held again")
}
