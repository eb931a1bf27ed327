package conformance

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callGraph is the package's non-test code as calls between its files:
// edges[{a, b}] counts the calls in file a of a function or method
// declared in file b (a method by its name, when one file declares it),
// calls[{a, f}] the calls in file a of function f; pkgCalls counts the
// package-qualified calls into model and model/barrier.
type callGraph struct {
	edges    map[[2]string]int
	calls    map[[2]string]int
	pkgCalls int
}

func readCallGraph(t *testing.T) callGraph {
	t.Helper()
	files, declared := parsePackage(t)
	g := callGraph{edges: map[[2]string]int{}, calls: map[[2]string]int{}}
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				g.add(name, c, declared)
			}
			return true
		})
	}
	return g
}

// parsePackage parses the package's non-test files and maps each
// function, and each method as "." + its name, to the file declaring it
// ("?" if several files declare a method of that name).
func parsePackage(t *testing.T) (map[string]*ast.File, map[string]string) {
	paths, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	declared := map[string]string{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		require.NoError(t, err)
		files[p] = f
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				declare(declared, fd, p)
			}
		}
	}
	return files, declared
}

func declare(declared map[string]string, fd *ast.FuncDecl, file string) {
	key := fd.Name.Name
	if fd.Recv != nil {
		key = "." + key
	}
	if prev, dup := declared[key]; dup && prev != file {
		file = "?"
	}
	declared[key] = file
}

// add counts call c in file name.
func (g *callGraph) add(name string, c *ast.CallExpr, declared map[string]string) {
	callee := ""
	switch fn := c.Fun.(type) {
	case *ast.Ident:
		callee = fn.Name
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok && (x.Name == "model" || x.Name == "barrier") {
			g.pkgCalls++
			return
		}
		callee = "." + fn.Sel.Name
	}
	g.calls[[2]string{name, callee}]++
	if at, ok := declared[callee]; ok && at != name && at != "?" {
		g.edges[[2]string{name, at}]++
	}
}

// The audit has one dispatcher (dispatch.go): it alone chooses a replay,
// no replay calls it back, and no two files of the audit call each other
// both ways (before the dispatcher, six pairs did: replay.go and
// faultreplay.go 23 calls one way and 2 the other, restore.go and
// replay.go, ...).
func TestAuditHasOneDispatcher(t *testing.T) {
	g := readCallGraph(t)
	for e, n := range g.edges {
		assert.Zero(t, g.edges[[2]string{e[1], e[0]}], "%s and %s call each other (%d calls one way)", e[0], e[1], n)
	}
	replays := []string{"replayPlain", "replayFaults", "replayHistory", "replayIncarnation"}
	for k := range g.calls {
		file, callee := k[0], k[1]
		if slices.Contains(replays, callee) || callee == "AuditBarrier" || callee == "AuditSink" {
			assert.Equal(t, "dispatch.go", file, "%s chooses a replay (%s): only the dispatcher does", file, callee)
		}
		if callee == "Replay" || callee == "Audit" || callee == "AuditFile" {
			assert.Equal(t, "dispatch.go", file, "%s calls the dispatcher back (%s)", file, callee)
		}
	}
	total := 0
	for _, n := range g.edges {
		total += n
	}
	t.Logf("%d calls between the audit's files, none both ways; %d package-qualified calls into model and model/barrier", total, g.pkgCalls)
}
