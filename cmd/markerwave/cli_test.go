package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conventions is what TestConventions knows of each command: its flags,
// and, for a command that reads files, how to hand it one.
type conventions struct {
	flags []string
	// input returns the arguments that make the command read file path;
	// nil for a command that reads no file.
	input func(path string) []string
}

// commandConventions lists every command of the table; TestConventions
// fails if one is missing.
var commandConventions = map[string]conventions{
	"demo": {
		flags: []string{"nodes", "transfers", "seed", "out", "balance", "timeout"},
	},
	"node": {
		flags: []string{"config", "id", "duration", "restore", "check"},
		input: func(path string) []string { return []string{"--config", path, "--check"} },
	},
	"snapshot": {
		flags: []string{"config", "node", "wait", "json"},
		input: func(path string) []string { return []string{"--config", path} },
	},
	"snapshots": {
		flags: []string{"dir", "config", "json"},
		input: func(path string) []string { return []string{"--config", path} },
	},
	"recover": {
		flags: []string{"config", "json", "start", "duration"},
		input: func(path string) []string { return []string{"--config", path} },
	},
	"check": {
		flags: []string{"model", "workers", "simulate", "seed", "traces", "depth", "progress", "json", "max-states", "max-memory", "fingerprint", "frontier-memory", "tmpdir"},
		input: func(path string) []string { return []string{"--model", path} },
	},
	"audit": {
		flags: []string{"drained", "json", "progress"},
		input: func(path string) []string { return []string{path} },
	},
	"export": {
		flags: []string{"diagram", "snap", "window", "shiviz", "tlc", "run-tlc", "spec-dir", "java", "tlc-timeout"},
		input: func(path string) []string {
			return []string{"--shiviz", filepath.Join(os.TempDir(), "markerwave-never-written.log"), path}
		},
	},
}

// TestConventions runs every command's --help, a usage error and, for a
// command that reads files, a missing and a malformed input file, and
// checks the exit status and what goes to stdout and stderr.
func TestConventions(t *testing.T) {
	require.Len(t, commandConventions, len(commands), "every command of the table is in commandConventions and no other")
	garbage := filepath.Join(t.TempDir(), "garbage.in")
	require.NoError(t, os.WriteFile(garbage, []byte("{ this is not what any command reads\n"), 0o644))
	missing := filepath.Join(t.TempDir(), "missing.in")

	for _, c := range commands {
		cv, ok := commandConventions[c.name]
		require.True(t, ok, "%s has no entry in commandConventions", c.name)
		run := func(args ...string) (int, string, string) {
			var out, errb strings.Builder
			code := dispatch(append([]string{c.name}, args...), &out, &errb)
			return code, out.String(), errb.String()
		}
		subtest := func(name string, f func(t *testing.T)) {
			t.Run(c.name+"/"+name, f)
		}

		subtest("help", func(t *testing.T) {
			for _, h := range []string{"--help", "-h"} {
				code, out, errs := run(h)
				assert.Equal(t, exitOK, code, h)
				assert.Empty(t, errs, h)
				assert.True(t, strings.HasPrefix(out, "usage: markerwave "+c.name+" "), "%s: %q", h, out)
				for _, fl := range cv.flags {
					assert.Regexp(t, `(?m)^  -`+regexp.QuoteMeta(fl)+`( |$)`, out, "%s --help lists -%s", c.name, fl)
				}
				assert.Len(t, regexp.MustCompile(`(?m)^  -\S`).FindAllString(out, -1), len(cv.flags), "%s --help lists exactly the flags above", c.name)
			}
		})

		subtest("usage error", func(t *testing.T) {
			code, out, errs := run("--no-such-flag")
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.True(t, strings.HasPrefix(errs, "markerwave "+c.name+": flag provided but not defined: -no-such-flag\n"), errs)
		})

		if cv.input == nil {
			continue
		}
		subtest("bad input", func(t *testing.T) {
			for _, path := range []string{missing, garbage} {
				code, out, errs := run(cv.input(path)...)
				assert.Equal(t, exitUsage, code, "%s: %s", path, errs)
				assert.NotContains(t, out, path, "the verdict is not a success")
				assert.True(t, strings.HasPrefix(errs, "markerwave "+c.name+": "), errs)
				assert.Contains(t, errs, path, "the error names the file")
			}
		})
	}
}

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{nil, "devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("0123456789abcdef", "false")}, "v1.2.3"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "false")}, "devel (0123456789ab)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef", "true")}, "devel (0123456789ab-dirty)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		assert.Equal(t, tc.want, versionOf(tc.info, tc.info != nil))
	}
}

// The table is the one list of commands: names are unique, each has a
// summary and a run function.
func TestCommandTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		assert.False(t, seen[c.name], "%s listed twice", c.name)
		seen[c.name] = true
		assert.NotEmpty(t, c.summary, c.name)
		assert.NotNil(t, c.run, c.name)
	}
}
