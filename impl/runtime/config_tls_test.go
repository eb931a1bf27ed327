package runtime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
	"github.com/markerwave/markerwave/impl/transport/tlstest"
)

const tlsBase = `{"topology": {"procs": ["P1","P2"], "channels": [{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]},
  "nodes": {"P1": {"listen": "127.0.0.1:7101", "control": CTL, "metrics": MET}, "P2": {"listen": "127.0.0.1:7102"}},
  "app": {"kind": "bank", "balances": {"P1": 10, "P2": 10}}, "snapshot_dir": "snaps" TLS}`

func tlsConfig(ctl, met, tls string) []byte {
	return []byte(strings.NewReplacer("CTL", ctl, "MET", met, "TLS", tls).Replace(tlsBase))
}

// Without "tls" the control and metrics endpoints must be on loopback;
// with it any address will do; a "tls" object must name everything.
func TestConfigTLSEndpoints(t *testing.T) {
	const withTLS = `, "tls": {"cluster": "c1", "ca": "ca.pem", "cert": "{id}.pem", "key": "{id}-key.pem"}`
	for _, c := range []struct {
		ctl, met, tls string
		want          string
	}{
		{`"127.0.0.1:7111"`, `"127.0.0.1:7121"`, "", ""},
		{`"10.0.0.1:7111"`, `"127.0.0.1:7121"`, "", `config: field "nodes.P1.control": "10.0.0.1:7111" is not a loopback address (127.0.0.1, ::1 or localhost): without "tls" the control endpoint has no authentication`},
		{`"127.0.0.1:7111"`, `"0.0.0.0:7121"`, "", `config: field "nodes.P1.metrics": "0.0.0.0:7121" is not a loopback address (127.0.0.1, ::1 or localhost): without "tls" the metrics endpoint has no authentication`},
		{`"127.0.0.1:7111"`, `"127.0.0.1:7111"`, "", `config: field "nodes.P1.metrics": "127.0.0.1:7111" is also P1's control address`},
		{`"10.0.0.1:7111"`, `"0.0.0.0:7121"`, withTLS, ""},
		{`""`, `""`, `, "tls": {"ca": "ca.pem"}`, `config: field "tls.cluster": missing` + "\n" + `config: field "tls.cert": missing` + "\n" + `config: field "tls.key": missing`},
	} {
		_, err := mwrt.ParseConfig(tlsConfig(c.ctl, c.met, c.tls))
		if c.want == "" {
			assert.NoError(t, err, c.ctl+" "+c.met)
		} else {
			assert.EqualError(t, err, c.want)
		}
	}
}

// LoadConfig loads the node's certificate, key and the CA, relative to
// the config's directory, and names the one missing or unreadable.
func TestLoadConfigTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("c1")
	require.NoError(t, err)
	_, _, _, err = ca.WriteFiles(dir, "P1")
	require.NoError(t, err)
	path := filepath.Join(dir, "cluster.json")
	write := func(tls string) {
		require.NoError(t, os.WriteFile(path, tlsConfig(`""`, `""`, tls), 0o644))
	}
	write(`, "tls": {"cluster": "c1", "ca": "ca.pem", "cert": "{id}.pem", "key": "{id}-key.pem"}`)
	cfg, err := mwrt.LoadConfig(path, "P1")
	require.NoError(t, err)
	tl, err := cfg.TLSFor("P1")
	require.NoError(t, err)
	assert.Equal(t, "c1", tl.Cluster)

	_, err = mwrt.LoadConfig(path, "P2") // P2's files were never written
	assert.ErrorContains(t, err, `config: field "tls": P2: tls: certificate `+filepath.Join(dir, "P2.pem"))
	write(`, "tls": {"cluster": "c1", "ca": "nothere.pem", "cert": "{id}.pem", "key": "{id}-key.pem"}`)
	_, err = mwrt.LoadConfig(path, "P1")
	assert.ErrorContains(t, err, "tls: CA file: open "+filepath.Join(dir, "nothere.pem"))
	write(`, "tls": {"cluster": "c1", "ca": "ca.pem", "cert": "{id}.pem", "key": "ca.pem"}`)
	_, err = mwrt.LoadConfig(path, "P1")
	assert.ErrorContains(t, err, "with key "+filepath.Join(dir, "ca.pem"))
	var ce *mwrt.ConfigError
	assert.ErrorAs(t, err, &ce)
}
