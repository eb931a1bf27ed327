// Package tla owns tla/manifest.json, the record of every TLC model of the
// spec: what it demonstrates, and what TLC and the Go explorer measured on
// it. It is the manifest's one reader and writer; manifest.schema.json,
// beside it, says what a manifest may hold, and every manifest read or
// written is validated against it.
//
// To check a model against the manifest:
//
//  1. Load the manifest (Load, or Embedded for the copy built into the
//     binary); it is validated against the schema and decoded strictly.
//  2. Compare SpecHashes of the manifest's directory with the manifest
//     (StaleFiles): TLC's numbers hold for the files they were measured on.
//  3. Run the checker on each Model's Cfg and compare what it measured
//     with Model.Mismatches.
//  4. To record new numbers, set Model.TLC or Model.Go and Write.
//
// The package knows spec (for property names) and nothing else of the
// project; cmd/tlcrun runs the checkers.
package tla

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/markerwave/markerwave/spec"
)

// SchemaFile is the schema's file name beside the manifest.
const SchemaFile = "manifest.schema.json"

// schemaID is the schema's $id.
const schemaID = "https://github.com/markerwave/markerwave/tla/" + SchemaFile

var (
	//go:embed manifest.json
	manifestJSON []byte
	//go:embed manifest.schema.json
	schemaJSON []byte
)

// Manifest is tla/manifest.json.
type Manifest struct {
	Schema  string `json:"$schema,omitempty"`
	Comment string `json:"comment,omitempty"`
	Machine string `json:"machine,omitempty"`
	// SpecSHA256 is the sha256 of every .tla and .cfg file beside the
	// manifest when TLC's numbers were recorded: a changed spec or model
	// means the numbers must be measured again (cmd/tlcrun -update).
	SpecSHA256 map[string]string `json:"spec_sha256"`
	Models     []Model           `json:"models"`
}

// Kind says whether a model must hold or must fail.
type Kind string

// The kinds of model.
const (
	// Positive models hold; TLC's counts are what the Go explorer must
	// reproduce.
	Positive Kind = "positive"
	// Negative models violate their ExpectViolation. TLC stops at the
	// first violation, so its counts depend on its workers' interleaving.
	Negative Kind = "negative"
)

// Model is one TLC model and what TLC and the Go explorer said of it.
type Model struct {
	Name            string        `json:"name"`
	Cfg             string        `json:"cfg"` // relative to the manifest
	Kind            Kind          `json:"kind"`
	Demonstrates    string        `json:"demonstrates"`
	ExpectViolation spec.Property `json:"expect_violation,omitempty"`
	// Large models are checked only on request (cmd/tlcrun -large), by
	// the Go explorer in fingerprint mode; the Go parity tests skip them.
	Large bool `json:"large,omitempty"`
	// GoUnchecked are the properties the model's .cfg checks that the Go
	// explorer does not evaluate (the refinement, which only TLC checks).
	GoUnchecked []spec.Property `json:"go_unchecked,omitempty"`
	TLC         Measure         `json:"tlc"`
	Go          Measure         `json:"go"`
}

// Measure is one checker's numbers for a model, counted as TLC counts
// them (see the schema's descriptions).
type Measure struct {
	Distinct  int64         `json:"distinct"`
	Generated int64         `json:"generated"`
	Depth     int64         `json:"depth"`
	Seconds   float64       `json:"seconds"`
	MaxRSSKB  int64         `json:"max_rss_kb,omitempty"` // TLC's JVM only
	Violation spec.Property `json:"violation,omitempty"`
	Version   string        `json:"version"`
	// Incomplete says why and how the run stopped before covering every
	// state (TLC under a time limit on a large model); the counts are
	// those reached then.
	Incomplete string `json:"incomplete,omitempty"`
}

// Embedded returns the manifest built into the binary: tla/manifest.json
// as it was when the binary was built.
func Embedded() (*Manifest, error) { return Parse(manifestJSON) }

// Load reads and parses the manifest at path.
func Load(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Parse validates b against the schema and decodes it strictly (through
// spec.DecodeStrict).
func Parse(b []byte) (*Manifest, error) {
	if err := validate(b); err != nil {
		return nil, err
	}
	var m Manifest
	if err := spec.DecodeStrict(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// marshal encodes m as the manifest file holds it (two-space indents, a
// final newline), refusing a manifest the schema rejects.
func marshal(m *Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	if err := validate(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Write writes m to path, refusing a manifest the schema rejects.
func Write(path string, m *Manifest) error {
	b, err := marshal(m)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, b, 0o644)
}

var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SchemaFile, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaID, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaID)
})

// validate checks the JSON document b against manifest.schema.json.
func validate(b []byte) error {
	sch, err := compiledSchema()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		if serr := spec.DecodeStrict(b, new(any)); serr != nil {
			return serr // names the byte of the syntax error
		}
		return err
	}
	err = sch.Validate(doc)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		// The first line names the schema by its $id; the rest names each
		// place in the manifest and what is wrong there.
		_, places, _ := strings.Cut(verr.Error(), "\n")
		return fmt.Errorf("does not match %s:\n%s", SchemaFile, places)
	}
	return err
}

// SpecFiles lists the names of the .tla and .cfg files in dir: the specs
// and their models.
func SpecFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tla") || strings.HasSuffix(e.Name(), ".cfg") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// SpecHashes returns the sha256 of every .tla and .cfg file in dir.
func SpecHashes(dir string) (map[string]string, error) {
	names, err := SpecFiles(dir)
	if err != nil {
		return nil, err
	}
	h := map[string]string{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		h[name] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return h, nil
}

// StaleFiles lists the files whose hash differs from the manifest's, or
// that one side lacks.
func (m *Manifest) StaleFiles(now map[string]string) []string {
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
	slices.Sort(stale)
	return stale
}

// Mismatches lists how got, one checker's run of m, differs from the
// manifest: a positive model must hold with TLC's counts; a negative one
// must violate ExpectViolation. When record is not nil, got's counts must
// also equal record's (the Go explorer's search is deterministic, so its
// counts are compared for negative models too). Seconds, memory and
// versions are not compared.
func (m Model) Mismatches(got Measure, record *Measure) []string {
	var p []string
	switch m.Kind {
	case Positive:
		if got.Violation != "" {
			p = append(p, fmt.Sprintf("%s is violated in a positive model", got.Violation))
		}
		if d := m.countsMismatch(got); d != "" {
			p = append(p, d)
		}
	case Negative:
		if got.Violation != m.ExpectViolation {
			p = append(p, fmt.Sprintf("expected %s violated, got %q", m.ExpectViolation, got.Violation))
		}
	default:
		p = append(p, fmt.Sprintf("unknown kind %q (want %s or %s)", m.Kind, Positive, Negative))
	}
	if record != nil && !sameCounts(got, *record) {
		p = append(p, fmt.Sprintf("counts differ from the manifest's record: got %s, recorded %s", counts(got), counts(*record)))
	}
	return p
}

// countsMismatch says how got's counts, a positive model's, differ from
// TLC's: below those TLC reached if TLC stopped and got did not, not equal
// if both completed; "" if they agree or cannot be compared.
func (m Model) countsMismatch(got Measure) string {
	switch {
	case m.TLC.Incomplete != "" && got.Incomplete == "":
		if got.Distinct < m.TLC.Distinct || got.Generated < m.TLC.Generated || got.Depth < m.TLC.Depth {
			return fmt.Sprintf("counts below those TLC reached before it stopped: got %s, TLC %s", counts(got), counts(m.TLC))
		}
	case m.TLC.Incomplete != "" || got.Incomplete != "":
	case !sameCounts(got, m.TLC):
		return fmt.Sprintf("counts differ from TLC's: got %s, TLC %s", counts(got), counts(m.TLC))
	}
	return ""
}

// GoMismatches is Mismatches for the Go explorer's measure. A negative
// model whose expected violation is one the explorer does not evaluate
// (GoUnchecked: the refinement, which only TLC checks) must hold in the
// explorer's search, with the counts of its record.
func (m Model) GoMismatches(got Measure, record *Measure) []string {
	if m.Kind != Negative || !slices.Contains(m.GoUnchecked, m.ExpectViolation) {
		return m.Mismatches(got, record)
	}
	var p []string
	if got.Violation != "" {
		p = append(p, fmt.Sprintf("%s is violated, but the Go explorer does not evaluate %s, the violation expected: it should find none", got.Violation, m.ExpectViolation))
	}
	if record != nil && !sameCounts(got, *record) {
		p = append(p, fmt.Sprintf("counts differ from the manifest's record: got %s, recorded %s", counts(got), counts(*record)))
	}
	return p
}

func sameCounts(a, b Measure) bool {
	return a.Distinct == b.Distinct && a.Generated == b.Generated && a.Depth == b.Depth
}

func counts(m Measure) string {
	return fmt.Sprintf("%d distinct/%d generated/depth %d", m.Distinct, m.Generated, m.Depth)
}

// Table renders the models as the Markdown table docs/specs.md shows: name,
// kind, TLC's counts (a positive model's; a negative model stops at its
// first violation, so only the property it violates is shown; a large
// model TLC did not finish shows the Go explorer's) and what the model
// demonstrates.
func (m *Manifest) Table() string {
	var b strings.Builder
	b.WriteString("| model | kind | distinct states | states generated | depth | demonstrates |\n")
	b.WriteString("|---|---|---:|---:|---:|---|\n")
	for _, x := range m.Models {
		if x.Kind == Negative {
			fmt.Fprintf(&b, "| `%s` | negative, violates `%s` | | | | %s |\n", x.Name, x.ExpectViolation, x.Demonstrates)
			continue
		}
		kind, c := x.shownCounts()
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %d | %s |\n", x.Name, kind,
			thousands(c.Distinct), thousands(c.Generated), c.Depth, x.Demonstrates)
	}
	return b.String()
}

// shownCounts are the counts Table shows for positive model x, and its
// kind: TLC's, or the Go explorer's when TLC did not finish.
func (x Model) shownCounts() (kind string, c Measure) {
	switch {
	case x.TLC.Incomplete != "" && x.Go.Incomplete != "":
		return "positive, large (counts the Go explorer reached; neither checker finished)", x.Go
	case x.TLC.Incomplete != "":
		return "positive, large (the Go explorer's counts: TLC did not finish)", x.Go
	}
	return "positive", x.TLC
}

// thousands renders n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
