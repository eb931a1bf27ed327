package pgtest

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A port taken between its pick and the server's bind (by an outgoing
// connection under load, say) does not leave Start waiting out its
// minute: the server exits at once, and Start starts it on another port.
func TestStartRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken.Addr().(*net.TCPAddr).Port, nil
		}
		return freePort()
	}
	t.Cleanup(func() { pickPort = freePort })
	start := time.Now()
	s := Require(t, func() (*Server, error) { return Start(Options{}) })
	defer s.Stop()
	assert.Equal(t, 2, calls, "picked again after the taken port")
	assert.NotEqual(t, taken.Addr().(*net.TCPAddr).Port, s.Port)
	assert.Less(t, time.Since(start), 30*time.Second, "not the minute of a server that never answers")
	_, err = s.NewDB("retried")
	require.NoError(t, err, "the server on the new port serves")
}

// Three taken ports in a row: Start gives up, naming the port and quoting
// the server's log.
func TestStartNamesTakenPorts(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	pickPort = func() (int, error) { return port, nil }
	t.Cleanup(func() { pickPort = freePort })
	RequireBin(t)
	_, err = Start(Options{})
	require.Error(t, err)
	assert.ErrorIs(t, err, errPortTaken)
	assert.Contains(t, err.Error(), "could not bind")
}

// TestBinNamesABadPGBin: MARKERWAVE_PG_BIN naming a folder without the
// server's binaries is an error naming the variable and the binary, not
// a server that fails to start with fork/exec's words.
func TestBinNamesABadPGBin(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MARKERWAVE_PG_BIN", dir)
	_, err := Bin()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MARKERWAVE_PG_BIN="+dir+" holds no initdb")
	_, err = Start(Options{})
	require.Error(t, err, "Start refuses it too")
	assert.Contains(t, err.Error(), "MARKERWAVE_PG_BIN=")
	t.Setenv("MARKERWAVE_PG_BIN", "")
	real, err := Bin()
	if err != nil {
		return // no server here to name
	}
	t.Setenv("MARKERWAVE_PG_BIN", real)
	got, err := Bin()
	require.NoError(t, err, "a folder that holds them is taken")
	assert.Equal(t, real, got)
}
