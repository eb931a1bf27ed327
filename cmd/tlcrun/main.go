// Command tlcrun model-checks every model in tla/manifest.json with TLC and
// compares TLC's counts (distinct states, states generated, depth) and
// verdicts with the manifest. It is what `make tlc` runs.
//
//	go run ./cmd/tlcrun -jar /path/to/tla2tools.jar [-only MCRing] [-update]
//
// With -update it rewrites the manifest's measured numbers instead of
// comparing them.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/markerwave/markerwave/spec"
)

// Manifest is tla/manifest.json.
type Manifest struct {
	Comment string `json:"comment,omitempty"`
	Machine string `json:"machine,omitempty"`
	// SpecSHA256 is the sha256 of every .tla and .cfg file beside the
	// manifest when TLC's numbers were recorded: a changed spec or model
	// means the numbers must be measured again (make tlc ... -update).
	SpecSHA256 map[string]string `json:"spec_sha256"`
	Models     []Model           `json:"models"`
}

// SpecHashes returns the sha256 of every .tla and .cfg file in dir.
func SpecHashes(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	h := map[string]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tla") && !strings.HasSuffix(e.Name(), ".cfg") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		h[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return h, nil
}

// StaleFiles lists the files whose hash differs from the manifest's, or
// that one side lacks.
func (m Manifest) StaleFiles(now map[string]string) []string {
	var stale []string
	for name, sum := range now {
		if m.SpecSHA256[name] != sum {
			stale = append(stale, name)
		}
	}
	for name := range m.SpecSHA256 {
		if _, ok := now[name]; !ok {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	return stale
}

// Model is one TLC model and what TLC said of it.
type Model struct {
	Name            string        `json:"name"`
	Cfg             string        `json:"cfg"`
	Kind            string        `json:"kind"` // "positive" or "negative"
	Demonstrates    string        `json:"demonstrates"`
	ExpectViolation spec.Property `json:"expect_violation,omitempty"`
	TLC             Measure       `json:"tlc"`
	Go              *Measure      `json:"go,omitempty"`
}

// Measure is one checker's numbers for a model.
type Measure struct {
	Distinct  int64         `json:"distinct"`
	Generated int64         `json:"generated"`
	Depth     int64         `json:"depth"`
	Seconds   float64       `json:"seconds,omitempty"`
	MaxRSSKB  int64         `json:"max_rss_kb,omitempty"`
	Violation spec.Property `json:"violation,omitempty"`
	Version   string        `json:"version,omitempty"`
}

// Result is what one TLC run printed.
type Result struct {
	Measure
	Completed bool // "Model checking completed. No error has been found."
	Errors    []string
}

var (
	reGenerated = regexp.MustCompile(`(?m)^([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue\.`)
	reDepth     = regexp.MustCompile(`(?m)^The depth of the complete state graph search is (\d+)\.`)
	reInv       = regexp.MustCompile(`(?m)^Error: Invariant (\w+) is violated\.`)
	reTemporal  = regexp.MustCompile(`(?m)^Error: Temporal properties were violated\.|^Error: Temporal property (\w+) was violated\.`)
	reVersion   = regexp.MustCompile(`(?m)^TLC2 Version (\S+)`)
	reError     = regexp.MustCompile(`(?m)^Error: .*$`)
)

// Parse reads TLC's output.
func Parse(out string) (Result, error) {
	var r Result
	r.Completed = strings.Contains(out, "Model checking completed. No error has been found.")
	ms := reGenerated.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return r, errors.New("no \"states generated\" line in TLC's output")
	}
	m := ms[len(ms)-1]
	r.Generated, _ = strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	r.Distinct, _ = strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
	if d := reDepth.FindStringSubmatch(out); d != nil {
		r.Depth, _ = strconv.ParseInt(d[1], 10, 64)
	}
	if v := reVersion.FindStringSubmatch(out); v != nil {
		r.Version = v[1]
	}
	if v := reInv.FindStringSubmatch(out); v != nil {
		r.Violation = spec.Property(v[1])
	} else if v := reTemporal.FindStringSubmatch(out); v != nil {
		r.Violation = spec.Property(v[1])
		if r.Violation == "" {
			r.Violation = "temporal"
		}
	}
	r.Errors = reError.FindAllString(out, -1)
	return r, nil
}

const howToGetTLC = `TLC is missing: set TLA2TOOLS to the path of tla2tools.jar, e.g.
    make tlc TLA2TOOLS=/opt/tla/tla2tools.jar
tla2tools.jar is released at https://github.com/tlaplus/tlaplus/releases
(Java 11 or newer runs it). Building it from source: in a checkout of
tlaplus/tlaplus, run 'ant -f customBuild.xml compile dist' in
tlatools/org.lamport.tlatools; the jar lands in dist/.`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tlcrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jar := fs.String("jar", os.Getenv("TLA2TOOLS"), "path of tla2tools.jar (default $TLA2TOOLS)")
	manifestPath := fs.String("manifest", "tla/manifest.json", "the manifest")
	only := fs.String("only", "", "check only this model (by name)")
	update := fs.Bool("update", false, "record TLC's numbers in the manifest instead of comparing")
	java := fs.String("java", "java", "the java command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *jar == "" {
		fmt.Fprintln(stderr, howToGetTLC)
		return 2
	}
	if _, err := os.Stat(*jar); err != nil {
		fmt.Fprintf(stderr, "tlcrun: TLA2TOOLS=%s: %v\n\n%s\n", *jar, err, howToGetTLC)
		return 2
	}
	if _, err := exec.LookPath(*java); err != nil {
		fmt.Fprintf(stderr, "tlcrun: %s not found: TLC needs Java 11 or newer (Debian: apt-get install default-jre-headless)\n", *java)
		return 2
	}
	raw, err := os.ReadFile(*manifestPath)
	if err != nil {
		fmt.Fprintf(stderr, "tlcrun: %v\n", err)
		return 2
	}
	var man Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&man); err != nil {
		fmt.Fprintf(stderr, "tlcrun: %s: %v\n", *manifestPath, err)
		return 2
	}
	dir := filepath.Dir(*manifestPath)
	hashes, err := SpecHashes(dir)
	if err != nil {
		fmt.Fprintf(stderr, "tlcrun: %v\n", err)
		return 2
	}
	failed := 0
	if stale := man.StaleFiles(hashes); len(stale) > 0 && !*update {
		fmt.Fprintf(stdout, "FAIL the manifest's numbers predate changes to %s: measure again with -update\n", strings.Join(stale, ", "))
		failed++
	}
	for i := range man.Models {
		m := &man.Models[i]
		if *only != "" && m.Name != *only {
			continue
		}
		fmt.Fprintf(stdout, "== %s (%s): %s\n", m.Name, m.Kind, m.Demonstrates)
		res, err := check(*java, *jar, dir, *m, stdout)
		if err != nil {
			fmt.Fprintf(stdout, "FAIL %s: %v\n", m.Name, err)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "   %d distinct, %d generated, depth %d, %.1fs, max RSS %d MiB%s\n",
			res.Distinct, res.Generated, res.Depth, res.Seconds, res.MaxRSSKB/1024, violationNote(res.Violation))
		if *update {
			m.TLC = res.Measure
			continue
		}
		if problems := compare(*m, res); len(problems) > 0 {
			for _, p := range problems {
				fmt.Fprintf(stdout, "FAIL %s: %s\n", m.Name, p)
			}
			failed++
		} else {
			fmt.Fprintf(stdout, "ok   %s\n", m.Name)
		}
	}
	if *update {
		man.Machine = fmt.Sprintf("%s/%s, %d cores", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
		if *only == "" {
			man.SpecSHA256 = hashes
		}
		out, _ := json.MarshalIndent(man, "", "  ")
		if err := os.WriteFile(*manifestPath, append(out, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "tlcrun: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "updated %s\n", *manifestPath)
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "%d model(s) failed\n", failed)
		return 1
	}
	return 0
}

func violationNote(v spec.Property) string {
	if v == "" {
		return ""
	}
	return ", violated: " + string(v)
}

// compare checks a TLC result against the manifest: counts for positive
// models, the violated property for negative ones.
func compare(m Model, r Result) []string {
	var p []string
	switch m.Kind {
	case "positive":
		if !r.Completed || r.Violation != "" {
			p = append(p, fmt.Sprintf("TLC reported an error: %s", strings.Join(r.Errors, "; ")))
		}
		if r.Distinct != m.TLC.Distinct || r.Generated != m.TLC.Generated || r.Depth != m.TLC.Depth {
			p = append(p, fmt.Sprintf("counts differ from the manifest: got %d distinct/%d generated/depth %d, manifest %d/%d/%d",
				r.Distinct, r.Generated, r.Depth, m.TLC.Distinct, m.TLC.Generated, m.TLC.Depth))
		}
	case "negative":
		if r.Violation != m.ExpectViolation {
			p = append(p, fmt.Sprintf("expected TLC to report %s violated, it reported %q", m.ExpectViolation, r.Violation))
		}
	default:
		p = append(p, fmt.Sprintf("unknown kind %q (want positive or negative)", m.Kind))
	}
	return p
}

// check runs SANY then TLC on one model, in a scratch copy of the tla
// folder so TLC's state files stay out of the tree.
func check(java, jar, dir string, m Model, log io.Writer) (Result, error) {
	work, err := os.MkdirTemp("", "tlcrun-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(work)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Result{}, err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tla") || strings.HasSuffix(e.Name(), ".cfg") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return Result{}, err
			}
			if err := os.WriteFile(filepath.Join(work, e.Name()), b, 0o644); err != nil {
				return Result{}, err
			}
		}
	}
	cfg := m.Cfg
	module := strings.TrimSuffix(cfg, ".cfg") + ".tla"
	if _, err := os.Stat(filepath.Join(work, module)); err != nil {
		return Result{}, fmt.Errorf("model %s: no module %s beside %s", m.Name, module, cfg)
	}
	sany := exec.Command(java, "-cp", jar, "tla2sany.SANY", module)
	sany.Dir = work
	if out, err := sany.CombinedOutput(); err != nil || bytes.Contains(out, []byte("*** Errors")) {
		return Result{}, fmt.Errorf("SANY rejected %s: %v\n%s", module, err, tail(string(out), 20))
	}
	start := time.Now()
	tlc := exec.Command(java, "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC",
		"-workers", "auto", "-cleanup", "-metadir", filepath.Join(work, "states"),
		"-config", cfg, module)
	tlc.Dir = work
	out := &progressWriter{log: log}
	tlc.Stdout = out
	tlc.Stderr = out
	runErr := tlc.Run()
	secs := time.Since(start).Seconds()
	res, err := Parse(out.buf.String())
	if err != nil {
		return res, fmt.Errorf("%v (TLC exit: %v)\n%s", err, runErr, tail(out.buf.String(), 30))
	}
	res.Seconds = float64(int(secs*10)) / 10
	if ru, ok := tlc.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSSKB = ru.Maxrss
	}
	return res, nil
}

// progressWriter keeps all of TLC's output and passes its Progress lines
// through to log as they come, so long runs show life. exec calls Write
// from one goroutine at a time because Stdout and Stderr are the same.
type progressWriter struct {
	log     io.Writer
	buf     bytes.Buffer
	partial []byte
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		if line := string(w.partial[:i]); strings.HasPrefix(line, "Progress(") {
			fmt.Fprintf(w.log, "   %s\n", line)
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func jsonStrict(b []byte) *json.Decoder {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec
}
