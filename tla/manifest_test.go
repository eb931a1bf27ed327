package tla

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

// The manifest in the tree is valid, lists every model with its files,
// is what Write would write, and was measured on today's spec files.
func TestManifestIsValidAndCurrent(t *testing.T) {
	man, err := Load("manifest.json")
	require.NoError(t, err)
	emb, err := Embedded()
	require.NoError(t, err)
	assert.Equal(t, man, emb)

	kinds := map[Kind]int{}
	names := map[string]bool{}
	for _, m := range man.Models {
		kinds[m.Kind]++
		assert.False(t, names[m.Name], "model %s listed twice", m.Name)
		names[m.Name] = true
		assert.Equal(t, m.Name+".cfg", m.Cfg)
		assert.FileExists(t, m.Cfg)
		assert.FileExists(t, strings.TrimSuffix(m.Cfg, ".cfg")+".tla")
	}
	assert.GreaterOrEqual(t, kinds[Positive], 4)
	assert.GreaterOrEqual(t, kinds[Negative], 3)

	b, err := marshal(man)
	require.NoError(t, err)
	raw, err := os.ReadFile("manifest.json")
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(b), "manifest.json is not in the form Write writes")

	hashes, err := SpecHashes(".")
	require.NoError(t, err)
	assert.Empty(t, man.StaleFiles(hashes), "tla/ changed since TLC's numbers were recorded: measure again with go run ./cmd/tlcrun -jar $TLA2TOOLS -update")
}

// The schema's property names are the spec's, and it documents every
// field it defines.
func TestSchemaSpeaksTheSpecsTerms(t *testing.T) {
	var schema map[string]any
	require.NoError(t, json.Unmarshal(schemaJSON, &schema))
	defs := schema["$defs"].(map[string]any)
	var enum []spec.Property
	for _, v := range defs["property"].(map[string]any)["enum"].([]any) {
		enum = append(enum, spec.Property(v.(string)))
	}
	assert.Equal(t, spec.ManifestProperties, enum)

	var undocumented []string
	var walk func(path string, node map[string]any)
	walk = func(path string, node map[string]any) {
		if _, ok := node["description"]; !ok {
			undocumented = append(undocumented, path)
		}
		props, _ := node["properties"].(map[string]any)
		for name, p := range props {
			if p, ok := p.(map[string]any); ok {
				walk(path+"."+name, p)
			}
		}
	}
	walk("(manifest)", schema)
	for name, d := range defs {
		if d, ok := d.(map[string]any); ok {
			walk("$defs."+name, d)
		}
	}
	assert.Empty(t, undocumented, "schema entries without a description")
}

// Parse rejects what the schema forbids, naming the place.
func TestInvalidManifestsAreRejected(t *testing.T) {
	raw, err := os.ReadFile("manifest.json")
	require.NoError(t, err)
	man, err := Parse(raw)
	require.NoError(t, err)
	pos := slices.IndexFunc(man.Models, func(m Model) bool { return m.Kind == Positive })
	neg := slices.IndexFunc(man.Models, func(m Model) bool { return m.Kind == Negative })
	require.True(t, pos >= 0 && neg >= 0)

	model := func(doc map[string]any, i int) map[string]any {
		return doc["models"].([]any)[i].(map[string]any)
	}
	cases := []struct {
		name  string
		edit  func(doc map[string]any)
		where string // the JSON pointer the error names
	}{
		{"wrong kind", func(d map[string]any) { model(d, pos)["kind"] = "neutral" }, "/models/0/kind"},
		{"unknown property expected", func(d map[string]any) { model(d, neg)["expect_violation"] = "Consistency" }, "expect_violation"},
		{"unknown property reported", func(d map[string]any) {
			model(d, neg)["tlc"].(map[string]any)["violation"] = "consistent_cut"
		}, "/tlc/violation"},
		{"missing counts", func(d map[string]any) { delete(model(d, pos)["tlc"].(map[string]any), "distinct") }, "/tlc"},
		{"missing go counts", func(d map[string]any) { delete(model(d, pos)["go"].(map[string]any), "generated") }, "/go"},
		{"no go record", func(d map[string]any) { delete(model(d, neg), "go") }, "go"},
		{"negative model without its property", func(d map[string]any) { delete(model(d, neg), "expect_violation") }, "expect_violation"},
		{"positive model expecting a violation", func(d map[string]any) {
			model(d, pos)["expect_violation"] = string(spec.PropConservation)
		}, "/models/0"},
		{"memory for the Go explorer", func(d map[string]any) { model(d, pos)["go"].(map[string]any)["max_rss_kb"] = 1 }, "max_rss_kb"},
		{"negative count", func(d map[string]any) { model(d, pos)["tlc"].(map[string]any)["depth"] = -1 }, "/tlc/depth"},
		{"unknown model field", func(d map[string]any) { model(d, pos)["expect"] = "ok" }, "expect"},
		{"unknown top-level field", func(d map[string]any) { d["modles"] = []any{} }, "modles"},
		{"bad hash", func(d map[string]any) { d["spec_sha256"].(map[string]any)["MCRing.cfg"] = "abc" }, "MCRing.cfg"},
		{"no models", func(d map[string]any) { d["models"] = []any{} }, "/models"},
	}
	require.Equal(t, 0, pos, "the cases name /models/0 as the positive model")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			c.edit(doc)
			b, err := json.Marshal(doc)
			require.NoError(t, err)
			_, err = Parse(b)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.where)
		})
	}

	_, err = Parse([]byte(`{"models": [`))
	assert.ErrorContains(t, err, "JSON")
	_, err = Parse(append(slices.Clone(raw), []byte(`{}`)...))
	assert.Error(t, err, "trailing data")
}

// Write refuses a manifest the schema rejects, and what it writes loads
// back unchanged.
func TestWriteRoundTrip(t *testing.T) {
	man, err := Embedded()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "manifest.json")
	require.NoError(t, Write(path, man))
	back, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, man, back)

	man.Models[0].Kind = "neutral"
	assert.ErrorContains(t, Write(path, man), "kind")
	back, err = Load(path)
	require.NoError(t, err, "a refused Write leaves the file alone")
	assert.Equal(t, Positive, back.Models[0].Kind)
}

func TestStaleFiles(t *testing.T) {
	m := &Manifest{SpecSHA256: map[string]string{"A.tla": "1", "B.cfg": "2", "C.tla": "3"}}
	assert.Empty(t, m.StaleFiles(map[string]string{"A.tla": "1", "B.cfg": "2", "C.tla": "3"}))
	assert.Equal(t, []string{"B.cfg", "C.tla", "D.tla"},
		m.StaleFiles(map[string]string{"A.tla": "1", "B.cfg": "9", "D.tla": "4"}))
}

// A large model's TLC run stopped by a time limit is not compared count
// for count: a complete search must only reach at least as far.
func TestMismatchesIncomplete(t *testing.T) {
	m := Model{Name: "Big", Kind: Positive, Large: true,
		TLC: Measure{Distinct: 100, Generated: 300, Depth: 5, Incomplete: "stopped after 30 min"}}
	assert.Empty(t, m.Mismatches(Measure{Distinct: 1000, Generated: 3000, Depth: 20}, nil))
	assert.Len(t, m.Mismatches(Measure{Distinct: 99, Generated: 3000, Depth: 20}, nil), 1)
	assert.Empty(t, m.Mismatches(Measure{Distinct: 50, Generated: 60, Depth: 2, Incomplete: "bounded"}, nil))
}

func TestMismatches(t *testing.T) {
	tlc := Measure{Distinct: 158, Generated: 285, Depth: 10}
	pos := Model{Name: "M", Kind: Positive, TLC: tlc}
	assert.Empty(t, pos.Mismatches(tlc, nil))
	got := tlc
	got.Distinct = 157
	assert.Len(t, pos.Mismatches(got, nil), 1)
	assert.Len(t, pos.Mismatches(got, &tlc), 2, "differs from TLC's and from the record")
	got = tlc
	got.Violation = spec.PropConservation
	assert.Len(t, pos.Mismatches(got, nil), 1, "a positive model must hold")

	neg := Model{Name: "N", Kind: Negative, ExpectViolation: spec.PropConservation}
	got = Measure{Distinct: 101, Generated: 167, Depth: 7, Violation: spec.PropConservation}
	assert.Empty(t, neg.Mismatches(got, nil), "TLC's counts of a negative model are not compared")
	assert.Empty(t, neg.Mismatches(got, &got))
	rec := got
	rec.Depth = 8
	assert.Len(t, neg.Mismatches(got, &rec), 1, "the Go explorer's counts of a negative model are")
	neg.ExpectViolation = spec.PropConsistentCut
	assert.Len(t, neg.Mismatches(got, nil), 1)
	got.Violation = ""
	assert.Len(t, neg.Mismatches(got, nil), 1, "a negative model on which nothing is found fails")
}

// A negative model whose expected violation the Go explorer does not
// evaluate (go_unchecked) must hold in the explorer's search.
func TestGoMismatchesUnchecked(t *testing.T) {
	neg := Model{Name: "R", Kind: Negative, ExpectViolation: spec.PropSnapshotRefinement,
		GoUnchecked: []spec.Property{spec.PropSnapshotRefinement}}
	got := Measure{Distinct: 689, Generated: 1351, Depth: 22}
	assert.Empty(t, neg.GoMismatches(got, &got))
	assert.Len(t, neg.Mismatches(got, nil), 1, "TLC must still report the violation")
	rec := got
	rec.Distinct = 1
	assert.Len(t, neg.GoMismatches(got, &rec), 1, "the counts are compared with the record")
	bad := got
	bad.Violation = spec.PropSnapshotRefinement
	assert.Len(t, neg.GoMismatches(bad, nil), 1, "the explorer cannot have found what it does not evaluate")

	checked := Model{Name: "N", Kind: Negative, ExpectViolation: spec.PropReportedTypeTaken,
		GoUnchecked: []spec.Property{spec.PropSnapshotRefinement}}
	assert.Len(t, checked.GoMismatches(got, nil), 1, "a violation the explorer evaluates must be found")
}

var updateReadme = flag.Bool("update", false, "rewrite docs/specs.md's table of models from the manifest")

// TestReadmeTable: docs/specs.md (the README's page on the specs) shows
// the manifest's models as Manifest.Table renders them, between the
// markers; -update rewrites it.
func TestReadmeTable(t *testing.T) {
	const begin, end = "<!-- models:begin -->\n", "<!-- models:end -->\n"
	m, err := Embedded()
	require.NoError(t, err)
	path := filepath.Join("..", "docs", "specs.md")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	require.True(t, i >= 0 && j > i, "docs/specs.md has no %q ... %q section", begin, end)
	want := begin + "<!-- Written by go test ./tla -run TestReadmeTable -update, from tla/manifest.json: edit that, not this table. -->\n\n" + m.Table() + "\n"
	if got := s[i:j]; got != want {
		if *updateReadme {
			require.NoError(t, os.WriteFile(path, []byte(s[:i]+want+s[j:]), 0o644))
			return
		}
		t.Errorf("docs/specs.md's table of models is not the manifest's; run go test ./tla -run TestReadmeTable -update\n--- docs/specs.md\n%s\n--- manifest\n%s", got, want)
	}
}

// TestReadmeCounts: the README's sentence on the models gives the
// manifest's counts: all of them, the positive ones both checkers
// finished, the negative ones, and the large ones (Model.Large).
func TestReadmeCounts(t *testing.T) {
	m, err := Embedded()
	require.NoError(t, err)
	var pos, neg, large int
	for _, x := range m.Models {
		switch {
		case x.Large:
			large++
		case x.Kind == Positive:
			pos++
		default:
			neg++
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	words := map[int]string{1: "one", 2: "two", 3: "three", 4: "four"}
	readme := strings.Join(strings.Fields(string(b)), " ")
	want := fmt.Sprintf("%d TLC models: %d positive models checked completely by both", len(m.Models), pos)
	assert.Contains(t, readme, want)
	assert.Contains(t, readme, fmt.Sprintf("), %d negative ones,", neg))
	assert.Contains(t, readme, fmt.Sprintf("and %s large ones for the Go explorer alone", words[large]))
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 683005: "683,005", 1234567: "1,234,567", -1000: "-1,000"} {
		assert.Equal(t, want, thousands(n))
	}
}
