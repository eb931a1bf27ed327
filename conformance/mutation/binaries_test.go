package mutation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The test binaries of the schemata: each package a mutant runs tests
// of is compiled and linked once, with go test -c, and every mutant in
// the schemata, and the control, is a run of that binary, in the
// package's directory (where go test runs it: the tests read their
// testdata), with $MARKERWAVE_MUTANT naming the mutant.

// launcher makes the command of one run, and its command line for the
// log.
type launcher func(ctx context.Context, r goTest) (*exec.Cmd, string)

// binKey is one test binary: a package, built with or without the race
// detector (a run whose Args hold -race, a go test build flag).
type binKey struct {
	pkg  string
	race bool
}

func keyOf(r goTest) binKey { return binKey{pkg: r.Pkg, race: slices.Contains(r.Args, "-race")} }

// binaries maps each test binary the runs need to its file.
type binaries map[binKey]string

// buildBinaries compiles and links, with the overlay, the test binary of
// every package (and race mode) of runs into dir: one go test -c for each
// race mode and set of packages with distinct last elements (go test -c
// -o dir/ names a binary after it). It returns the go command's output
// on a failure.
func (rn *runner) buildBinaries(overlay, dir string, runs []goTest) (binaries, string, error) {
	bins := binaries{}
	for _, batch := range batches(runs) {
		out := filepath.Join(dir, fmt.Sprintf("race-%t-%d", batch[0].race, len(bins))) + string(filepath.Separator)
		args := []string{"test", "-c", "-vet=off", "-ldflags=-s -w", "-overlay=" + overlay, "-o", out}
		if batch[0].race {
			args = append(args, "-race")
		}
		for _, k := range batch {
			args = append(args, k.pkg)
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		cmd := exec.CommandContext(ctx, rn.goBin, args...)
		cmd.Dir = rn.root
		b, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			return nil, "", fmt.Errorf("%w: go %s", errBuildTimeout, strings.Join(args, " "))
		}
		if err != nil {
			return nil, fmt.Sprintf("$ go %s\n%s", strings.Join(args, " "), b), err
		}
		for _, k := range batch {
			bins[k] = filepath.Join(out, path.Base(k.pkg)+".test")
		}
	}
	return bins, "", nil
}

// buildTimeout is the budget of one go test -c of the schemata: from a
// cold cache it compiles the module's dependencies (with -race, the
// standard library again), which under a load of 30 on two cores took
// over 5 minutes.
const buildTimeout = 15 * time.Minute

// errBuildTimeout: a build of the schemata ran out of buildTimeout, which
// says nothing of the mutants (building each on its own would only take
// longer).
var errBuildTimeout = errors.New("the build did not finish within " + buildTimeout.String())

// batches groups the binaries of runs into go test -c invocations: one
// race mode each, no two packages with the same last element.
func batches(runs []goTest) [][]binKey {
	var bs [][]binKey
	for _, r := range runs {
		k := keyOf(r)
		i := slices.IndexFunc(bs, func(b []binKey) bool {
			return b[0].race == k.race && !slices.ContainsFunc(b, func(o binKey) bool { return path.Base(o.pkg) == path.Base(k.pkg) })
		})
		switch {
		case slices.ContainsFunc(bs, func(b []binKey) bool { return slices.Contains(b, k) }):
		case i < 0:
			bs = append(bs, []binKey{k})
		default:
			bs[i] = append(bs[i], k)
		}
	}
	// The race detector's binaries last: make test runs its race pass
	// beside the first one, and by then that pass has compiled the
	// standard library with -race, which this build finds in the cache
	// instead of compiling it again at the same time.
	slices.SortStableFunc(bs, func(a, b []binKey) int { return cmpBool(a[0].race, b[0].race) })
	return bs
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// goTestFlags are go test's flags that a test binary takes as -test.X.
var goTestFlags = []string{"short", "run", "skip", "count", "timeout", "cpu", "parallel", "failfast", "shuffle", "v", "benchtime"}

// binaryArgs is r's Args for its test binary: go test's flags spelt as
// the binary takes them, -race (a build flag) left out.
func binaryArgs(args []string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "-race":
		case slices.Contains(goTestFlags, name):
			out = append(out, "-test."+strings.TrimLeft(a, "-"))
		default:
			out = append(out, a)
		}
	}
	return out
}

// binaryCmd is the run r of mutant name ("" for the control) as an exec
// of its prebuilt test binary, in the package's directory; the second
// result is its command line for the log.
func (rn *runner) binaryCmd(bins binaries, name string) launcher {
	return func(ctx context.Context, r goTest) (*exec.Cmd, string) {
		args := []string{"-test.count=1", "-test.v", "-test.paniconexit0", "-test.timeout=4m",
			"-test.run=^(" + strings.Join(r.Tests, "|") + ")$"}
		args = append(args, binaryArgs(r.Args)...)
		if rn.rapid[filepath.Join(rn.root, filepath.FromSlash(r.Pkg))] {
			args = rapidArgs(args)
		}
		cmd := exec.CommandContext(ctx, bins[keyOf(r)], args...)
		cmd.Dir = filepath.Join(rn.root, filepath.FromSlash(r.Pkg))
		cmd.Env = append(os.Environ(), schemaEnv+"="+name)
		return cmd, fmt.Sprintf("$ (cd %s && %s=%s %s %s)", r.Pkg, schemaEnv, name, filepath.Base(cmd.Path), strings.Join(args, " "))
	}
}

// goTestCmd is the run r as a go test of the overlay: how a mutant
// outside the schemata is built and run.
func (rn *runner) goTestCmd(overlay string) launcher {
	return func(ctx context.Context, r goTest) (*exec.Cmd, string) {
		args := []string{"test", "-count=1", "-v", "-vet=off", "-overlay=" + overlay, "-timeout", "4m", "-ldflags=-s -w",
			"-run", "^(" + strings.Join(r.Tests, "|") + ")$", r.Pkg}
		args = append(args, r.Args...)
		if rn.rapid[filepath.Join(rn.root, filepath.FromSlash(r.Pkg))] {
			args = rapidArgs(args)
		}
		cmd := exec.CommandContext(ctx, rn.goBin, args...)
		cmd.Dir = rn.root
		return cmd, "$ go " + strings.Join(args, " ")
	}
}

// schemataBuild is the outcome of building the schemata's binaries.
type schemataBuild struct {
	sch  *schemata
	bins binaries
}

// buildSchemataBinaries builds the schemata of ms and their test
// binaries for runs (every run of the mutants: the control's). If they
// do not build (a mutant's replacement that does not compile), it logs
// why and returns schemata with no mutant in them, built again, so that
// each mutant's own build names its error; MUTATION_NO_SCHEMATA=1 does
// that on purpose (every mutant built on its own, as before the
// schemata: to compare, or to find a mutant that breaks the build).
func buildSchemataBinaries(t *testing.T, rn *runner, src *source, ms []mutant, runs []goTest) schemataBuild {
	t.Helper()
	try := ms
	if os.Getenv("MUTATION_NO_SCHEMATA") != "" {
		try = nil
	}
	for {
		start := time.Now()
		sch, err := buildSchemata(src.root, src.files, try)
		if err != nil {
			t.Fatalf("building the mutant schemata: %v", err)
		}
		for _, m := range ms {
			if !sch.in[m.Name] && sch.fallback[m.Name] == "" {
				sch.fallback[m.Name] = "MUTATION_NO_SCHEMATA is set, or the schemata did not build"
			}
		}
		overlay, work, err := src.overlay(t, "schemata", sch.replaced())
		if err != nil {
			t.Fatal(err)
		}
		bins, out, err := rn.buildBinaries(overlay, filepath.Join(work, "bin"), runs)
		if err == nil {
			t.Logf("built the schemata of %d mutants (%d outside them) and %d test binaries in %v",
				len(sch.in), len(sch.fallback), len(bins), time.Since(start).Round(100*time.Millisecond))
			return schemataBuild{sch: sch, bins: bins}
		}
		if errors.Is(err, errBuildTimeout) {
			t.Fatalf("building the schemata's test binaries: %v", err)
		}
		if len(try) == 0 {
			t.Fatalf("the tracked files, as they are in the work tree, do not build: %v\n%s", err, tail(out, 40))
		}
		t.Logf("the schemata of %d mutants do not build (%v); building each mutant on its own instead:\n%s", len(sch.in), err, tail(out, 40))
		try = nil
	}
}

// replaced is every file the schemata replace or add.
func (s *schemata) replaced() map[string][]byte {
	all := make(map[string][]byte, len(s.files)+len(s.added))
	for f, b := range s.files {
		all[f] = b
	}
	for f, b := range s.added {
		all[f] = b
	}
	return all
}

// cmdOutput runs cmd, which prints to the returned buffer.
func cmdOutput(cmd *exec.Cmd) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = 10 * time.Second
	return &buf, cmd.Run()
}
