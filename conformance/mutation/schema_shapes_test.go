package mutation

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// shapesSrc is a package with every shape of function the schemata must
// switch: a method (pointer receiver), an unnamed receiver and blank
// parameters, a variadic function, a generic one, no results and named
// results, init, and a function two mutants patch.
const shapesSrc = `package main

import (
	"fmt"
	"strings"
)

type T struct{ n int }

var order []string

func init() { order = append(order, "init") }

func (t *T) Add(k int) int { return t.n + k }

func (*T) Name(_ string, _ int) string { return "T" }

func Join(sep string, parts ...string) string { return strings.Join(parts, sep) }

func Max[E int | float64](a, b E) E {
	if a > b {
		return a
	}
	return b
}

func Say(s string) {
	fmt.Println("say", s)
}

func Split(n int) (lo, hi int) {
	lo, hi = n/2, n-n/2
	return
}

const table = 7

func main() {
	t := &T{n: 1}
	fmt.Println(order, t.Add(2), t.Name("x", 1), Join("-", "a", "b"), Max(3, 4), table)
	Say("hi")
	fmt.Println(Split(5))
}
`

// shapesMutants patch shapesSrc; want is each one's output.
var shapesMutants = []struct {
	m    mutant
	want string
}{
	{mutant{Name: "add", Patches: []patch{{File: "main.go", Old: "return t.n + k", New: "return t.n - k"}}}, "[init] -1 T a-b 4 7\nsay hi\n2 3\n"},
	{mutant{Name: "add-twice", Patches: []patch{{File: "main.go", Old: "return t.n + k", New: "return t.n + 2*k"}}}, "[init] 5 T a-b 4 7\nsay hi\n2 3\n"},
	{mutant{Name: "name", Patches: []patch{{File: "main.go", Old: `return "T"`, New: `return "U"`}}}, "[init] 3 U a-b 4 7\nsay hi\n2 3\n"},
	{mutant{Name: "join-max", Patches: []patch{
		{File: "main.go", Old: "strings.Join(parts, sep)", New: `strings.Join(parts, sep+sep)`},
		{File: "main.go", Old: "if a > b {", New: "if a < b {"},
	}}, "[init] 3 T a--b 3 7\nsay hi\n2 3\n"},
	{mutant{Name: "say", Patches: []patch{{File: "main.go", Old: "func Say(s string) {\n", New: "func Say(s string) {\n\ts += \"!\"\n"}}}, "[init] 3 T a-b 4 7\nsay hi!\n2 3\n"},
	{mutant{Name: "split", Patches: []patch{{File: "main.go", Old: "lo, hi = n/2, n-n/2", New: "lo, hi = n-n/2, n/2"}}}, "[init] 3 T a-b 4 7\nsay hi\n3 2\n"},
	{mutant{Name: "init", Patches: []patch{{File: "main.go", Old: `append(order, "init")`, New: `append(order, "tini")`}}}, "[tini] 3 T a-b 4 7\nsay hi\n2 3\n"},
	// Outside the schemata: a package-level constant, and a patch that
	// changes a signature.
	{mutant{Name: "table", Patches: []patch{{File: "main.go", Old: "const table = 7", New: "const table = 8"}}}, ""},
	{mutant{Name: "signature", Patches: []patch{{File: "main.go", Old: "func Say(s string) {", New: "func Say(string) {"}}}, ""},
}

// TestSchemataShapes: the schemata of shapesMutants put every mutant
// inside a function into the one build, each switched on alone by
// $MARKERWAVE_MUTANT (two mutants of one function each see only its
// patch), and the control is the original; a constant and a changed
// signature stay outside, saying why. Under -short only the generated
// files are parsed; otherwise the program is built once and run per
// mutant.
func TestSchemataShapes(t *testing.T) {
	dir := t.TempDir()
	var ms []mutant
	for _, s := range shapesMutants {
		ms = append(ms, s.m)
	}
	sch, err := buildSchemata(dir, tree{"main.go": []byte(shapesSrc)}, ms)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapesMutants {
		if in := sch.in[s.m.Name]; in != (s.want != "") {
			t.Errorf("mutant %s: in the schemata %t, want %t (fallback: %q)", s.m.Name, in, s.want != "", sch.fallback[s.m.Name])
		}
	}
	if w := sch.fallback["table"]; !strings.Contains(w, "outside any function body") {
		t.Errorf("table: fallback %q, want outside any function body", w)
	}
	if w := sch.fallback["signature"]; !strings.Contains(w, "changes the signature of Say") {
		t.Errorf("signature: fallback %q, want changes the signature of Say", w)
	}
	files := map[string][]byte{"go.mod": []byte("module shapes\n\ngo 1.22\n")}
	for f, b := range sch.replaced() {
		if _, err := parser.ParseFile(token.NewFileSet(), f, b, 0); err != nil {
			t.Fatalf("the schemata's %s does not parse: %v\n%s", f, err, b)
		}
		files[f] = b
	}
	if testing.Short() {
		return
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "shapes")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the schemata do not build: %v\n%s\n%s", err, out, files["main.go"])
	}
	runAs := func(name string) string {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), schemaEnv+"="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s=%s: %v\n%s", schemaEnv, name, err, out)
		}
		return string(out)
	}
	if got, want := runAs(""), "[init] 3 T a-b 4 7\nsay hi\n2 3\n"; got != want {
		t.Errorf("control: output %q, want the original's %q", got, want)
	}
	for _, s := range shapesMutants {
		if s.want != "" {
			if got := runAs(s.m.Name); got != s.want {
				t.Errorf("mutant %s: output %q, want %q", s.m.Name, got, s.want)
			}
		}
	}
}
