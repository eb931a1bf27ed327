package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

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
	"supervise": {
		flags: []string{"config", "etcd", "etcd-cluster", "etcd-ca", "etcd-cert", "etcd-key", "etcd-timeout", "metrics", "duration", "procs", "keep"},
		input: func(path string) []string { return []string{"--config", path} },
	},
	"snapshot": {
		flags: []string{"config", "node", "wait", "json"},
		input: func(path string) []string { return []string{"--config", path} },
	},
	"snapshots": {
		flags: []string{"dir", "config", "json", "keep"},
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

// newUserCase is one row of TestNewUser: a command line of issue #22 ("the
// CLI, tried as a new user would"), run through dispatch, and what it
// must print and exit with.
type newUserCase struct {
	item int    // the item
	name string // what the row checks
	// args is the command line after "markerwave"; it may start what the
	// command needs (nodes) and prepare files.
	args           func(t *testing.T) []string
	code           int
	stdout, stderr string // regular expressions the outputs must match
	// interrupt: SIGINT arrives as the command starts (notifyInterrupt).
	interrupt bool
	// serial: the row changes what the process shares (a signal hook
	// such as sigterm's, the working directory), so it runs alone; the
	// others (and interrupt's) run side by side after the serial ones.
	serial bool
	// after checks more, given the command line and its outputs.
	after func(t *testing.T, args []string, stdout, stderr string)
}

var newUserCases = []newUserCase{
	{item: 1, name: "serve --addr with a port out of range is a usage error",
		args: fixed("serve", "--addr", "127.0.0.1:70000"), code: exitUsage, stdout: `^$`,
		stderr: `^markerwave serve: --addr 127\.0\.0\.1:70000: port 70000 out of range 0-65535\nrun 'markerwave serve --help' for usage\n$`},
	{item: 2, name: "demo --out that cannot be created names the folder",
		args: func(t *testing.T) []string {
			file := filepath.Join(t.TempDir(), "file")
			require.NoError(t, os.WriteFile(file, nil, 0o644))
			return []string{"demo", "--out", filepath.Join(file, "run")}
		}, code: exitUsage, stdout: `^$`,
		stderr: `^markerwave demo: --out /\S+/file/run: cannot hold the run: /\S+/file is not a directory\n$`},
	{item: 3, name: "check --json on a model that does not load prints a JSON error",
		args: fixed("check", "--json", "--model", "testdata/no-such-model.cfg"), code: exitUsage,
		stdout: `^\{"file":"testdata/no-such-model\.cfg","error":"model: open testdata/no-such-model\.cfg: no such file or directory"\}\n$`,
		stderr: `^markerwave check: model: open testdata/no-such-model\.cfg: no such file or directory\n$`,
		after:  jsonError},
	{item: 3, name: "check --json with a trace for a model prints a JSON error",
		args: fixed("check", "--json", "--model", "../../traces/conforms/puzzle.jsonl"), code: exitUsage,
		stdout: `^\{"file":"\.\./\.\./traces/conforms/puzzle\.jsonl","error":"--model \S+ is a trace \(markerwave-trace/3\), not a TLC model: [^"]+"\}\n$`,
		after:  jsonError},
	{item: 3, name: "snapshot --json on a cluster without control addresses prints a JSON error",
		args: func(t *testing.T) []string { return []string{"snapshot", "--json", "--config", nodeConfig(t)} }, code: exitUsage,
		stdout: `^\{"error":"\S+/cluster\.json: no node has a control address \(nodes\.ID\.control\): the cluster takes no snapshot on demand"\}\n$`,
		after:  jsonError},
	{item: 3, name: "snapshot --json on a missing config prints a JSON error",
		args: fixed("snapshot", "--json", "--config", "testdata/no-such-cluster.json"), code: exitUsage,
		stdout: `^\{"error":"testdata/no-such-cluster\.json: open testdata/no-such-cluster\.json: no such file or directory"\}\n$`,
		after:  jsonError},
	{item: 4, name: "audit interrupted says so and exits 130",
		args: fixed("audit", "../../traces/conforms/"), interrupt: true, code: exitInterrupted,
		stdout: `^$`, stderr: `^markerwave audit: interrupted\n$`},
	{item: 4, name: "demo interrupted says so, exits 130 and removes its partial --out",
		args: func(t *testing.T) []string {
			return []string{"demo", "--nodes", "3", "--transfers", "10000000", "--timeout", "1m", "--out", filepath.Join(t.TempDir(), "run")}
		}, interrupt: true, code: exitInterrupted,
		stdout: `^markerwave demo: 3 bank nodes`, stderr: `^markerwave demo: interrupted; removed the partial --out /\S+/run\n$`,
		after: func(t *testing.T, args []string, _, _ string) {
			out := args[len(args)-1]
			assert.NoDirExists(t, out)
			code, stdout, stderr := dispatchRun("demo", "--nodes", "3", "--transfers", "100", "--out", out)
			assert.Equal(t, exitOK, code, "the next run into the same --out is not refused:\n%s%s", stdout, stderr)
		}},
	{item: 5, name: "check --model with a trace says it is a trace",
		args: fixed("check", "--model", "../../traces/conforms/puzzle.jsonl"), code: exitUsage, stdout: `^$`,
		stderr: `^markerwave check: --model \.\./\.\./traces/conforms/puzzle\.jsonl is a trace \(markerwave-trace/3\), not a TLC model: check takes a FILE\.cfg \(markerwave audit \S+ replays the trace\)\n$`},
	{item: 5, name: "check --model with an empty .cfg says it is empty",
		args: func(t *testing.T) []string {
			path := filepath.Join(t.TempDir(), "Empty.cfg")
			require.NoError(t, os.WriteFile(path, []byte("\n  \n"), 0o644))
			return []string{"check", "--model", path}
		}, code: exitUsage, stdout: `^$`,
		stderr: `^markerwave check: --model /\S+/Empty\.cfg is empty: a TLC model names its SPECIFICATION \(or INIT and NEXT\), CONSTANTS and the properties to check\n$`},
	{item: 6, name: "node --config with a trace says it is a trace, not a config",
		args: fixed("node", "--config", "../../traces/conforms/puzzle.jsonl", "--check"), code: exitUsage, stdout: `^$`,
		stderr: `^markerwave node: \.\./\.\./traces/conforms/puzzle\.jsonl is a trace \(markerwave-trace/3\), not a cluster config \(impl/runtime's FileConfig: topology, nodes, app, snapshot_dir, \.\.\.\)\n$`},
	{item: 7, name: "flow --help describes --fail-after's default once",
		args: fixed("flow", "--help"), code: exitOK, stderr: `^$`,
		stdout: `(?m)^  -fail-after N\n    \tN records at the sink after the second snapshot before the failure, 0 or more \(default: a quarter of all\)\n`,
		after: func(t *testing.T, _ []string, stdout, _ string) {
			assert.NotContains(t, stdout, "(default -1)")
		}},
	{item: 8, name: "a refused snapshot names the node once",
		args: func(t *testing.T) []string {
			path := loneNode(t, "1500ms")
			time.Sleep(800 * time.Millisecond) // P1 suspects P2 (startup_ms 200)
			return []string{"snapshot", "--config", path, "--node", "P1"}
		}, code: exitFail, stdout: `^$`,
		stderr: `^markerwave snapshot: P1 refused: snapshot \d+ not started: a peer is suspected: P2, nothing heard since [^\n]+\n$`,
		after: func(t *testing.T, _ []string, _, stderr string) {
			assert.Equal(t, 1, strings.Count(stderr, "P1"), "P1 named once: %s", stderr)
		}},
	{item: 9, name: "a node stopped by SIGTERM says so", serial: true,
		args: func(t *testing.T) []string {
			sigterm(t, 700*time.Millisecond)
			path := onDemandConfig(t)
			done := make(chan struct{})
			go func() { defer close(done); node("--config", path, "--id", "P2") }()
			t.Cleanup(func() { <-done })
			return []string{"node", "--config", path, "--id", "P1"}
		}, code: exitOK,
		stdout: `^P1: done after \d\S* \(stopped on SIGTERM\)\n$`,
		stderr: `(?s)\nP1: got SIGTERM: stopping\n.*P1: draining: this node sends no more transfers`},
	{item: 10, name: "a node that exits 1 prints its final line on stdout",
		args: func(t *testing.T) []string {
			return []string{"node", "--config", loneNodeConfig(t), "--id", "P1", "--duration", "600ms"}
		}, code: exitFail,
		stdout: `^P1: stopped with failures after \d\S* \(--duration 600ms\): the summary is on stderr\n$`,
		stderr: `markerwave node: node P1 stopped with failures\n  dead peer P2`},
	{item: 11, name: "the recipe's config has control addresses: snapshot asks P1",
		args: fixed("snapshot", "--config", recipeConfig, "--wait", "1s"), code: exitFail, stdout: `^$`,
		stderr: `^markerwave snapshot: P1's control endpoint 127\.0\.0\.1:7111 does not answer \(is P1 running\?\): `},
	{item: 12, name: "a config's relative directories are the config file's, from any working directory", serial: true,
		args: func(t *testing.T) []string {
			dir := t.TempDir()
			b, err := os.ReadFile(nodeConfig(t))
			require.NoError(t, err)
			s := regexp.MustCompile(`"(trace|snapshot)_dir": "[^"]*"`).ReplaceAllString(string(b), `"${1}_dir": "state/$1"`)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(s), 0o644))
			t.Chdir(t.TempDir())
			return []string{"node", "--config", filepath.Join(dir, "cluster.json"), "--check"}
		}, code: exitOK, stderr: `^$`,
		stdout: `(?m)^  snapshot_dir  /\S+/state/snapshot: will be created \(parent writable\)\n  trace_dir     /\S+/state/trace: will be created`,
		after: func(t *testing.T, args []string, stdout, _ string) {
			assert.Contains(t, stdout, filepath.Join(filepath.Dir(args[2]), "state", "snapshot")+": will be created")
		}},
	{item: 13, name: "flow --out writes barrier traces that audit conforms and export draws",
		args: func(t *testing.T) []string {
			return []string{"flow", "--par", "2", "--records", "200", "--slow", "20us", "--every", "2ms", "--fail-after", "80", "--out", filepath.Join(t.TempDir(), "flow")}
		}, code: exitOK,
		stdout: `\nwrote /\S+/flow/: aligned\.jsonl, unaligned\.jsonl, adaptive\.jsonl \(barrier traces: markerwave audit, markerwave export --diagram\), aligned-sink\.jsonl, unaligned-sink\.jsonl, chandy-lamport-sink\.jsonl, adaptive-sink\.jsonl \(sink traces: markerwave audit\) and flow\.txt\n$`,
		stderr: `markerwave flow: chandy-lamport: no barrier trace \(tla/BarrierSnapshots\.tla and tla/BarrierAdaptive\.tla have the aligned, unaligned and adaptive protocols\)\n`,
		after: func(t *testing.T, args []string, _, _ string) {
			dir := args[len(args)-1]
			for _, mode := range []string{"aligned", "unaligned", "adaptive"} {
				trace := filepath.Join(dir, mode+".jsonl")
				code, out, errs := dispatchRun("audit", trace)
				assert.Equal(t, exitOK, code, errs)
				assert.Regexp(t, `^conforms: \d+ steps, 1 snapshot, all properties hold\n$`, out)
				code, out, errs = dispatchRun("export", "--diagram", filepath.Join(dir, mode+".svg"), trace)
				assert.Equal(t, exitOK, code, errs)
				assert.Contains(t, out, "1 restore")
			}
			for _, mode := range []string{"aligned", "unaligned", "chandy-lamport"} {
				code, out, errs := dispatchRun("audit", filepath.Join(dir, mode+"-sink.jsonl"))
				assert.Equal(t, exitOK, code, errs)
				assert.Regexp(t, `^conforms: \d+ steps, \d+ snapshots?, all properties hold\n$`, out)
			}
			assert.FileExists(t, filepath.Join(dir, "flow.txt"))
		}},
	{item: 14, name: "export draws a directory of node logs, merged",
		args: func(t *testing.T) []string {
			out := filepath.Join(t.TempDir(), "demo")
			code, stdout, stderr := dispatchRun("demo", "--nodes", "3", "--transfers", "200", "--out", out)
			require.Equal(t, exitOK, code, stdout+stderr)
			return []string{"export", "--diagram", filepath.Join(out, "run.svg"), filepath.Join(out, "nodes")}
		}, code: exitOK,
		stdout: `^wrote /\S+/run\.svg: columns 1\.\.\d+ of \d+ \(Lamport time\), \d+x\d+ px\n(  snapshot \d+ \(initiator P\d\): complete, recorded total 3000; 0 orphan, 0 missing\n)+$`,
		stderr: `^markerwave export: /\S+/nodes: merged 3 node logs \(\S+/P1\.jsonl, \S+/P2\.jsonl, \S+/P3\.jsonl\)\n$`},
	{item: 14, name: "export of one node's log alone is refused as audit refuses it, naming the missing nodes and the directory form",
		args: func(t *testing.T) []string {
			dir := splitLogs(t, readTrace(t, "conforms", "concurrent-snapshots"))
			return []string{"export", "--diagram", filepath.Join(t.TempDir(), "p1.svg"), filepath.Join(dir, "P1.jsonl")}
		}, code: exitUsage, stdout: `^$`,
		stderr: `^markerwave export: \S+/P1\.jsonl: incomplete: .* \(it lacks steps of P2 and P3\); the trace holds only P1's events, as one node's own log does, the other nodes' being in their own logs: give the directory of the run's node logs to merge them\n$`,
		after: func(t *testing.T, args []string, _, _ string) {
			assert.NoFileExists(t, args[2], "nothing drawn")
		}},
	{item: 15, name: "a broken barrier trace names its line as the other reader does (trace line N)",
		args: func(t *testing.T) []string {
			b, err := os.ReadFile("../../traces/barrier/conforms/aligned-dag.jsonl")
			require.NoError(t, err)
			lines := strings.SplitAfter(string(b), "\n")
			lines[5] = "{not json\n"
			bad := filepath.Join(t.TempDir(), "bad.jsonl")
			require.NoError(t, os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o644))
			return []string{"audit", bad}
		}, code: exitUsage,
		stderr: `^markerwave audit: \S+/bad\.jsonl: trace line 6: `},
	{item: 16, name: "a barrier divergence names the action's arguments, booleans included",
		args: func(t *testing.T) []string {
			return []string{"audit", "../../traces/barrier/rejects/BarrierConsistentCut-no-blocking.jsonl"}
		}, code: exitFail,
		stdout: `diverges at step 6 \(trace line 7\): ProcessV\(e = <<"S1", "X">>, block = TRUE, log = TRUE\)`},
}

// TestNewUser runs issue #22's command lines: each exits with its code
// and says what is wrong (or what happened) plainly. The rows that change
// what the process shares run one at a time first; the rest side by side.
func TestNewUser(t *testing.T) {
	for _, c := range newUserCases {
		t.Run(fmt.Sprintf("%d/%s", c.item, c.name), func(t *testing.T) {
			switch {
			case c.interrupt:
				interruptNow(t)
			case !c.serial:
				t.Parallel()
			}
			args := c.args(t)
			code, stdout, stderr := dispatchRun(args...)
			assert.Equal(t, c.code, code, "markerwave %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout, stderr)
			assert.Regexp(t, c.stdout, stdout, "stdout")
			assert.Regexp(t, c.stderr, stderr, "stderr")
			if c.after != nil {
				c.after(t, args, stdout, stderr)
			}
		})
	}
}

// fixed is a command line that needs nothing prepared.
func fixed(args ...string) func(*testing.T) []string {
	return func(*testing.T) []string { return args }
}

func dispatchRun(args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

// jsonError checks that stdout is one JSON object with an error.
func jsonError(t *testing.T, _ []string, stdout, _ string) {
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
	assert.NotEmpty(t, v["error"])
}

// interruptNow makes SIGINT arrive as soon as the next command listens
// for it; the commands after it get none.
func interruptNow(t *testing.T) {
	saved := notifyInterrupt
	t.Cleanup(func() { notifyInterrupt = saved })
	fired := false
	notifyInterrupt = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 1)
		if !fired {
			ch <- os.Interrupt
			fired = true
		}
		return ch, func() {}
	}
}

// sigterm makes SIGTERM reach every node after d.
func sigterm(t *testing.T, d time.Duration) {
	saved := notifyStop
	t.Cleanup(func() { notifyStop = saved })
	notifyStop = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 1)
		tm := time.AfterFunc(d, func() { ch <- syscall.SIGTERM })
		return ch, func() { tm.Stop() }
	}
}

// loneNodeConfig is twoNodeConfig with a quick failure detector, for P1
// run alone: it suspects P2, never started, within a few hundred ms.
func loneNodeConfig(t *testing.T) string {
	b, err := os.ReadFile(onDemandConfig(t))
	require.NoError(t, err)
	s := strings.Replace(string(b), `"count": 0}`, `"count": 0}, "failures": {"heartbeat_ms": 20, "timeout_ms": 200, "drain_ms": 300, "startup_ms": 200}`, 1)
	path := filepath.Join(t.TempDir(), "lone.json")
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return path
}

// loneNode runs P1 of loneNodeConfig alone for d, in the background, and
// returns the config.
func loneNode(t *testing.T, d string) string {
	path := loneNodeConfig(t)
	done := make(chan struct{})
	go func() { defer close(done); node("--config", path, "--id", "P1", "--duration", d) }()
	t.Cleanup(func() { <-done })
	return path
}
