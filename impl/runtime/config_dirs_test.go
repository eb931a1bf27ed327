package runtime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mwrt "github.com/markerwave/markerwave/impl/runtime"
)

// A relative trace_dir or snapshot_dir is relative to the config file's
// directory, whatever the working directory; an absolute one is kept.
func TestLoadConfigResolvesDirsAgainstTheFile(t *testing.T) {
	root := t.TempDir()
	confDir := filepath.Join(root, "conf")
	require.NoError(t, os.Mkdir(confDir, 0o755))
	abs := filepath.Join(root, "abs-snaps")
	text := strings.NewReplacer(
		`"../../../out/cluster/nodes"`, `"state/nodes"`,
		`"../../../out/cluster/snapshots"`, `"`+abs+`"`,
	).Replace(string(sampleConfig(t)))
	path := filepath.Join(confDir, "cluster.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	elsewhere := filepath.Join(root, "elsewhere")
	require.NoError(t, os.Mkdir(elsewhere, 0o755))

	t.Chdir(elsewhere)
	for _, p := range []string{path, filepath.Join("..", "conf", "cluster.json")} {
		cfg, err := mwrt.LoadConfig(p, "P1")
		require.NoError(t, err, p)
		assert.Equal(t, filepath.Join(filepath.Dir(p), "state", "nodes"), cfg.TraceDir, p)
		assert.Equal(t, abs, cfg.SnapshotDir, p)
		got, err := filepath.Abs(cfg.TraceDir)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(confDir, "state", "nodes"), got, "from %s, the trace dir is beside the config", elsewhere)
	}

	// ParseConfig has no file: the directories stay as written.
	cfg, err := mwrt.ParseConfig([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, "state/nodes", cfg.TraceDir)
}

// The multi-process recipe's config writes under the repository's out/
// (README: out/cluster/...) from wherever the nodes are started.
func TestRecipeConfigWritesUnderOut(t *testing.T) {
	cfg, err := mwrt.LoadConfig("testdata/cluster.json", "")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("..", "..", "out", "cluster", "nodes"), cfg.TraceDir)
	assert.Equal(t, filepath.Join("..", "..", "out", "cluster", "snapshots"), cfg.SnapshotDir)
	for _, p := range cfg.Topology.Procs {
		assert.NotEmpty(t, cfg.Nodes[p].Control, "%s has a control address: markerwave snapshot works in the recipe", p)
	}
}
