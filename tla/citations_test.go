package tla

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCitationsMatchTheSpecs keeps the Go comments' TLA+ line citations
// true as the specs grow. A comment citing "(line 56)", "(lines 269-271)",
// "line 185" or "lines 112 and 121" names what it cites just before:
//
//	// In is In(n) (line 56): the edges into n.
//	// ... RecvBarrierA(e) (tla/BarrierAdaptive.tla lines 88-95, ...
//	ErrNotSource = errors.New("not a source") // s \in Src (lines 283-284)
//	PropTypeOK Property = "TypeOK" // lines 267-281
//
// For every such citation in the repository's .go comments (not vendor/,
// not testdata/) the test works out the spec and the TLA+ names given,
// and checks each cited range against the spec's text outside its
// comments.
//
// The spec: the file named beside the citation ("tla/F.tla line 52",
// "X of F.tla (lines", "lines 61-97 of F.tla"). Else the context's: the
// last spec file the comment names before it, else the last one the
// enclosing declaration's doc comment names, else citeDefaults; and,
// for a name the context's spec does not define itself, the spec of its
// scope (EXTENDS) or the one spec that defines it (In(n), from
// tla/BarrierAdaptive.tla's context, is tla/BarrierSnapshots.tla's). The
// citation holds if it holds in one of these.
//
// The names: right before the citation (past a file name and one of
// "(", ",", ";", ":"), a TLA+ expression (In(n), Fwd(r, e, k), mode[n],
// recChan', e \in In(n), [Next]_vars) or a list of them joined by ","
// and "and"; "X's conjuncts" (a part of X); "the CONSTANTS of",
// "the variables F.tla adds", "those of F.tla" (a declaration); for a
// trailing comment that begins with the citation, the identifier-shaped
// string literal of its line ("TypeOK"); the list after "(lines 211-218:";
// or what the citation's parenthesis begins with ("(recOff, recCnt,
// recOut and ...: lines 269-271)", also tried when the names before it
// fail: "(RecvApp and RecvMarker for Spec, lines 257-258)"). Of these,
// the identifiers that the specs define or declare, and ASSUME, are
// checked; a defined operator's arguments are not (Detect(q)). A bare
// lower-case word after a plain word is prose ("the adaptive mode").
//
// The check, per range (with as many expressions as ranges, "Detect and
// FalseSuspect lines 112 and 121", they pair up): every name is on a
// line of the range, or the range holds its definition or declaration,
// or lies in the body of the definition it heads (a conjunct of
// SendAppF, the ASSUME); if the range holds the definition of one
// expression's operator it holds all of theirs (not Out's alone for
// "In(n) and Out(n)"); and a citation of an operator begins with one of
// the names (not on a blank line, nor inside a comment, nor on a
// one-line comment: a comment of two lines or more above a definition
// may begin it; nor with a helper definition the rest of the range does
// not use); a CONSTANTS or VARIABLES citation begins in the declaration.
// Past the file's end is an error. The test also moves every citation
// that holds a line up, a line down and five down, and fails if more
// than maxStillHold percent of them still hold: a looser check is caught.
//
// Not checked, only counted (CITATIONS_UNCHECKED=1 go test -v lists
// them): citations naming no spec identifier ("the ASSUME says (line
// 67)", "// line 115" beside the code it cites, "(line 52, "aligned" or
// "unaligned")"), where a range ends inside its definition, and what a
// comment says beyond its names. Line numbers of traces and logs ("trace
// line 2", "the file's line 5") are not citations. String literals
// (errors, spec.Quote) are not read; the models' TestConjunctSources
// QuoteTheSpec tests check the quotes.
func TestCitationsMatchTheSpecs(t *testing.T) {
	r := &tally{specs: loadSpecs(t)}
	for _, rel := range goFiles(t) {
		for _, c := range fileCitations(t, rel, r.specs) {
			r.add(t, c)
		}
	}
	t.Logf("%d citations checked, %d not checkable (no TLA+ name given)", r.checked, len(r.unchecked))
	r.logUnchecked(t)
	if r.checked < 300 {
		t.Errorf("only %d citations found to check: the scan is broken", r.checked)
	}
	// The check has teeth: moved a line up or down, as a spec growing
	// by one line moves them, most citations that hold fail.
	for _, by := range []int{-1, 1, 5} {
		r.moveAll(t, by)
	}
}

// maxStillHold is the percentage of citations that may still hold when
// moved a line: those of a definition cited with its body, whose head
// still covers the lines moved within it.
const maxStillHold = 25

// A tally counts the citations checked and keeps those that hold.
type tally struct {
	specs     *specSet
	checked   int
	unchecked []string // file:line: text of those naming nothing checkable
	good      []citation
}

func (r *tally) add(t *testing.T, c citation) {
	if !slices.ContainsFunc(c.names, nonEmpty) {
		r.unchecked = append(r.unchecked, c.where+": "+c.text)
		return
	}
	r.checked++
	if msg := r.specs.check(c); msg != "" {
		t.Error(msg)
		return
	}
	r.good = append(r.good, c)
}

func (r *tally) logUnchecked(t *testing.T) {
	if !testing.Verbose() || os.Getenv("CITATIONS_UNCHECKED") == "" {
		return
	}
	for _, u := range r.unchecked {
		t.Log("unchecked: " + u)
	}
}

// moveAll moves every citation that holds by lines, and fails if more
// than maxStillHold percent of them still hold.
func (r *tally) moveAll(t *testing.T, by int) {
	still := 0
	for _, c := range r.good {
		if r.specs.check(c.moved(by)) == "" {
			still++
		}
	}
	t.Logf("moved %+d lines, %d of %d citations still hold", by, still, len(r.good))
	if still*100 > len(r.good)*maxStillHold {
		t.Errorf("moved %+d lines, %d of %d citations still hold: the check is too loose", by, still, len(r.good))
	}
}

func (c citation) moved(by int) citation {
	m := c
	m.ranges = nil
	for _, r := range c.ranges {
		m.ranges = append(m.ranges, [2]int{r[0] + by, r[1] + by})
	}
	return m
}

func nonEmpty(ns []string) bool { return len(ns) > 0 }

// goFiles are the repository's .go files, from its root, but this one
// and those of vendor/, testdata/ and hidden directories.
func goFiles(t *testing.T) []string {
	var w walk
	if err := fs.WalkDir(os.DirFS(".."), ".", w.visit); err != nil {
		t.Fatal(err)
	}
	return w.paths
}

type walk struct{ paths []string }

func (w *walk) visit(path string, d fs.DirEntry, err error) error {
	switch {
	case err != nil:
		return err
	case d.IsDir():
		return enterDir(path, d.Name())
	case strings.HasSuffix(path, ".go") && path != "tla/citations_test.go":
		w.paths = append(w.paths, path)
	}
	return nil
}

var skipDirs = map[string]bool{"vendor": true, "testdata": true, "node_modules": true}

func enterDir(path, name string) error {
	if path != "." && (skipDirs[name] || strings.HasPrefix(name, ".")) {
		return fs.SkipDir
	}
	return nil
}

// citeDefaults are the spec files that the citations of a file or
// package cite when the comment names none: the longest matching path
// prefix (a directory with "/", or a file) wins.
var citeDefaults = map[string]string{
	"model/":                     "ChandyLamport.tla",
	"model/faults.go":            "ChandyLamportFaults.tla",
	"model/barrier/":             "BarrierSnapshots.tla",
	"model/barrier/adaptive.go":  "BarrierAdaptive.tla",
	"model/barrier/sink":         "BarrierSink.tla", // sink.go, sink_*.go
	"spec/":                      "ChandyLamport.tla",
	"spec/barrier_":              "BarrierSnapshots.tla",
	"spec/event.go":              "ChandyLamportFaults.tla",
	"spec/restore.go":            "ChandyLamportFaults.tla",
	"spec/abort.go":              "ChandyLamportFaults.tla",
	"impl/dataflow/":             "BarrierSnapshots.tla",
	"impl/dataflow/adaptive.go":  "BarrierAdaptive.tla",
	"impl/core/":                 "ChandyLamport.tla",
	"impl/core/faults.go":        "ChandyLamportFaults.tla",
	"impl/runtime/":              "ChandyLamportFaults.tla",
	"impl/store/":                "ChandyLamportFaults.tla",
	"conformance/":               "ChandyLamport.tla",
	"conformance/barrier_":       "BarrierSnapshots.tla",
	"conformance/faultreplay.go": "ChandyLamportFaults.tla",
	"conformance/restore.go":     "ChandyLamportFaults.tla",
	"conformance/history.go":     "ChandyLamportFaults.tla",
	"conformance/mutation/":      "ChandyLamportFaults.tla",
	"web/explorer/":              "ChandyLamport.tla",
	"web/explorer/barrier_":      "BarrierSnapshots.tla",
}

func defaultSpec(rel string) string {
	best := ""
	for p := range citeDefaults {
		if strings.HasPrefix(rel, p) && len(p) > len(best) {
			best = p
		}
	}
	return citeDefaults[best]
}

// A spec is one tla/*.tla file: its lines with the comments blanked, and
// for each line the line of the definition it lies in (0 if none).
type specFile struct {
	name    string
	extends []string // the modules of tla/ it extends
	raw     []string
	code    []string
	head    []int
	defEnd  map[int]int    // a definition's last line that is not blank, by its head's
	defAt   map[string]int // a defined or declared name's line
}

type specSet struct {
	files   map[string]*specFile
	defined map[string]bool // names some spec defines or declares, and ASSUME
}

// keywords are the TLA+ words a citation may name, in any spec.
var keywords = map[string]bool{"ASSUME": true, "CONSTANTS": true, "VARIABLES": true}

var (
	defHead   = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*==`)
	declHead  = regexp.MustCompile(`^(CONSTANTS?|VARIABLES?)\b(.*)$`)
	declName  = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*,?\s*$`)
	headStart = regexp.MustCompile(`^[^ \t]`)
	extendsRe = regexp.MustCompile(`(?m)^EXTENDS (.*)$`)
	// tlaWord matches an identifier, and \in, \X and the like whole, so
	// that they do not hold in or X.
	tlaWord = regexp.MustCompile(`\\?[A-Za-z_][A-Za-z0-9_]*`)
	// tlaComment matches a string, which is kept, or a comment.
	tlaComment = regexp.MustCompile(`"[^"\n]*"|\(\*(?s:.*?)\*\)|\\\*[^\n]*`)
	notNewline = regexp.MustCompile(`[^\n]`)
	// rule is a ---- or ==== line.
	rule = regexp.MustCompile(`^\s*(-{4,}|={4,})\s*$`)
)

func loadSpecs(t *testing.T) *specSet {
	paths, err := filepath.Glob("*.tla")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no spec files: %v", err)
	}
	ss := &specSet{files: map[string]*specFile{}, defined: maps.Clone(keywords)}
	for _, p := range paths {
		ss.add(readSpec(t, p, paths))
	}
	return ss
}

func (ss *specSet) add(s *specFile) {
	ss.files[s.name] = s
	if strings.HasPrefix(s.name, "MC") || strings.HasPrefix(s.name, "Trace") {
		return
	}
	for name := range s.defAt {
		ss.defined[name] = true
	}
}

func readSpec(t *testing.T, p string, paths []string) *specFile {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := &specFile{name: p, raw: strings.Split(string(b), "\n"), defAt: map[string]int{}, defEnd: map[int]int{}}
	s.code = stripTLAComments(string(b))
	s.index()
	s.extends = extendsOf(strings.Join(s.code, "\n"), paths)
	return s
}

// extendsOf lists the modules of tla/ (of paths) that code EXTENDS.
func extendsOf(code string, paths []string) []string {
	var ext []string
	for _, m := range extendsRe.FindAllStringSubmatch(code, -1) {
		for _, name := range strings.Split(m[1], ",") {
			if name = strings.TrimSpace(name) + ".tla"; slices.Contains(paths, name) {
				ext = append(ext, name)
			}
		}
	}
	return ext
}

// stripTLAComments blanks \* line comments and (* *) block comments
// (across lines, not nested: no spec nests them), leaving the code.
func stripTLAComments(text string) []string {
	lines := strings.Split(tlaComment.ReplaceAllStringFunc(text, blankComment), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

func blankComment(m string) string {
	if m[0] == '"' {
		return m
	}
	return notNewline.ReplaceAllString(m, " ")
}

// A heading is the definition or declaration a line lies in.
type heading struct {
	line int  // its first line, 0 if none
	decl bool // a CONSTANTS or VARIABLES declaration
}

// index records the heading each line lies in, where each definition
// ends, and the line of each name defined or declared.
func (s *specFile) index() {
	s.head = make([]int, len(s.code))
	var h heading
	for i, l := range s.code {
		h = s.headingAt(h, l, i+1)
		s.head[i] = h.line
		if h.line > 0 && l != "" {
			s.defEnd[h.line] = i + 1
		}
	}
}

// headingAt is the heading of line n, l, below heading h: an indented or
// blank line continues h (and declares the names of a declaration's).
func (s *specFile) headingAt(h heading, l string, n int) heading {
	if headStart.MatchString(l) {
		return s.readHead(l, n)
	}
	if h.decl {
		s.declare(l, n)
	}
	return h
}

func (s *specFile) readHead(l string, n int) heading {
	if m := defHead.FindStringSubmatch(l); m != nil {
		s.defAt[m[1]] = n
		return heading{line: n}
	}
	if m := declHead.FindStringSubmatch(l); m != nil {
		s.declare(m[2], n)
		return heading{line: n, decl: true}
	}
	if strings.HasPrefix(l, "ASSUME") {
		return heading{line: n}
	}
	return heading{}
}

// declare records the names of l, a declaration's list, at line n.
func (s *specFile) declare(l string, n int) {
	for _, w := range strings.Split(l, ",") {
		if m := declName.FindStringSubmatch(w); m != nil {
			s.defAt[m[1]] = n
		}
	}
}

// definer is the spec file, f or one it extends, that defines name; ""
// if none does.
func (ss *specSet) definer(f, name string) string {
	s := ss.files[f]
	if s == nil {
		return ""
	}
	if keywords[name] || s.defAt[name] > 0 {
		return f
	}
	for _, e := range s.extends {
		if d := ss.definer(e, name); d != "" {
			return d
		}
	}
	return ""
}

// soleDefiner is the one spec, models aside, that defines name; "" if
// none or several do.
func (ss *specSet) soleDefiner(name string) string {
	var by []string
	for f, s := range ss.files {
		if s.defAt[name] > 0 && !strings.HasPrefix(f, "MC") {
			by = append(by, f)
		}
	}
	if len(by) == 1 {
		return by[0]
	}
	return ""
}

// candidates are the spec files c may cite: the one the comment names
// beside the citation; else the one the context gives (a file named
// earlier in the comment, in the declaration's doc comment, or the
// default) and, for each name c gives, the file of that spec's scope
// that defines it (In(n), cited from tla/BarrierAdaptive.tla's context,
// is tla/BarrierSnapshots.tla's), or the one spec that defines it.
func (ss *specSet) candidates(c citation) []string {
	if c.file != "" {
		return []string{c.file}
	}
	files := []string{c.ctx}
	for _, n := range c.allNames() {
		files = appendNew(files, cmp.Or(ss.definer(c.ctx, n), ss.soleDefiner(n)))
	}
	return files
}

func appendNew(files []string, f string) []string {
	if f == "" || slices.Contains(files, f) {
		return files
	}
	return append(files, f)
}

// inScope keeps, of each of c's expressions, the names file's scope
// defines.
func (ss *specSet) inScope(c citation, file string) [][]string {
	out := make([][]string, len(c.names))
	for i, ns := range c.names {
		for _, n := range ns {
			if ss.definer(file, n) != "" {
				out[i] = append(out[i], n)
			}
		}
	}
	return out
}

// hasWord reports whether TLA+ text s holds name as a whole identifier
// (not the tail of \in, r.hops's field counts).
func hasWord(s, name string) bool {
	return slices.Contains(tlaWord.FindAllString(s, -1), name)
}

// A citation of lines of a spec, and the names that its lines must hold.
type citation struct {
	where  string     // Go file:line
	text   string     // the comment's words around the citation
	file   string     // the spec file, e.g. BarrierSnapshots.tla
	ranges [][2]int   // the cited lines, first and last
	ctx    string     // the spec file the context gives, if file is ""
	part   bool       // names a part of a definition: "of X", "X's conjuncts"
	names  [][]string // per expression named, the spec names it uses
	// alt is what the parenthesis the citation stands in opens with, if
	// that is not names: "(RecvApp and RecvMarker for Spec, line 257)".
	alt [][]string
}

func (c citation) allNames() []string { return slices.Concat(c.names...) }

// exprs are the expressions range i must hold: its own when there are as
// many as ranges, else all.
func (c citation) exprs(i int) [][]string {
	if len(c.names) == len(c.ranges) && len(c.ranges) > 1 {
		return c.names[i : i+1]
	}
	return c.names
}

// check returns what is wrong with c, "" if nothing is: some candidate
// spec's cited lines hold every name c gives that the spec's scope
// defines, or every name of the alternative reading.
func (ss *specSet) check(c citation) string {
	msg := ss.checkNames(c)
	if msg != "" && c.alt != nil {
		c.names = c.alt
		if ss.checkNames(c) == "" {
			return ""
		}
	}
	return msg
}

func (ss *specSet) checkNames(c citation) string {
	files := ss.candidates(c)
	if ss.files[files[0]] == nil {
		return fmt.Sprintf("%s: cites %s, which is not a file of tla/: %s", c.where, files[0], c.text)
	}
	var msgs []string
	for _, f := range files {
		names := ss.inScope(c, f)
		if !slices.ContainsFunc(names, nonEmpty) {
			continue
		}
		msg := ss.checkIn(c, f, names)
		if msg == "" {
			return ""
		}
		msgs = ss.addReport(msgs, f, names, msg)
	}
	if len(msgs) == 0 {
		return fmt.Sprintf("%s: cites tla/%s for %s, which it does not define: %s", c.where, files[0], strings.Join(c.allNames(), ", "), c.text)
	}
	return strings.Join(msgs, "\n\t(nor:) ")
}

// addReport adds the report msg of spec f to msgs: first if f defines
// the first of names.
func (ss *specSet) addReport(msgs []string, f string, names [][]string, msg string) []string {
	if ss.files[f].defAt[names[slices.IndexFunc(names, nonEmpty)][0]] > 0 {
		return append([]string{msg}, msgs...)
	}
	return append(msgs, msg)
}

func (ss *specSet) checkIn(c citation, file string, names [][]string) string {
	c.file, c.names = file, names
	for i := range c.ranges {
		if msg := ss.checkRange(c, i); msg != "" {
			return msg
		}
	}
	return ""
}

func (ss *specSet) checkRange(c citation, i int) string {
	s, r := ss.files[c.file], c.ranges[i]
	if !s.within(r) {
		return fmt.Sprintf("%s: cites tla/%s lines %d-%d, past its %d lines: %s", c.where, c.file, r[0], r[1], len(s.raw), c.text)
	}
	exprs := c.exprs(i)
	want := slices.Concat(exprs...)
	if j := slices.IndexFunc(want, func(n string) bool { return !s.holds(r, n, c.part) }); j >= 0 {
		return s.notHeld(c, r, want[j])
	}
	if msg := cmp.Or(s.definitions(r, exprs), s.bounds(r, want, c.part)); msg != "" {
		return fmt.Sprintf("%s: stale citation: tla/%s lines %d-%d %s\n\tthe comment: %s", c.where, c.file, r[0], r[1], msg, c.text)
	}
	return ""
}

func (s *specFile) within(r [2]int) bool {
	return r[0] >= 1 && r[0] <= r[1] && r[1] <= len(s.raw)
}

func inRange(r [2]int, n int) bool { return r[0] <= n && n <= r[1] }

// notHeld reports that lines r do not hold name: what they hold, and
// where name is.
func (s *specFile) notHeld(c citation, r [2]int, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: stale citation: tla/%s %s do not hold %s\n\tthe comment: %s\n\tthose lines:", c.where, c.file, lineWords(r), name, c.text)
	for n := r[0]; n <= min(r[1], r[0]+5); n++ {
		fmt.Fprintf(&b, "\n\t\t%d: %s", n, strings.TrimSpace(s.raw[n-1]))
	}
	return b.String() + s.whereIs(name)
}

func lineWords(r [2]int) string {
	if r[1] > r[0] {
		return fmt.Sprintf("lines %d-%d", r[0], r[1])
	}
	return fmt.Sprintf("line %d", r[0])
}

// whereIs tells where s defines name, or where it occurs.
func (s *specFile) whereIs(name string) string {
	if n := s.defAt[name]; n > 0 {
		return fmt.Sprintf("\n\t%s is defined at line %d: %s", name, n, strings.TrimSpace(s.raw[n-1]))
	}
	if at := s.occurrences(name, 5); len(at) > 0 {
		return fmt.Sprintf("\n\t%s occurs at lines %v", name, at)
	}
	return ""
}

// heads reports whether line h is the head of name's definition, or
// keyword name's (the ASSUME's).
func (s *specFile) heads(h int, name string) bool {
	if keywords[name] {
		return strings.HasPrefix(s.code[h-1], name)
	}
	m := defHead.FindStringSubmatch(s.code[h-1])
	return m != nil && m[1] == name
}

// isOp reports whether name is an operator s defines.
func (s *specFile) isOp(name string) bool {
	d := s.defAt[name]
	return d > 0 && defHead.MatchString(s.code[d-1])
}

// definitions checks a citation of definitions: if r holds the
// definition of the operator one of the expressions names first, it
// holds those of all of them ("In(n) and Out(n) (lines 56-57)"; Out's
// alone and In's use in InF's are not enough).
func (s *specFile) definitions(r [2]int, exprs [][]string) string {
	var in, out []string
	for _, ns := range exprs {
		i := slices.IndexFunc(ns, s.isOp)
		switch {
		case i < 0:
		case inRange(r, s.defAt[ns[i]]):
			in = append(in, ns[i])
		default:
			out = append(out, fmt.Sprintf("%s (line %d)", ns[i], s.defAt[ns[i]]))
		}
	}
	if len(in) > 0 && len(out) > 0 {
		return fmt.Sprintf("hold the definition of %s but not of %s", strings.Join(in, ", "), strings.Join(out, ", "))
	}
	return ""
}

// bounds checks where range r begins, for the names want that each
// line of it holds (holds), when one of them is an operator the spec
// defines: r begins with one of them, on its first line (past a ----
// rule; not on a blank line), or on the first line of code after the
// comment of two lines or more that the range begins with, from its
// first line; or with a definition that the rest of the range uses
// (FairnessG, then FairnessS). A part of a definition and the ASSUME
// may begin anywhere in it. Where r ends is not checked: a citation may
// leave a definition's last lines out.
func (s *specFile) bounds(r [2]int, want []string, part bool) string {
	if s.beginsAnywhere(r, want, part) {
		return ""
	}
	if strings.TrimSpace(s.raw[r[0]-1]) == "" {
		return fmt.Sprintf("begin at line %d, a blank line, not with %s", r[0], strings.Join(want, " or "))
	}
	f := r[0]
	for f < r[1] && rule.MatchString(s.raw[f-1]) {
		f++
	}
	if s.code[f-1] != "" {
		return s.beginsWith(r, f, want)
	}
	return s.pastComment(r, f, want)
}

// beginsAnywhere reports whether the citation's range may begin
// anywhere: it names no operator, or a part of one.
func (s *specFile) beginsAnywhere(r [2]int, want []string, part bool) bool {
	return part || !slices.ContainsFunc(want, s.isOp) || s.inPartOf(r, want)
}

// inPartOf reports whether r lies in the body of a definition one of
// want heads, below its head.
func (s *specFile) inPartOf(r [2]int, want []string) bool {
	h := s.head[r[0]-1]
	return h < r[0] && r[1] <= s.defEnd[h] && slices.ContainsFunc(want, func(n string) bool { return s.heads(h, n) })
}

// pastComment checks a range that begins, at line f, with a comment:
// from its first line, of two lines or more, and the code after it
// begins with one of want.
func (s *specFile) pastComment(r [2]int, f int, want []string) string {
	if s.isComment(f - 1) {
		return fmt.Sprintf("begin in the middle of a comment (line %d: %s), not with %s", f, strings.TrimSpace(s.raw[f-1]), strings.Join(want, " or "))
	}
	g := s.firstCode(f, r[1])
	// One line of comment above a definition is where a citation of
	// it lands when the spec loses a line above it.
	if g == f+1 {
		return fmt.Sprintf("begin at line %d, a one-line comment (%s), not with %s", f, strings.TrimSpace(s.raw[f-1]), strings.Join(want, " or "))
	}
	if g > r[1] {
		return ""
	}
	return s.beginsWith(r, g, want)
}

// beginsWith checks that line g, where r's code begins, holds one of
// want, or defines a helper that the rest of r uses.
func (s *specFile) beginsWith(r [2]int, g int, want []string) string {
	if slices.ContainsFunc(want, func(w string) bool { return hasWord(s.code[g-1], w) }) {
		return ""
	}
	if m := defHead.FindStringSubmatch(s.code[g-1]); m != nil && s.occursIn(m[1], s.defEnd[g]+1, r[1]) {
		return ""
	}
	return fmt.Sprintf("begin at line %d (%s), which holds none of %s", g, strings.TrimSpace(s.raw[g-1]), strings.Join(want, ", "))
}

// isComment reports whether line n is a comment's.
func (s *specFile) isComment(n int) bool {
	return n >= 1 && s.code[n-1] == "" && strings.TrimSpace(s.raw[n-1]) != ""
}

// firstCode is the first line from from to to that holds code, to+1 if
// none.
func (s *specFile) firstCode(from, to int) int {
	for from <= to && s.code[from-1] == "" {
		from++
	}
	return from
}

// occursIn reports whether a line from from to to holds name.
func (s *specFile) occursIn(name string, from, to int) bool {
	for n := from; n <= to; n++ {
		if hasWord(s.code[n-1], name) {
			return true
		}
	}
	return false
}

var declKeywords = map[string]bool{"CONSTANTS": true, "VARIABLES": true}

// holds reports whether lines r of s hold name: a line of r holds the
// word, or r holds its definition's (or declaration's) line; or, for a
// part of a definition ("the recChan' of RecvBarrierV (lines 254-256)",
// "TimeoutV's enabling conjuncts", the ASSUME), r lies in the definition
// whose head names it. A CONSTANTS or VARIABLES declaration holds r if
// r's first line that is not blank is the declaration's (its keyword's
// or a name's): "the constants of lines 46-52" may go on into the ASSUME.
func (s *specFile) holds(r [2]int, name string, part bool) bool {
	switch {
	case declKeywords[name]:
		return s.declares(r, name)
	case s.occursIn(name, r[0], r[1]) || inRange(r, s.defAt[name]):
		return true
	}
	return s.inBodyOf(r, name, part)
}

// inBodyOf reports whether r lies inside the definition name heads: a
// part of it, below its head, or anywhere for a part or the ASSUME.
func (s *specFile) inBodyOf(r [2]int, name string, part bool) bool {
	h := s.head[r[0]-1]
	return r[1] <= s.defEnd[h] && (part || keywords[name] || h < r[0]) && s.heads(h, name)
}

// declares reports whether r's first line of code lies in a declaration
// of keyword (CONSTANTS, VARIABLES).
func (s *specFile) declares(r [2]int, keyword string) bool {
	n := s.firstCode(r[0], r[1])
	if n > r[1] {
		return false
	}
	h := s.head[n-1]
	return h > 0 && strings.HasPrefix(s.code[h-1], keyword[:len(keyword)-1])
}

func (s *specFile) occurrences(name string, max int) []int {
	var at []int
	for i := 0; i < len(s.code) && len(at) < max; i++ {
		if hasWord(s.code[i], name) {
			at = append(at, i+1)
		}
	}
	return at
}

// A goFile is a Go file whose comments cite the specs.
type goFile struct {
	rel   string // from the repository's root
	fset  *token.FileSet
	lines []string
	decls []ast.Decl
	specs *specSet
}

// fileCitations finds the citations in the comments of the Go file rel.
func fileCitations(t *testing.T, rel string, ss *specSet) []citation {
	src, err := os.ReadFile(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	if !citeHint.Match(src) {
		return nil
	}
	g := &goFile{rel: rel, fset: token.NewFileSet(), lines: strings.Split(string(src), "\n"), specs: ss}
	f, err := parser.ParseFile(g.fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	g.decls = f.Decls
	var out []citation
	for _, cg := range f.Comments {
		out = append(out, g.citations(t, cg)...)
	}
	return out
}

// citations are those of comment cg.
func (g *goFile) citations(t *testing.T, cg *ast.CommentGroup) []citation {
	if !citeHint.MatchString(cg.Text()) {
		return nil
	}
	ts := lexComment(g.fset, cg)
	ctx := g.context(cg)
	var out []citation
	for _, f := range findCitations(ts, g.specs) {
		if c := g.place(f, ts, ctx, cg); !g.unplaced(t, c) {
			out = append(out, c)
		}
	}
	return out
}

// place completes citation f of comment cg: where it is, its context's
// spec, and for a trailing comment that begins with it, the name of the
// line's string literal.
func (g *goFile) place(f found, ts toks, ctx string, cg *ast.CommentGroup) citation {
	c := f.citation
	c.where = fmt.Sprintf("%s:%d", g.rel, ts[f.at].line)
	c.ctx = cmp.Or(lastFile(ts, f.at), ctx)
	if c.names == nil && f.at == 0 {
		c.names = g.trailingLiteral(cg)
	}
	return c
}

// unplaced reports a citation that names what to check but not where.
func (g *goFile) unplaced(t *testing.T, c citation) bool {
	if c.file == "" && c.ctx == "" && c.names != nil {
		t.Errorf("%s: cites %s, but which spec? name the file in the comment or add a default to citeDefaults", c.where, c.text)
		return true
	}
	return false
}

// context is the spec that the doc comment of the declaration cg lies
// in names last, else the file's default.
func (g *goFile) context(cg *ast.CommentGroup) string {
	for _, d := range g.decls {
		if doc := docOf(d); doc != nil && encloses(d, cg) {
			ts := lexComment(g.fset, doc)
			return cmp.Or(lastFile(ts, len(ts)), defaultSpec(g.rel))
		}
	}
	return defaultSpec(g.rel)
}

func encloses(d ast.Decl, cg *ast.CommentGroup) bool {
	return d.Pos() <= cg.Pos() && cg.End() <= d.End()
}

func docOf(d ast.Decl) *ast.CommentGroup {
	switch d := d.(type) {
	case *ast.GenDecl:
		return d.Doc
	case *ast.FuncDecl:
		return d.Doc
	}
	return nil
}

// trailingLiteral is the name that the last identifier-shaped string
// literal before trailing comment cg gives, if a spec defines it.
func (g *goFile) trailingLiteral(cg *ast.CommentGroup) [][]string {
	first := g.fset.Position(cg.Pos())
	m := identLit.FindAllStringSubmatch(g.lines[first.Line-1][:first.Column-1], -1)
	if len(m) == 0 || !g.specs.defined[m[len(m)-1][1]] {
		return nil
	}
	return [][]string{{m[len(m)-1][1]}}
}

// citeHint finds the files and comments worth lexing.
var citeHint = regexp.MustCompile(`\blines? [0-9]`)

var identLit = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"`)

// lastFile is the spec file that ts name last before index at.
func lastFile(ts toks, at int) string {
	for i := at - 1; i >= 0; i-- {
		if ts[i].kind == tFile {
			return ts[i].text
		}
	}
	return ""
}

type tokKind int

const (
	tNone  tokKind = iota // past the ends
	tIdent                // spec's and RecvBarrierV's without their 's
	tNum
	tStr
	tFile // a spec file named: text is X.tla
	tOp   // a TLA+ operator: \in, =, #, /\, ->, ...
	tOpen
	tClose
	tPunct // , ; : . ! and the rest
	tPoss  // 's
)

type tok struct {
	kind  tokKind
	text  string
	space bool // white space before it
	line  int  // its Go source line
}

// toks are a comment's tokens; at reads past their ends as tNone.
type toks []tok

func (ts toks) at(i int) tok {
	if uint(i) >= uint(len(ts)) {
		return tok{}
	}
	return ts[i]
}

func (ts toks) is(i int, words ...string) bool { return slices.Contains(words, ts.at(i).text) }

// near reports whether toks[j] or the one before is word.
func (ts toks) near(j int, word string) bool { return ts.is(j, word) || ts.is(j-1, word) }

func (ts toks) glued(i int) bool { return !ts.at(i).space }

func (ts toks) gluedOpen(i int) bool { return ts.at(i).kind == tOpen && ts.glued(i) }

func (ts toks) lowerWord(i int) bool { return ts.at(i).kind == tIdent && isLower(ts.at(i).text) }

var lowerStart = regexp.MustCompile(`^[a-z]`)

func isLower(s string) bool { return lowerStart.MatchString(s) }

// skip is the index past toks[i] if it is one of words, else i.
func (ts toks) skip(i int, words ...string) int {
	if ts.is(i, words...) {
		return i + 1
	}
	return i
}

// joined is the index past the "," and the one of words (each optional)
// at toks[i], or -1 if neither is there.
func (ts toks) joined(i int, words ...string) int {
	if k := ts.skip(ts.skip(i, ","), words...); k > i {
		return k
	}
	return -1
}

// A lexRule reads a token: the rule's text submatch is its text, its
// adv submatch what it consumes.
type lexRule struct {
	kind      tokKind
	re        *regexp.Regexp
	text, adv int
	glued     bool // only right after a token: 's
}

// lexRules are tried in order; a byte no rule reads is a tPunct.
var lexRules = []lexRule{
	{kind: tFile, re: regexp.MustCompile(`^(?:tla/)?([A-Z][A-Za-z0-9]*\.tla)\b`), text: 1},
	{kind: tPoss, re: regexp.MustCompile(`^'s\b`), glued: true},
	// spec's, RecvBarrierV's: a possessive, not a prime.
	{kind: tIdent, re: regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*'*?)'s\b`), text: 1, adv: 1},
	{kind: tIdent, re: regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*'*`)},
	{kind: tNum, re: regexp.MustCompile(`^[0-9]+`)},
	{kind: tStr, re: regexp.MustCompile(`^"[^"]*"`)},
	{kind: tOpen, re: regexp.MustCompile(`^(?:<<|[(\[{])`)},
	{kind: tClose, re: regexp.MustCompile(`^(?:>>|[)\]}])`)},
	{kind: tOp, re: regexp.MustCompile(`^(?:\\[A-Za-z]+|/\\|\\/|\|->|->|~>|=>|==|<=|>=|\.\.|[=#<>~+*\\-])`)},
}

// commentText is the text of a // or /* */ comment.
var commentText = regexp.MustCompile(`(?s)^/\*(.*)\*/$|^//(.*)$`)

// lexComment splits a comment group's words into tokens, each knowing its
// Go line.
func lexComment(fset *token.FileSet, cg *ast.CommentGroup) toks {
	var ts toks
	for _, c := range cg.List {
		m := commentText.FindStringSubmatch(c.Text)
		line := fset.Position(c.Slash).Line
		for i, l := range strings.Split(m[1]+m[2], "\n") {
			ts = lexLine(ts, l, line+i)
		}
	}
	return ts
}

func lexLine(ts toks, s string, line int) toks {
	rest := strings.TrimLeft(s, " \t")
	for space := true; rest != ""; {
		kind, text, n := lexOne(rest, space)
		ts = append(ts, tok{kind: kind, text: text, space: space, line: line})
		next := strings.TrimLeft(rest[n:], " \t")
		space, rest = len(next) < len(rest)-n, next
	}
	return ts
}

// lexOne reads the token rest begins with: its kind, text and length.
func lexOne(rest string, space bool) (tokKind, string, int) {
	for _, r := range lexRules {
		if m := r.re.FindStringSubmatch(rest); m != nil && !(r.glued && space) {
			return r.kind, m[r.text], len(m[r.adv])
		}
	}
	return tPunct, rest[:1], 1
}

// A found citation: at is the index of its "line" or "lines" token.
type found struct {
	citation
	at int
}

// notCited are the words before "line N" that make it a line of
// something else than a spec: a trace, a log, a file the comment is
// about, something's.
var notCited = map[string]bool{"trace": true, "file": true, "log": true, "header": true, "'s": true}

// A citeParser finds a comment's citations and what they name.
type citeParser struct {
	ts       toks
	ss       *specSet
	lastDecl [][]string // the declaration cited last, for "those of"
}

func findCitations(ts toks, ss *specSet) []found {
	p := &citeParser{ts: ts, ss: ss}
	var out []found
	for i := 0; i < len(ts); i++ {
		if c, end := p.citationAt(i); end > 0 {
			out = append(out, c)
			i = end - 1
		}
	}
	return out
}

// citationAt reads the citation at toks[i], if one is there, and the
// index past its ranges (0 if none).
func (p *citeParser) citationAt(i int) (found, int) {
	if !p.ts.is(i, "line", "lines") || notCited[p.ts.at(i-1).text] {
		return found{}, 0
	}
	ranges, end := p.ts.ranges(i + 1)
	if ranges == nil {
		return found{}, 0
	}
	c := found{at: i}
	c.ranges = ranges
	c.text = p.ts.render(max(0, i-12), min(len(p.ts), end+4))
	c.file = p.ts.fileAfter(end)
	b := backStep{ts: p.ts, c: &c, j: i - 1}
	for b.step() {
	}
	p.subject(&c, b.j, b.atParen)
	p.declared(&c, i, b.j)
	p.fromParen(&c, i, b.j, end)
	return c, end
}

// fileAfter is the file of "lines 61-97 of tla/X.tla", after the
// ranges that end before toks[end].
func (ts toks) fileAfter(end int) string {
	if ts.is(end, "of") && ts.at(end+1).kind == tFile {
		return ts[end+1].text
	}
	return ""
}

// A backStep steps back from a citation over what may stand between it
// and the names it gives: the spec file named ("X of tla/F.tla (lines",
// "X (tla/F.tla, lines") and one separator.
type backStep struct {
	ts      toks
	c       *found
	j       int
	sep     bool
	atParen bool
}

var separators = map[string]bool{"(": true, ",": true, ";": true, ":": true}

func (b *backStep) step() bool {
	t := b.ts.at(b.j)
	if !b.overFile(t) && !b.overSeparator(t) && !b.overParen(t) {
		return false
	}
	b.j--
	return true
}

// overFile steps over the first spec file named, and an "of" or "in"
// before it.
func (b *backStep) overFile(t tok) bool {
	if t.kind != tFile || b.c.file != "" {
		return false
	}
	b.c.file = t.text
	b.j = b.ts.skipBack(b.j-1, "of", "in") + 1
	return true
}

func (b *backStep) overSeparator(t tok) bool {
	if b.sep || !separators[t.text] {
		return false
	}
	b.sep = true
	b.atParen = b.atParen || t.text == "("
	return true
}

// overParen steps over the "(" of "X (tla/F.tla, lines".
func (b *backStep) overParen(t tok) bool {
	if t.text != "(" || b.c.file == "" || b.atParen {
		return false
	}
	b.atParen = true
	return true
}

// skipBack is the index before toks[j] if it is one of words, else j.
func (ts toks) skipBack(j int, words ...string) int {
	if ts.is(j, words...) {
		return j - 1
	}
	return j
}

// subject reads the names before the citation, ending at toks[j].
func (p *citeParser) subject(c *found, j int, atParen bool) {
	var start int
	c.names, start = p.subjectBefore(j)
	c.part = p.ts.is(start-1, "of")
	// "TimeoutV's enabling conjuncts (lines 108-114)"
	if c.names == nil && atParen && c.file == "" {
		if names := p.partOf(j); names != nil {
			c.names, c.part = names, true
		}
	}
}

// partOf reads "TimeoutV's enabling conjuncts", ending at toks[j]: the
// names of the definition a part of which it names.
func (p *citeParser) partOf(j int) [][]string {
	if !partNouns[p.ts.at(j).text] {
		return nil
	}
	k := j - 1
	if p.ts.lowerWord(k) {
		k--
	}
	if k < 1 || p.ts.at(k).kind != tPoss {
		return nil
	}
	names, _ := p.subjectBefore(k - 1)
	return names
}

// declared reads a citation of a declaration: "the CONSTANTS of
// tla/A.tla (lines 43-52); B adds those of tla/C.tla (lines 46-48)".
func (p *citeParser) declared(c *found, i, j int) {
	decl := p.ts.declaration(i)
	if c.names == nil {
		c.names = decl
	}
	if c.names == nil && p.ts.near(j, "those") {
		c.names = p.lastDecl
	}
	if c.names != nil {
		p.lastDecl = decl
	}
}

// fromParen reads the names the citation's parenthesis gives: after it,
// "(lines 211-218: recOff, recCnt, recOut)", or where it opens before
// the names read, "(recOff, recCnt, recOut and the logic's state: lines
// 269-271)", "(RecvApp and RecvMarker for Spec, line 257)".
func (p *citeParser) fromParen(c *found, i, j, end int) {
	open := p.ts.enclosingParen(i)
	switch {
	case open < 0:
	case open >= j:
		if c.names == nil && p.ts.is(end, ":") {
			c.names = p.subjectAfter(end + 1)
		}
	default:
		p.leadOf(c, open)
	}
}

func (p *citeParser) leadOf(c *found, open int) {
	lead := p.subjectAfter(open + 1)
	switch {
	case c.names == nil:
		c.names = lead
	case !reflect.DeepEqual(lead, c.names):
		c.alt = lead
	}
}

var (
	// declStops end the words a declaration may be named among.
	declStops = map[string]bool{".": true, ";": true, ")": true}
	declWords = map[string]string{"constants": "CONSTANTS", "variables": "VARIABLES"}
)

// declaration reads "the CONSTANTS of tla/F.tla (lines 43-52)", "the
// variables tla/F.tla adds (lines 56-59)": a citation of a CONSTANTS or
// VARIABLES declaration, named among the five words before it (a
// snapshot's variables are not a declaration).
func (ts toks) declaration(i int) [][]string {
	for j := i - 1; j >= max(0, i-6); j-- {
		if declStops[ts[j].text] {
			return nil
		}
		if d := declWords[strings.ToLower(ts[j].text)]; d != "" && !ts.possessed(j) {
			return [][]string{{d}}
		}
	}
	return nil
}

// possessed reports whether toks[j] follows a possessive, not a file's.
func (ts toks) possessed(j int) bool {
	return ts.at(j-1).kind == tPoss && ts.at(j-2).kind != tFile
}

// ranges reads "56", "56-57", "58, 252", "112 and 121" from toks[i:],
// and returns the index past them.
func (ts toks) ranges(i int) ([][2]int, int) {
	var rs [][2]int
	for k := i; ts.at(k).kind == tNum; k = ts.joined(i, "and") {
		var r [2]int
		r, i = ts.rangeAt(k)
		rs = append(rs, r)
	}
	return rs, i
}

// rangeAt reads "56" or "56-57" from toks[i:].
func (ts toks) rangeAt(i int) ([2]int, int) {
	a, _ := strconv.Atoi(ts[i].text)
	if ts.is(i+1, "-") && ts.glued(i+1) && ts.at(i+2).kind == tNum {
		b, _ := strconv.Atoi(ts[i+2].text)
		return [2]int{a, b}, i + 3
	}
	return [2]int{a, a}, i + 1
}

// enclosingParen is the index of the "(" left open before toks[i], or -1.
func (ts toks) enclosingParen(i int) int {
	depth := 0
	for j := i - 1; j >= 0; j-- {
		if ts[j].text == "(" && depth == 0 {
			return j
		}
		depth += parenDepth[ts[j].text]
	}
	return -1
}

var parenDepth = map[string]int{")": 1, "(": -1}

// binOps are the TLA+ operators that join an expression's terms.
var binOps = map[string]bool{
	`\in`: true, `\notin`: true, `\subseteq`: true, `\subset`: true, `\cap`: true, `\cup`: true,
	`\X`: true, `\o`: true, `\`: true, `=`: true, `#`: true, `<`: true, `>`: true, `<=`: true,
	`>=`: true, `==`: true, `/\`: true, `\/`: true, `->`: true, `|->`: true, `~>`: true, `=>`: true,
	`+`: true, `-`: true, `*`: true, `..`: true,
}

// partNouns name a part of a definition: "TimeoutV's enabling
// conjuncts", "NextA's fifth disjunct" (not "Commit's fairness").
var partNouns = map[string]bool{"conjunct": true, "conjuncts": true, "disjunct": true, "disjuncts": true, "quantifier": true, "quantifiers": true, "guard": true, "guards": true, "branch": true}

// linking are the words that may stand before a bare lower-case name
// that is the spec's: "mode, reported and cutAligned", "to reportedLoss".
var linking = map[string]bool{"and": true, "or": true, "to": true, "of": true, "is": true, "are": true, "mirrors": true, "reports": true, "sets": true, "in": true, "on": true, "by": true, "with": true}

// subjectBefore parses backwards, from toks[j], the expression or list of
// expressions a citation names, and returns the spec names of each, in
// the comment's order (nil if it names none), and where it starts.
func (p *citeParser) subjectBefore(j int) ([][]string, int) {
	if p.isProse(j) {
		return nil, -1
	}
	var list [][]string
	at := -1
	for s := p.ts.exprBack(j); s >= 0; s = p.ts.exprBack(j) {
		names := p.ss.specNames(p.ts[s : j+1])
		if names == nil {
			break
		}
		list = append([][]string{names}, list...)
		// "A, B and C": go on only past a joining word.
		at, j = s, p.ts.joinedBack(s-1)
	}
	return list, at
}

// isProse reports whether toks[j] is a bare lower-case word after a
// plain word: "the adaptive mode", "when c's receiver recorded".
func (p *citeParser) isProse(j int) bool {
	return p.ts.exprBack(j) == j && p.ts.lowerWord(j) && p.plainWord(j-1)
}

func (p *citeParser) plainWord(k int) bool {
	w := p.ts.at(k).text
	return p.ts.lowerWord(k) && !p.ss.defined[w] && !linking[w]
}

// joinedBack is the index before the "and" or "or" and the "," (each
// optional) ending at toks[k], or -1 if neither is there.
func (ts toks) joinedBack(k int) int {
	if n := ts.skipBack(ts.skipBack(k, "and", "or"), ","); n < k {
		return n
	}
	return -1
}

// subjectAfter parses forwards, from toks[i], a list of expressions.
func (p *citeParser) subjectAfter(i int) [][]string {
	var list [][]string
	for e := p.ts.exprFwd(i); e >= 0; e = p.ts.exprFwd(i) {
		names := p.ss.specNames(p.ts[i : e+1])
		if names == nil {
			break
		}
		list = append(list, names)
		i = p.ts.joined(e+1, "and", "or")
	}
	return list
}

// specNames are the identifiers of ts that a spec defines or declares,
// field names (r.hops) aside.
func (ss *specSet) specNames(ts toks) []string {
	var names []string
	for i := 0; i < len(ts); i++ {
		name := ss.nameAt(ts, i)
		if name == "" {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		// A defined operator's arguments, a function's index: its
		// parameters, not names of the spec (Detect(q), mode[n]).
		if ts.gluedOpen(i + 1) {
			i = max(i, ts.matchFwd(i+1))
		}
	}
	return names
}

// nameAt is the spec name toks[i] is, "" if none.
func (ss *specSet) nameAt(ts toks, i int) string {
	name := strings.TrimRight(ts[i].text, "'")
	if ts[i].kind != tIdent || ts.is(i-1, ".") && ts.glued(i) || !ss.defined[name] {
		return ""
	}
	return name
}

// termBack is the start of the term that ends at toks[j] (an identifier,
// a string or number, a bracketed group, with its arguments, indexes,
// fields and primes), or -1.
func (ts toks) termBack(j int) int {
	switch ts.at(j).kind {
	case tClose:
		return ts.groupBack(j)
	case tIdent:
		return ts.identBack(j)
	case tStr, tNum:
		return j
	}
	return -1
}

// groupBack is the start of the bracketed group ending at toks[j], with
// what it is glued to: Fwd(r, e, k), mode[n].
func (ts toks) groupBack(j int) int {
	k := ts.matchBack(j)
	if k > 0 && ts.glued(k) && ts.termEnds(k-1) {
		return ts.termBack(k - 1)
	}
	return k
}

// identBack is the start of the term that ends with identifier toks[j]:
// [Next]_vars, r.hops.
func (ts toks) identBack(j int) int {
	switch {
	case !ts.glued(j):
		return j
	case ts.at(j-1).kind == tClose:
		return ts.termBack(j - 1)
	case ts.is(j-1, ".") && ts.glued(j-1) && ts.termEnds(j-2):
		return ts.termBack(j - 2)
	}
	return j
}

func (ts toks) termEnds(i int) bool { return ts.at(i).kind == tIdent || ts.at(i).kind == tClose }

// nesting is how a token changes the depth of brackets, read forwards.
var nesting = map[tokKind]int{tOpen: 1, tClose: -1}

// matchBack is the index of the bracket that the one at toks[j] closes.
func (ts toks) matchBack(j int) int {
	depth := 0
	for k := j; k >= 0; k-- {
		if depth -= nesting[ts[k].kind]; depth == 0 {
			return k
		}
	}
	return -1
}

// matchFwd is the index of the bracket that closes the one at toks[i].
func (ts toks) matchFwd(i int) int {
	depth := 0
	for k := i; k < len(ts); k++ {
		if depth += nesting[ts[k].kind]; depth == 0 {
			return k
		}
	}
	return -1
}

// exprBack is the start of the expression that ends at toks[j]: terms
// joined by TLA+ operators, with a leading ~.
func (ts toks) exprBack(j int) int {
	s := ts.termBack(j)
	for n := ts.extendBack(s); n >= 0; n = ts.extendBack(s) {
		s = n
	}
	return s
}

// extendBack is where the expression starting at toks[s] starts with
// the ~ or the operator and term before it, -1 if there are none.
func (ts toks) extendBack(s int) int {
	switch {
	case s <= 0:
		return -1
	case ts.is(s-1, "~"):
		return s - 1
	case binOps[ts[s-1].text]:
		return ts.termBack(s - 2)
	}
	return -1
}

// termFwd is the end of the term that starts at toks[i], or -1.
func (ts toks) termFwd(i int) int {
	if !termStarts[ts.at(i).kind] {
		return -1
	}
	e := i
	for e >= 0 && ts.gluedOpen(e+1) {
		e = ts.matchFwd(e + 1)
	}
	return e
}

var termStarts = map[tokKind]bool{tIdent: true, tStr: true, tNum: true}

// exprFwd is the end of the expression that starts at toks[i]: terms
// joined by TLA+ operators.
func (ts toks) exprFwd(i int) int {
	e := ts.termFwd(i)
	for n := ts.extendFwd(e); n >= 0; n = ts.extendFwd(e) {
		e = n
	}
	return e
}

// extendFwd is the end of the operator and term after toks[e], -1 if
// there are none.
func (ts toks) extendFwd(e int) int {
	if e < 0 || !binOps[ts.at(e+1).text] {
		return -1
	}
	return ts.termFwd(e + 2)
}

// render prints toks[i:j] as words.
func (ts toks) render(i, j int) string {
	var b strings.Builder
	b.WriteString(ts[i].text)
	for _, t := range ts[i+1 : j] {
		if t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}
