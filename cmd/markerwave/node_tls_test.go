package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// Without --id the CA, which every node shares, is checked all the
	// same (it passed with "ok" and looked loaded).
	code, out, errs = node("--config", path, "--check")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, `config: field "tls.ca": tls: CA file: open `+filepath.Join(dir, "certs", "ca.pem")+": no such file or directory")

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
	code, out, errs = node("--config", path, "--check")
	assert.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, `  tls           mutual TLS, cluster "c1", CA `+filepath.Join(dir, "certs", "ca.pem")+" loaded (no --id: no node's certificate checked)\n")
}

// Without "tls" a control address off loopback is refused at load.
func TestNodeControlOffLoopbackNeedsTLS(t *testing.T) {
	path := clusterConfig(t, `"127.0.0.1:7111"`, `"10.1.2.3:7111"`)
	code, _, errs := node("--config", path, "--check")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `config: field "nodes.P1.control": "10.1.2.3:7111" is not a loopback address (127.0.0.1, ::1 or localhost): without "tls" the control endpoint has no authentication`)
}

// The recipe's three processes with mutual TLS: markerwave snapshot
// reaches P1's control endpoint over HTTPS with the operator's
// certificate; without that certificate it exits 2 naming the file.
func TestRecipeSnapshotTLS(t *testing.T) {
	a := freeAddrs(t, 6)
	edits := []string{`"count": 3}`, tlsEdit}
	for i, fixed := range []string{"7101", "7102", "7103", "7111", "7112", "7113"} {
		edits = append(edits, `"127.0.0.1:`+fixed+`"`, `"`+a[i]+`"`)
	}
	path := clusterConfig(t, edits...)
	certs := filepath.Join(filepath.Dir(path), "certs")
	require.NoError(t, os.MkdirAll(certs, 0o755))
	ca, err := tlstest.NewCA("c1")
	require.NoError(t, err)
	for _, id := range []string{"P1", "P2", "P3"} {
		_, _, _, err := ca.WriteFiles(certs, id)
		require.NoError(t, err)
	}
	code, _, errs := runCmd(runSnapshot, "--config", path)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `config: field "tls" for operator: tls: certificate `+filepath.Join(certs, "operator.pem"))
	if testing.Short() {
		t.Skip("runs cluster nodes as OS processes")
	}
	_, _, _, err = ca.WriteFiles(certs, "operator")
	require.NoError(t, err)
	startNodeProcs(t, path, "3s")
	var out string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, out, errs = runCmd(runSnapshot, "--config", path); !strings.Contains(errs, "does not answer") {
			break
		}
	}
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, errs)
	assert.Regexp(t, `^snapshot \d+ \(initiated by P1\): complete, total 3000 \(\d+ in flight\), saved \S+/snap-\d+\.json\n$`, out)
}
