package mutation

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"sort"
	"strings"
)

// Mutant schemata: every mutant whose patches all lie inside function
// bodies is compiled into one tree, so that each test binary is built
// and linked once for all of them, and the mutant a run plays is chosen
// when the binary starts, by $MARKERWAVE_MUTANT (unset: the control).
//
// For each function a mutant patches, the schemata add a copy of the
// function per mutant, renamed mutant_<n>_<name>, with that mutant's
// patches applied (and only its own: two mutants of one function each
// get their copy), and the original begins with a switch on the active
// mutant that calls the copy with the original's receiver and arguments
// and returns what it returns. The switch is inserted on the line of the
// function's opening brace and each copy is preceded by a //line
// directive, so that file:line in a test's output is the one of the real
// source, as in a per-mutant build. The copy compiles exactly when the
// mutant's own build would: it is the function's text with the patch,
// in the same file, with the same imports.
//
// A patch outside any function body (a package-level declaration, a
// struct field, a constant table, an import) cannot be switched at run
// time this way, so its mutant keeps the per-mutant overlay build
// (schemata.fallback says why, for the log).

// schemaEnv is the variable that selects the active mutant in a test
// binary built from the schemata.
const schemaEnv = "MARKERWAVE_MUTANT"

// schemata is the mutated tree: files replaces tracked files (module
// relative paths), added adds one file per package that declares the
// switch's variable.
type schemata struct {
	files, added map[string][]byte
	in           map[string]bool   // the mutants built into the schemata
	fallback     map[string]string // the others, and why
}

// funcEdit is one function of a file that mutants patch: which mutants,
// with which of their patches.
type funcEdit struct {
	decl    *ast.FuncDecl
	mutants []int    // indices into the mutant list, in order
	copies  []string // each mutant's copy of the function
}

// parsedFile is one tracked Go file, parsed once.
type parsedFile struct {
	fset *token.FileSet
	file *ast.File
	src  []byte
}

func (pf *parsedFile) off(p token.Pos) int { return pf.fset.Position(p).Offset }

// buildSchemata builds the schemata of ms from the tracked files src,
// rooted (for the //line directives) at root.
func buildSchemata(root string, src tree, ms []mutant) (*schemata, error) {
	s := &schemata{files: map[string][]byte{}, added: map[string][]byte{}, in: map[string]bool{}, fallback: map[string]string{}}
	parsed := map[string]*parsedFile{}
	edits := map[string][]*funcEdit{} // per file
	for i, m := range ms {
		copies, why := mutantCopies(root, src, parsed, m, i)
		if why != "" {
			s.fallback[m.Name] = why
			continue
		}
		s.in[m.Name] = true
		for _, c := range copies {
			fe := editOf(edits, c.file, c.decl)
			fe.mutants = append(fe.mutants, i)
			fe.copies = append(fe.copies, c.text)
		}
	}
	for file, fes := range edits {
		pf := parsed[file]
		text, err := rewriteFile(pf, fes, ms)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		s.files[file] = text
		s.added[path.Join(path.Dir(file), "mutant_schemata_generated.go")] = switchFile(pf.file.Name.Name)
	}
	return s, nil
}

// fnCopy is mutant i's copy of one function it patches.
type fnCopy struct {
	file string
	decl *ast.FuncDecl
	text string
}

// mutantCopies is mutant m's (number i) copy of each function it
// patches, or why it cannot be in the schemata.
func mutantCopies(root string, src tree, parsed map[string]*parsedFile, m mutant, i int) ([]fnCopy, string) {
	located, why := locate(src, parsed, m)
	if why != "" {
		return nil, why
	}
	var cs []fnCopy
	for _, l := range located {
		if slices.ContainsFunc(cs, func(c fnCopy) bool { return c.decl == l.decl }) {
			continue
		}
		var ps []location
		for _, o := range located {
			if o.decl == l.decl {
				ps = append(ps, o)
			}
		}
		text, err := copyOf(path.Join(root, l.file), parsed[l.file], l.decl, ps, i)
		if err != nil {
			return nil, err.Error()
		}
		cs = append(cs, fnCopy{file: l.file, decl: l.decl, text: text})
	}
	return cs, ""
}

// location is one patch of a mutant, found in its function.
type location struct {
	file   string
	decl   *ast.FuncDecl
	patch  patch
	offset int
}

// locate finds the function body each patch of m lies in, or says why
// the mutant cannot be in the schemata.
func locate(src tree, parsed map[string]*parsedFile, m mutant) ([]location, string) {
	var ls []location
	for _, p := range m.Patches {
		b, ok := src[p.File]
		if !ok || bytes.Count(b, []byte(p.Old)) != 1 {
			return nil, "its anchor is not found once (the per-mutant build reports it)"
		}
		if !strings.HasSuffix(p.File, ".go") || strings.HasSuffix(p.File, "_test.go") {
			return nil, "it patches " + p.File + ", not a package's Go source"
		}
		pf, err := parse(parsed, p.File, b)
		if err != nil {
			return nil, fmt.Sprintf("%s does not parse: %v", p.File, err)
		}
		off := bytes.Index(b, []byte(p.Old))
		decl := enclosing(pf, off, off+len(p.Old))
		if decl == nil {
			return nil, "a patch of " + p.File + " is outside any function body"
		}
		ls = append(ls, location{file: p.File, decl: decl, patch: p, offset: off})
	}
	return ls, ""
}

func parse(parsed map[string]*parsedFile, file string, b []byte) (*parsedFile, error) {
	if pf, ok := parsed[file]; ok {
		return pf, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, b, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pf := &parsedFile{fset: fset, file: f, src: b}
	parsed[file] = pf
	return pf, nil
}

// enclosing is the function whose body holds the bytes [from, to), or
// nil.
func enclosing(pf *parsedFile, from, to int) *ast.FuncDecl {
	for _, d := range pf.file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Body != nil && pf.off(fd.Pos()) <= from && to <= pf.off(fd.Body.Rbrace) {
			return fd
		}
	}
	return nil
}

func editOf(edits map[string][]*funcEdit, file string, decl *ast.FuncDecl) *funcEdit {
	for _, fe := range edits[file] {
		if fe.decl == decl {
			return fe
		}
	}
	fe := &funcEdit{decl: decl}
	edits[file] = append(edits[file], fe)
	return fe
}

// splice is one edit of a text: the bytes [at, at+del) become ins.
type splice struct {
	at, del int
	ins     string
}

// apply applies the splices, which must not overlap, to b.
func apply(b []byte, ss []splice) []byte {
	sort.Slice(ss, func(i, j int) bool { return ss[i].at > ss[j].at })
	out := slices.Clone(b)
	for _, s := range ss {
		out = slices.Concat(out[:s.at], []byte(s.ins), out[s.at+s.del:])
	}
	return out
}

// rewriteFile is pf's text with, for each function of fes, the switch at
// its start and its mutants' copies at the end of the file.
func rewriteFile(pf *parsedFile, fes []*funcEdit, ms []mutant) ([]byte, error) {
	var ss []splice
	var copies strings.Builder
	for _, fe := range fes {
		sig, call, err := dispatchCall(pf, fe.decl)
		if err != nil {
			return nil, err
		}
		ss = append(ss, sig...)
		ss = append(ss, splice{at: pf.off(fe.decl.Body.Lbrace) + 1, ins: dispatch(fe, call, ms)})
		for _, c := range fe.copies {
			copies.WriteString(c)
		}
	}
	return append(apply(pf.src, ss), copies.String()...), nil
}

// copyName is the name of mutant i's copy of the function name.
func copyName(i int, name string) string { return fmt.Sprintf("mutant_%d_%s", i, name) }

// dispatch is the switch that starts the original function: each of its
// mutants calls its copy (call formats the call with the copy's name).
func dispatch(fe *funcEdit, call func(name string) string, ms []mutant) string {
	results := fe.decl.Type.Results != nil && fe.decl.Type.Results.NumFields() > 0
	var b strings.Builder
	b.WriteString(" switch mutantSchemaActive() {")
	for _, i := range fe.mutants {
		c := call(copyName(i, fe.decl.Name.Name))
		if results {
			fmt.Fprintf(&b, " case %q: return %s;", ms[i].Name, c)
		} else {
			fmt.Fprintf(&b, " case %q: %s; return;", ms[i].Name, c)
		}
	}
	b.WriteString(" };")
	return b.String()
}

// dispatchCall returns the edits that name the function's unnamed or
// blank receiver and parameters (the body cannot use them, so naming them
// changes nothing), and the call of a copy with them: the receiver's
// method, the type parameters instantiated with the function's own, the
// variadic parameter spread.
func dispatchCall(pf *parsedFile, fd *ast.FuncDecl) ([]splice, func(string) string, error) {
	var ss []splice
	recv := ""
	if fd.Recv != nil && len(fd.Recv.List) == 1 {
		names, s := nameFields(pf, fd.Recv, "mutantRecv")
		ss, recv = append(ss, s...), names[0]+"."
	}
	args, s := nameFields(pf, fd.Type.Params, "mutantArg")
	ss = append(ss, s...)
	if n := len(fd.Type.Params.List); n > 0 {
		if _, ok := fd.Type.Params.List[n-1].Type.(*ast.Ellipsis); ok {
			args[len(args)-1] += "..."
		}
	}
	inst := ""
	if fd.Type.TypeParams != nil {
		var tps []string
		for _, f := range fd.Type.TypeParams.List {
			for _, n := range f.Names {
				tps = append(tps, n.Name)
			}
		}
		inst = "[" + strings.Join(tps, ", ") + "]"
	}
	return ss, func(name string) string {
		return recv + name + inst + "(" + strings.Join(args, ", ") + ")"
	}, nil
}

// nameFields lists the names of the fields of fl, naming the unnamed and
// blank ones prefix0, prefix1, ... with the edits that do.
func nameFields(pf *parsedFile, fl *ast.FieldList, prefix string) ([]string, []splice) {
	var names []string
	var ss []splice
	for _, f := range fl.List {
		if len(f.Names) == 0 {
			n := fmt.Sprintf("%s%d", prefix, len(names))
			names = append(names, n)
			ss = append(ss, splice{at: pf.off(f.Type.Pos()), ins: n + " "})
			continue
		}
		for _, id := range f.Names {
			if id.Name == "_" {
				n := fmt.Sprintf("%s%d", prefix, len(names))
				ss = append(ss, splice{at: pf.off(id.Pos()), del: 1, ins: n})
				id = &ast.Ident{Name: n}
			}
			names = append(names, id.Name)
		}
	}
	return names, ss
}

// copyOf is mutant i's copy of the function decl: its text from the
// func keyword with the mutant's patches ps, renamed, after a //line
// directive that gives it the original's file and line. A patch may
// include the signature (an anchor that starts at the func line), but
// not change it: the copy must take what the original takes.
func copyOf(abs string, pf *parsedFile, decl *ast.FuncDecl, ps []location, i int) (string, error) {
	start := pf.off(decl.Pos())
	var ss []splice
	for _, p := range ps {
		ss = append(ss, splice{at: p.offset - start, del: len(p.patch.Old), ins: p.patch.New})
	}
	text := apply(pf.src[start:pf.off(decl.End())], ss)
	const head = "package p\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+string(text), parser.SkipObjectResolution)
	if err != nil || len(f.Decls) != 1 {
		return "", errors.New("its patched function does not parse (the per-mutant build reports it)")
	}
	fd, ok := f.Decls[0].(*ast.FuncDecl)
	at := func(p token.Pos) int { return fset.Position(p).Offset - len(head) }
	if !ok || fd.Body == nil || string(text[:at(fd.Body.Lbrace)]) != string(pf.src[start:pf.off(decl.Body.Lbrace)]) {
		return "", fmt.Errorf("a patch of %s changes the signature of %s", path.Base(abs), decl.Name.Name)
	}
	text = apply(text, []splice{{at: at(fd.Name.Pos()), del: len(fd.Name.Name), ins: copyName(i, fd.Name.Name)}})
	return fmt.Sprintf("\n\n//line %s:%d\n%s\n", abs, pf.fset.Position(decl.Pos()).Line, text), nil
}

// switchFile declares, in package pkg, the active mutant: read from the
// environment once, at the first call (not in a package variable's
// initializer, which could run after another's that calls a mutated
// function).
func switchFile(pkg string) []byte {
	return fmt.Appendf(nil, `package %s

import (
	"os"
	"sync"
)

var (
	mutantSchemaOnce sync.Once
	mutantSchemaName string
)

// mutantSchemaActive is the mutant this binary plays: $%s, or "" (the
// control).
func mutantSchemaActive() string {
	mutantSchemaOnce.Do(func() { mutantSchemaName = os.Getenv(%q) })
	return mutantSchemaName
}
`, pkg, schemaEnv, schemaEnv)
}
