package mutation

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// countPhrase is how the docs say how many mutants there are: "90
// mutants in 10 packages". The table's last line says it, and so may
// README.md and any page of docs/; TestMutantTableCounts keeps them all equal
// to the mutants'.
func countPhrase(ms []mutant) string {
	return fmt.Sprintf("%d mutants in %d packages", len(ms), countPkgs(ms))
}

// countRE finds a count phrase, however a paragraph's lines wrap it.
var countRE = regexp.MustCompile(`\b\d+(\s+)mutants(\s+)in(\s+)\d+(\s+)packages\b`)

// TestMutantTableCounts: every "N mutants in M packages" in README.md and
// docs/*.md is the mutants' count (README.md must say it), so the number
// has one source, the mutants themselves; -update rewrites them, keeping
// each phrase's line breaks.
func TestMutantTableCounts(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	want := countPhrase(mutants)
	for _, page := range append([]string{"../../README.md"}, pages...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		got := countRE.FindAllString(string(b), -1)
		if len(got) == 0 && filepath.Base(page) == "README.md" {
			t.Errorf("README.md says nowhere %q", want)
		}
		fixed := countRE.ReplaceAllStringFunc(string(b), func(s string) string { return rewrap(s, want) })
		if fixed == string(b) {
			continue
		}
		if *update {
			if err := os.WriteFile(page, []byte(fixed), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the mutant count in %s", page)
			continue
		}
		t.Errorf("%s says %q where the mutants are %q: run go test ./conformance/mutation -run TestMutantTable -update", page, got, want)
	}
}

// rewrap is want ("N mutants in M packages") with the white space between
// its words taken from old, the phrase it replaces.
func rewrap(old, want string) string {
	gaps := countRE.FindStringSubmatch(old)[1:]
	words := regexp.MustCompile(` `).Split(want, -1)
	out := words[0]
	for i, w := range words[1:] {
		out += gaps[i] + w
	}
	return out
}
