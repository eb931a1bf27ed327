package runtime_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
)

// configProblems parses cfg and returns its problems, one a line.
func configProblems(t *testing.T, cfg string) []string {
	t.Helper()
	_, err := mwrt.ParseConfig([]byte(cfg))
	require.Error(t, err, cfg)
	var ce *mwrt.ConfigError
	require.True(t, errors.As(err, &ce), "%T: %v", err, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, len(ce.Problems))
	return lines
}

// Each edit of the sample config makes exactly the problems listed, each
// naming its field by its JSON path and never a Go type.
func TestParseConfigErrorsNameTheField(t *testing.T) {
	good := string(sampleConfig(t))
	cases := []struct {
		from, to string
		want     []string
	}{
		{`"127.0.0.1:7103"`, `""`, []string{`config: field "nodes.P3.listen": missing`}},
		{`"127.0.0.1:7103"`, `"localhost"`, []string{`config: field "nodes.P3.listen": "localhost" is not host:port`}},
		{`"127.0.0.1:7102"`, `"127.0.0.1:70000"`, []string{`config: field "nodes.P2.listen": port 70000 out of range 1-65535`}},
		{`"127.0.0.1:7102"`, `"127.0.0.1:0"`, []string{`config: field "nodes.P2.listen": port 0 out of range 1-65535`}},
		{`"127.0.0.1:7102"`, `"127.0.0.1:http"`, []string{`config: field "nodes.P2.listen": "127.0.0.1:http": port "http" is not a number`}},
		{`"127.0.0.1:7103"`, `"127.0.0.1:7101"`, []string{`config: field "nodes.P3.listen": "127.0.0.1:7101" is also P1's listen address`}},
		{`"P3": {"listen": "127.0.0.1:7103"`, `"P9": {"listen": "127.0.0.1:7103"`, []string{
			`config: field "nodes.P9": not a process of the topology (P1, P2, P3)`,
			`config: field "nodes.P3": missing (every process needs a listen address)`,
		}},
		{`"app": {"kind": "bank", "balances": {"P1": 1000, "P2": 1000, "P3": 1000}}`, `"app": []`, []string{`config: field "app": want an object, got array`}},
		{`"count": 3`, `"count": "3"`, []string{`config: field "snapshots.count": want an integer, got string`}},
		{`"P3": 1000}`, `"P3": -5}`, []string{`config: field "app.balances.P3": negative balance -5`}},
		{`"P3": 1000}`, `"P3": "lots"}`, []string{`config: field "app.balances": want an integer, got string`}},
		{`"P3": 1000}`, `"P4": 1000}`, []string{
			`config: field "app.balances.P4": not a process of the topology`,
			`config: field "app.balances.P3": missing (every process needs an initial balance)`,
		}},
		{`"P2": 1000, "P3": 1000}`, `"P2": 9223372036854775000, "P3": 1000}`, []string{
			`config: field "app.balances": the balances total more than 9223372036854775807, the largest int64`,
		}},
		{`"P1": 1000, "P2": 1000, "P3": 1000}`, `"P1": 0, "P2": 0, "P3": 0}`, []string{
			`config: field "app.balances": all zero: the workload's transfers have no money to move`,
		}},
		{`"max_amount": 50`, `"max_amount": 3001`, []string{
			`config: field "app.balances": total 3000 is less than the workload's max_amount 3001: no such transfer can ever be made`,
		}},
		{`"balances"`, `"holder": "P1", "balances"`, []string{`config: field "app": unknown field "holder" for kind "bank"`}},
		{`"kind": "bank"`, `"kind": "bonk"`, []string{`config: field "app.kind": "bonk" is not an application kind (want one of bank, token)`}},
		{`"kind": "bank", "balances": {"P1": 1000, "P2": 1000, "P3": 1000}`, `"kind": "token", "holder": "P4"`, []string{
			`config: field "app.holder": "P4" is not a process of the topology`,
		}},
		{`"snapshot_dir": "../../../out/cluster/snapshots",`, ``, []string{`config: field "snapshot_dir": missing`}},
		{`"every_ms": 250`, `"every_ms": 0`, []string{`config: field "snapshots.every_ms": 0, want > 0`}},
		{`"every_ms": 250`, `"every_ms": 86400001`, []string{`config: field "snapshots.every_ms": 86400001 is out of range: at most 86400000 (a day)`}},
		{`"pause_ms": 2`, `"pause_ms": 18446744073710`, []string{`config: field "workload.pause_ms": 18446744073710 is out of range: at most 86400000 (a day)`}},
		{`"count": 3}`, `"count": 3}, "failures": {"heartbeat_ms": 1000}`, []string{
			`config: field "failures.heartbeat_ms": timeout 1s is below 3 heartbeat intervals (3s): live peers would be suspected (the timeout is timeout_ms's default, 1000: set timeout_ms, or lower heartbeat_ms)`,
		}},
		{`"count": 3}`, `"count": 3}, "failures": {"heartbeat_ms": 18446744073710, "timeout_ms": 73786976294840, "drain_ms": 86400000, "startup_ms": 86400001}`, []string{
			`config: field "failures.heartbeat_ms": 18446744073710 is out of range: at most 86400000 (a day)`,
			`config: field "failures.timeout_ms": 73786976294840 is out of range: at most 86400000 (a day)`,
			`config: field "failures.startup_ms": 86400001 is out of range: at most 86400000 (a day)`,
		}},
		{`"count": 3`, `"count": 1000000`, []string{`config: field "snapshots.count": 1000000, at most 349525 for 3 processes`}},
		{`"initiators": ["P1", "P3"]`, `"initiators": ["P1", "X"]`, []string{`config: field "snapshots.initiators[1]": "X" is not a process of the topology`}},
		{`"transfers": 400, "max_amount": 50, "pause_ms": 2`, `"transfers": -1, "max_amount": -2, "pause_ms": -3`, []string{
			`config: field "workload.transfers": -1 is negative`,
			`config: field "workload.max_amount": -2 is negative`,
			`config: field "workload.pause_ms": -3 is negative`,
		}},
		{`{"from": "P1", "to": "P3"}`, `{"from": "P1", "to": "P1"}`, []string{`config: field "topology": topology: channel P1->P1 is a self-loop; self-loops are not supported`}},
		{"{\"from\": \"P2\", \"to\": \"P3\"}, {\"from\": \"P3\", \"to\": \"P2\"},\n      {\"from\": \"P3\", \"to\": \"P1\"}, {\"from\": \"P1\", \"to\": \"P3\"}",
			`{"from": "P3", "to": "P2"}, {"from": "P3", "to": "P1"}`, []string{
				`config: field "topology": topology: not strongly connected: P1 cannot reach P3`,
			}},
		{`"trace_dir"`, `"trace_dri"`, []string{`config: unknown field "trace_dri"`}},
		{`"seed": 1}`, `"seed": 1}}`, []string{`config: trailing data after the JSON value: invalid character ',' looking for beginning of value`}},
	}
	for _, tc := range cases {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		require.NotEqual(t, good, bad, tc.from)
		assert.Equal(t, tc.want, configProblems(t, bad), "%s -> %s", tc.from, tc.to)
	}
	assert.Equal(t, []string{`config: field "topology": missing`}, configProblems(t, `{"nodes": {}}`))
	assert.Equal(t, []string{`config: field "nodes": want an object, got array`}, configProblems(t, `{"nodes": []}`))
	assert.Equal(t, []string{`config: want an object, got array`}, configProblems(t, `[]`))
	assert.Equal(t, []string{`config: field "topology": topology: want an object, got number`}, configProblems(t, `{"topology": 7}`))
	assert.Equal(t, []string{`config: empty input: want a JSON value`}, configProblems(t, ``))
}

// A config with several problems names every one of them.
func TestParseConfigNamesEveryProblem(t *testing.T) {
	bad := strings.NewReplacer(`"127.0.0.1:7102"`, `"127.0.0.1:99999"`, `"P3": 1000}`, `"P3": -1}`, `"every_ms": 250`, `"every_ms": -1`).Replace(string(sampleConfig(t)))
	assert.Equal(t, []string{
		`config: field "nodes.P2.listen": port 99999 out of range 1-65535`,
		`config: field "app.balances.P3": negative balance -1`,
		`config: field "snapshots.every_ms": -1, want > 0`,
	}, configProblems(t, bad))
}

func TestParseTokenConfig(t *testing.T) {
	cfg, err := mwrt.ParseConfig([]byte(strings.Replace(string(sampleConfig(t)), `"kind": "bank", "balances": {"P1": 1000, "P2": 1000, "P3": 1000}`, `"kind": "token", "holder": "P2"`, 1)))
	require.NoError(t, err)
	assert.Equal(t, "token", cfg.App.Kind)
	h := cfg.Header()
	assert.Equal(t, map[string]int64{"P1": 0, "P2": 1, "P3": 0}, map[string]int64{"P1": h.InitBal["P1"], "P2": h.InitBal["P2"], "P3": h.InitBal["P3"]})
}

// LoadConfig adds what only the machine can tell: the node id, and
// directories that cannot hold files.
func TestLoadConfigChecksTheHost(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	cfgText := strings.NewReplacer(
		`"../../../out/cluster/snapshots"`, `"`+filepath.Join(file, "snaps")+`"`,
		`"../../../out/cluster/nodes"`, `"`+filepath.Join(dir, "new", "nodes")+`"`,
	).Replace(string(sampleConfig(t)))
	path := filepath.Join(dir, "cluster.json")
	require.NoError(t, os.WriteFile(path, []byte(cfgText), 0o644))

	_, err := mwrt.LoadConfig(path, "P9")
	require.Error(t, err)
	assert.Equal(t, `config: node P9 is not a process of the topology (P1, P2, P3)`+"\n"+
		`config: field "snapshot_dir": `+file+` is not a directory`, err.Error())

	// Missing directories that can be created are fine, and not created.
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(cfgText, filepath.Join(file, "snaps"), filepath.Join(dir, "a", "b"), 1)), 0o644))
	cfg, err := mwrt.LoadConfig(path, "P1")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a", "b"), cfg.SnapshotDir)
	assert.NoDirExists(t, filepath.Join(dir, "a"))
	assert.NoDirExists(t, filepath.Join(dir, "new"))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, ents, 2, "no temporary file left behind")

	_, err = mwrt.LoadConfig(filepath.Join(dir, "absent.json"), "P1")
	assert.ErrorIs(t, err, os.ErrNotExist)
}
