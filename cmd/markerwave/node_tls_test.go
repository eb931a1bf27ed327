package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/transport/tlstest"
)

const tlsEdit = `"count": 3}, "tls": {"cluster": "c1", "ca": "certs/ca.pem", "cert": "certs/{id}.pem", "key": "certs/{id}-key.pem"}`

// A config naming TLS files that are not there is bad input: exit 2,
// the file named; with the files, --check says what it loaded.
func TestNodeTLSFiles(t *testing.T) {
	path := nodeConfig(t, `"count": 3}`, tlsEdit)
	dir := filepath.Dir(path)
	code, out, errs := node("--config", path, "--id", "P1", "--check")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, `config: field "tls": P1: tls: CA file: open `+filepath.Join(dir, "certs", "ca.pem")+": no such file or directory")

	ca, err := tlstest.NewCA("c1")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "certs"), 0o755))
	_, _, _, err = ca.WriteFiles(filepath.Join(dir, "certs"), "P1")
	require.NoError(t, err)
	code, out, errs = node("--config", path, "--id", "P2", "--check")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, `config: field "tls": P2: tls: certificate `+filepath.Join(dir, "certs", "P2.pem"))
	code, out, errs = node("--config", path, "--id", "P1", "--check")
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, `  tls           mutual TLS, cluster "c1", CA `+filepath.Join(dir, "certs", "ca.pem")+"; P1's certificate and key loaded\n")
}

// Without "tls" a control address off loopback is refused at load.
func TestNodeControlOffLoopbackNeedsTLS(t *testing.T) {
	path := clusterConfig(t, `"127.0.0.1:7111"`, `"10.1.2.3:7111"`)
	code, _, errs := node("--config", path, "--check")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `config: field "nodes.P1.control": "10.1.2.3:7111" is not a loopback address (127.0.0.1, ::1 or localhost): without "tls" the control endpoint has no authentication`)
}
