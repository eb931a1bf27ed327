package tla

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
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
// last spec the comment names before it (a file, or a bare module name
// such as ChandyLamportFaults), else the last one the enclosing
// declaration's doc comment names, else citeDefaults; and, for a name
// the context's spec does not define itself, the spec of its scope
// (EXTENDS) or the one spec that defines it (In(n), from
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
	specs := loadSpecs(t)
	var checked, unchecked int
	var uncheckedAt []string
	var good []citation
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != ".." && (n == "vendor" || n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "tla"+string(filepath.Separator)+"citations_test.go") {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))
		for _, c := range fileCitations(t, path, rel, specs) {
			if !slices.ContainsFunc(c.names, func(ns []string) bool { return len(ns) > 0 }) {
				unchecked++
				uncheckedAt = append(uncheckedAt, c.where+": "+c.text)
				continue
			}
			checked++
			if msg := specs.check(c); msg != "" {
				t.Error(msg)
			} else {
				good = append(good, c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d citations checked, %d not checkable (no TLA+ name given)", checked, unchecked)
	if testing.Verbose() && os.Getenv("CITATIONS_UNCHECKED") != "" {
		for _, u := range uncheckedAt {
			t.Log("unchecked: " + u)
		}
	}
	if checked < 300 {
		t.Errorf("only %d citations found to check: the scan is broken", checked)
	}
	// The check has teeth: moved a line up or down, as a spec growing
	// by one line moves them, most citations that hold fail.
	for _, by := range []int{-1, 1, 5} {
		still := 0
		for _, c := range good {
			m := c
			m.ranges = nil
			for _, r := range c.ranges {
				m.ranges = append(m.ranges, [2]int{r[0] + by, r[1] + by})
			}
			if specs.check(m) == "" {
				still++
			}
		}
		t.Logf("moved %+d lines, %d of %d citations still hold", by, still, len(good))
		if len(good) > 0 && still*100 > len(good)*maxStillHold {
			t.Errorf("moved %+d lines, %d of %d citations still hold: the check is too loose", by, still, len(good))
		}
	}
}

// maxStillHold is the percentage of citations that may still hold when
// moved a line: those of a definition cited with its body, whose head
// still covers the lines moved within it.
const maxStillHold = 25

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

var (
	defHead  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*==`)
	declHead = regexp.MustCompile(`^(CONSTANTS?|VARIABLES?)\b(.*)$`)
	declName = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*,?\s*$`)
	tlaWord  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

func loadSpecs(t *testing.T) *specSet {
	paths, err := filepath.Glob("*.tla")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no spec files: %v", err)
	}
	ss := &specSet{files: map[string]*specFile{}, defined: map[string]bool{"ASSUME": true, "CONSTANTS": true, "VARIABLES": true}}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := &specFile{name: p, raw: strings.Split(string(b), "\n"), defAt: map[string]int{}}
		s.code = stripTLAComments(s.raw)
		s.head = make([]int, len(s.code))
		s.defEnd = map[int]int{}
		head, inDecl := 0, false
		for i, l := range s.code {
			n := i + 1
			if l != "" && l[0] != ' ' && l[0] != '\t' {
				head, inDecl = 0, false
				if m := defHead.FindStringSubmatch(l); m != nil {
					head = n
					s.defAt[m[1]] = n
				} else if m := declHead.FindStringSubmatch(l); m != nil {
					head, inDecl = n, true
					for _, w := range strings.Split(m[2], ",") {
						if w = strings.TrimSpace(w); w != "" {
							s.defAt[w] = n
						}
					}
				} else if strings.HasPrefix(l, "ASSUME") {
					head = n
				}
			} else if inDecl {
				for _, w := range strings.Split(l, ",") {
					if m := declName.FindStringSubmatch(w); m != nil {
						s.defAt[m[1]] = n
					}
				}
			}
			s.head[i] = head
			if head > 0 && l != "" {
				s.defEnd[head] = n
			}
		}
		if !strings.HasPrefix(p, "MC") && !strings.HasPrefix(p, "Trace") {
			for name := range s.defAt {
				ss.defined[name] = true
			}
		}
		for _, l := range s.code {
			if rest, ok := strings.CutPrefix(l, "EXTENDS "); ok {
				for _, m := range strings.Split(rest, ",") {
					if m = strings.TrimSpace(m) + ".tla"; slices.Contains(paths, m) {
						s.extends = append(s.extends, m)
					}
				}
			}
		}
		ss.files[p] = s
	}
	return ss
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
	for _, ns := range c.names {
		for _, n := range ns {
			d := ss.definer(c.ctx, n)
			if d == "" {
				var by []string
				for name, s := range ss.files {
					if s.defAt[n] > 0 && !strings.HasPrefix(name, "MC") {
						by = append(by, name)
					}
				}
				if len(by) == 1 {
					d = by[0]
				}
			}
			if d != "" && !slices.Contains(files, d) {
				files = append(files, d)
			}
		}
	}
	return files
}

// inScope keeps, of each of c's expressions, the names file's scope
// defines.
func (ss *specSet) inScope(c citation, file string) ([][]string, bool) {
	out := make([][]string, len(c.names))
	any := false
	for i, ns := range c.names {
		for _, n := range ns {
			if ss.definer(file, n) != "" {
				out[i] = append(out[i], n)
				any = true
			}
		}
	}
	return out, any
}

// stripTLAComments blanks \* line comments and (* *) block comments
// (nested, across lines), leaving the code and its columns.
func stripTLAComments(lines []string) []string {
	out := make([]string, len(lines))
	depth := 0
	for i, l := range lines {
		b := []byte(l)
		inStr := false
		for j := 0; j < len(b); j++ {
			switch {
			case depth > 0:
				if b[j] == '(' && j+1 < len(b) && b[j+1] == '*' {
					depth++
					b[j], b[j+1] = ' ', ' '
					j++
				} else if b[j] == '*' && j+1 < len(b) && b[j+1] == ')' {
					depth--
					b[j], b[j+1] = ' ', ' '
					j++
				} else {
					b[j] = ' '
				}
			case inStr:
				if b[j] == '"' {
					inStr = false
				}
			case b[j] == '"':
				inStr = true
			case b[j] == '\\' && j+1 < len(b) && b[j+1] == '*':
				for k := j; k < len(b); k++ {
					b[k] = ' '
				}
				j = len(b)
			case b[j] == '(' && j+1 < len(b) && b[j+1] == '*':
				depth++
				b[j], b[j+1] = ' ', ' '
				j++
			}
		}
		out[i] = strings.TrimRight(string(b), " ")
	}
	return out
}

// hasWord reports whether TLA+ text s holds name as a whole identifier
// (not the tail of \in, r.hops's field counts).
func hasWord(s, name string) bool {
	for _, loc := range tlaWord.FindAllStringIndex(s, -1) {
		if s[loc[0]:loc[1]] == name && (loc[0] == 0 || s[loc[0]-1] != '\\') {
			return true
		}
	}
	return false
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

// check returns what is wrong with c, "" if nothing is: some candidate
// spec's cited lines hold every name c gives that the spec's scope
// defines, or every name of the alternative reading.
func (ss *specSet) check(c citation) string {
	msg := ss.checkNames(c)
	if msg != "" && c.alt != nil {
		a := c
		a.names, a.alt = c.alt, nil
		if ss.checkNames(a) == "" {
			return ""
		}
	}
	return msg
}

func (ss *specSet) checkNames(c citation) string {
	var msgs []string
	tried := 0
	for _, f := range ss.candidates(c) {
		if ss.files[f] == nil {
			return fmt.Sprintf("%s: cites %s, which is not a file of tla/: %s", c.where, f, c.text)
		}
		names, ok := ss.inScope(c, f)
		if !ok {
			continue
		}
		tried++
		msg := ss.checkIn(c, f, names)
		if msg == "" {
			return ""
		}
		// The report is the one of the spec that defines the first name.
		if ss.files[f].defAt[names[slices.IndexFunc(names, func(ns []string) bool { return len(ns) > 0 })][0]] > 0 {
			msgs = append([]string{msg}, msgs...)
		} else {
			msgs = append(msgs, msg)
		}
	}
	if tried == 0 {
		var all []string
		for _, ns := range c.names {
			all = append(all, ns...)
		}
		return fmt.Sprintf("%s: cites tla/%s for %s, which it does not define: %s", c.where, ss.candidates(c)[0], strings.Join(all, ", "), c.text)
	}
	return strings.Join(msgs, "\n\t(nor:) ")
}

func (ss *specSet) checkIn(c citation, file string, names [][]string) string {
	s := ss.files[file]
	c.file, c.names = file, names
	for i, r := range c.ranges {
		if r[0] < 1 || r[1] < r[0] || r[1] > len(s.raw) {
			return fmt.Sprintf("%s: cites tla/%s lines %d-%d, past its %d lines: %s", c.where, c.file, r[0], r[1], len(s.raw), c.text)
		}
		exprs := c.names
		if len(c.names) == len(c.ranges) && len(c.ranges) > 1 {
			exprs = c.names[i : i+1]
		}
		var want []string
		for _, ns := range exprs {
			want = append(want, ns...)
		}
		for _, name := range want {
			if s.holds(r, name, c.part) {
				continue
			}
			var b strings.Builder
			lines := fmt.Sprintf("line %d", r[0])
			if r[1] > r[0] {
				lines = fmt.Sprintf("lines %d-%d", r[0], r[1])
			}
			fmt.Fprintf(&b, "%s: stale citation: tla/%s %s do not hold %s\n\tthe comment: %s\n\tthose lines:", c.where, c.file, lines, name, c.text)
			for n := r[0]; n <= r[1] && n < r[0]+6; n++ {
				fmt.Fprintf(&b, "\n\t\t%d: %s", n, strings.TrimSpace(s.raw[n-1]))
			}
			if n := s.defAt[name]; n > 0 {
				fmt.Fprintf(&b, "\n\t%s is defined at line %d: %s", name, n, strings.TrimSpace(s.raw[n-1]))
			} else if at := s.occurrences(name, 5); len(at) > 0 {
				fmt.Fprintf(&b, "\n\t%s occurs at lines %v", name, at)
			} else {
				for other, o := range ss.files {
					if o.defAt[name] > 0 {
						fmt.Fprintf(&b, "\n\t%s is not in tla/%s; tla/%s defines it at line %d", name, c.file, other, o.defAt[name])
						break
					}
				}
			}
			return b.String()
		}
		if msg := s.definitions(r, exprs); msg != "" {
			return fmt.Sprintf("%s: stale citation: tla/%s lines %d-%d %s\n\tthe comment: %s", c.where, c.file, r[0], r[1], msg, c.text)
		}
		if msg := s.bounds(r, want, c.part); msg != "" {
			return fmt.Sprintf("%s: stale citation: tla/%s lines %d-%d %s\n\tthe comment: %s", c.where, c.file, r[0], r[1], msg, c.text)
		}
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

// definitions checks a citation of definitions: if r holds the
// definition of the operator one of the expressions names first, it
// holds those of all of them ("In(n) and Out(n) (lines 56-57)"; Out's
// alone and In's use in InF's are not enough).
func (s *specFile) definitions(r [2]int, exprs [][]string) string {
	var in, out []string
	for _, ns := range exprs {
		for _, n := range ns {
			if d := s.defAt[n]; d > 0 && s.head[d-1] == d && defHead.MatchString(s.code[d-1]) {
				if r[0] <= d && d <= r[1] {
					in = append(in, n)
				} else {
					out = append(out, fmt.Sprintf("%s (line %d)", n, d))
				}
				break
			}
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
// rule; not on a blank line), or on the first line of code after the comment
// of two lines or more that the range begins with, from its first line;
// or with a definition
// that the rest of the range uses (FairnessG, then FairnessS), or with
// the CONSTANTS or VARIABLES that declare one of them. A part of a
// definition and the ASSUME may begin anywhere in it. Where r ends is
// not checked: a citation may leave a definition's last lines out.
func (s *specFile) bounds(r [2]int, want []string, part bool) string {
	if part || !slices.ContainsFunc(want, func(n string) bool {
		d := s.defAt[n]
		return d > 0 && s.head[d-1] == d && defHead.MatchString(s.code[d-1])
	}) {
		return ""
	}
	if h := s.head[r[0]-1]; h > 0 && h < r[0] && r[1] <= s.defEnd[h] && slices.ContainsFunc(want, func(n string) bool { return s.heads(h, n) }) {
		return "" // a part of the definition the name heads
	}
	f := r[0]
	if strings.TrimSpace(s.raw[f-1]) == "" {
		return fmt.Sprintf("begin at line %d, a blank line, not with %s", f, strings.Join(want, " or "))
	}
	for f < r[1] && rule.MatchString(s.raw[f-1]) {
		f++
	}
	g := f
	if s.code[f-1] == "" {
		// A comment: from its first line, and the code after it names one.
		if f > 1 && s.code[f-2] == "" && strings.TrimSpace(s.raw[f-2]) != "" {
			return fmt.Sprintf("begin in the middle of a comment (line %d: %s), not with %s", f, strings.TrimSpace(s.raw[f-1]), strings.Join(want, " or "))
		}
		for g <= r[1] && s.code[g-1] == "" {
			g++
		}
		// One line of comment above a definition is where a citation of
		// it lands when the spec loses a line above it.
		if g == f+1 {
			return fmt.Sprintf("begin at line %d, a one-line comment (%s), not with %s", f, strings.TrimSpace(s.raw[f-1]), strings.Join(want, " or "))
		}
		if g > r[1] {
			return ""
		}
	}
	for _, w := range want {
		if hasWord(s.code[g-1], w) {
			return ""
		}
		if d := s.defAt[w]; d > 0 && s.head[d-1] == g && declHead.MatchString(s.code[g-1]) {
			return ""
		}
	}
	if m := defHead.FindStringSubmatch(s.code[g-1]); m != nil && s.head[g-1] == g {
		for n := s.defEnd[g] + 1; n <= r[1]; n++ {
			if hasWord(s.code[n-1], m[1]) {
				return ""
			}
		}
	}
	return fmt.Sprintf("begin at line %d (%s), which holds none of %s", g, strings.TrimSpace(s.raw[g-1]), strings.Join(want, ", "))
}

// keywords are the TLA+ words a citation may name, in any spec.
var keywords = map[string]bool{"ASSUME": true, "CONSTANTS": true, "VARIABLES": true}

// rule is a ---- or ==== line.
var rule = regexp.MustCompile(`^\s*(-{4,}|={4,})\s*$`)

// holds reports whether lines r of s hold name: a line of r holds the
// word, or r holds its definition's (or declaration's) line; or, for a
// part of a definition ("the recChan' of RecvBarrierV (lines 254-256)",
// "TimeoutV's enabling conjuncts", the ASSUME), r lies in the definition
// whose head names it. A CONSTANTS or VARIABLES declaration holds r if
// r's first line that is not blank is the declaration's (its keyword's
// or a name's): "the constants of lines 46-52" may go on into the ASSUME.
func (s *specFile) holds(r [2]int, name string, part bool) bool {
	if name == "CONSTANTS" || name == "VARIABLES" {
		for n := r[0]; n <= r[1]; n++ {
			if s.code[n-1] != "" {
				h := s.head[n-1]
				return h > 0 && strings.HasPrefix(s.code[h-1], name[:len(name)-1])
			}
		}
		return false
	}
	for n := r[0]; n <= r[1]; n++ {
		if hasWord(s.code[n-1], name) {
			return true
		}
	}
	if d := s.defAt[name]; d > 0 && r[0] <= d && d <= r[1] {
		return true
	}
	// Inside the definition the name heads: a part of it, below its head.
	h := s.head[r[0]-1]
	return h > 0 && (part || keywords[name] || h < r[0]) && s.heads(h, name) && r[1] <= s.defEnd[h]
}

func (s *specFile) occurrences(name string, max int) []int {
	var at []int
	for i, l := range s.code {
		if hasWord(l, name) {
			at = append(at, i+1)
			if len(at) == max {
				break
			}
		}
	}
	return at
}

// fileCitations finds the citations in the comments of the Go file at
// path (rel from the repository's root).
func fileCitations(t *testing.T, path, rel string, ss *specSet) []citation {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !citeHint.Match(src) {
		return nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	// The doc comment of the declaration each comment lies in.
	var decls []struct {
		pos, end token.Pos
		doc      *ast.CommentGroup
	}
	for _, d := range f.Decls {
		var doc *ast.CommentGroup
		switch d := d.(type) {
		case *ast.GenDecl:
			doc = d.Doc
		case *ast.FuncDecl:
			doc = d.Doc
		}
		if doc != nil {
			decls = append(decls, struct {
				pos, end token.Pos
				doc      *ast.CommentGroup
			}{d.Pos(), d.End(), doc})
		}
	}
	srcLines := strings.Split(string(src), "\n")
	var out []citation
	for _, cg := range f.Comments {
		if !citeHint.MatchString(cg.Text()) {
			continue
		}
		toks := lexComment(fset, cg)
		ctx := ""
		for _, d := range decls {
			if d.pos <= cg.Pos() && cg.End() <= d.end && d.doc != cg {
				ctx = lastModule(lexComment(fset, d.doc), -1, ss)
			}
		}
		if ctx == "" {
			ctx = defaultSpec(rel)
		}
		first := fset.Position(cg.Pos())
		trailing := strings.TrimSpace(srcLines[first.Line-1][:first.Column-1]) != ""
		for _, c := range findCitations(toks, ss) {
			c.where = fmt.Sprintf("%s:%d", rel, toks[c.at].line)
			c.ctx = lastModule(toks, c.at, ss)
			if c.ctx == "" {
				c.ctx = ctx
			}
			if c.names == nil && trailing && c.at == 0 {
				if lit := lastIdentLiteral(srcLines[first.Line-1][:first.Column-1]); lit != "" && ss.defined[lit] {
					c.names = [][]string{{lit}}
				}
			}
			if c.file == "" && c.ctx == "" && c.names != nil {
				t.Errorf("%s: cites %s, but which spec? name the file in the comment or add a default to citeDefaults", c.where, c.text)
				continue
			}
			out = append(out, c.citation)
		}
	}
	return out
}

// citeHint finds the files and comments worth lexing.
var citeHint = regexp.MustCompile(`\blines? [0-9]`)

var identLit = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"`)

func lastIdentLiteral(code string) string {
	m := identLit.FindAllStringSubmatch(code, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// lastModule is the spec file that toks name last before index at (all
// of them if at < 0).
func lastModule(toks []tok, at int, ss *specSet) string {
	if at < 0 {
		at = len(toks)
	}
	for i := at - 1; i >= 0; i-- {
		if toks[i].kind == tFile {
			return toks[i].text
		}
		if toks[i].kind == tIdent && ss.files[toks[i].text+".tla"] != nil {
			return toks[i].text + ".tla"
		}
	}
	return ""
}

type tokKind int

const (
	tIdent tokKind = iota
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

var (
	fileRe  = regexp.MustCompile(`^(?:tla/)?([A-Z][A-Za-z0-9]*\.tla)\b`)
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*'*`)
	numRe   = regexp.MustCompile(`^[0-9]+`)
	opRe    = regexp.MustCompile(`^(?:\\[A-Za-z]+|/\\|\\/|\|->|->|~>|=>|==|<=|>=|\.\.|[=#<>~+*\\-])`)
)

// lexComment splits a comment group's words into tokens, each knowing its
// Go line.
func lexComment(fset *token.FileSet, cg *ast.CommentGroup) []tok {
	var toks []tok
	for _, c := range cg.List {
		line := fset.Position(c.Slash).Line
		text := c.Text
		if strings.HasPrefix(text, "//") {
			text = text[2:]
		} else {
			text = strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
		}
		for li, l := range strings.Split(text, "\n") {
			toks = lexLine(toks, l, line+li)
		}
	}
	return toks
}

func lexLine(toks []tok, s string, line int) []tok {
	space := true
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' {
			space = true
			i++
			continue
		}
		add := func(k tokKind, text string, n int) {
			toks = append(toks, tok{kind: k, text: text, space: space, line: line})
			space = false
			i += n
		}
		rest := s[i:]
		switch m := fileRe.FindStringSubmatch(rest); {
		case m != nil:
			add(tFile, m[1], len(m[0]))
		case strings.HasPrefix(rest, "'s") && (len(rest) == 2 || !isIdentByte(rest[2])) && len(toks) > 0 && !space:
			add(tPoss, "'s", 2)
		case identRe.MatchString(rest):
			id := identRe.FindString(rest)
			// spec's, RecvBarrierV's: a possessive, not a prime.
			if strings.HasSuffix(id, "'") && len(rest) > len(id) && rest[len(id)] == 's' && (len(rest) == len(id)+1 || !isIdentByte(rest[len(id)+1])) {
				id = strings.TrimSuffix(id, "'")
			}
			add(tIdent, id, len(id))
		case numRe.MatchString(rest):
			n := numRe.FindString(rest)
			add(tNum, n, len(n))
		case c == '"':
			j := strings.IndexByte(rest[1:], '"')
			if j < 0 {
				add(tPunct, `"`, 1)
			} else {
				add(tStr, rest[:j+2], j+2)
			}
		case strings.HasPrefix(rest, "<<"):
			add(tOpen, "<<", 2)
		case strings.HasPrefix(rest, ">>"):
			add(tClose, ">>", 2)
		case c == '(' || c == '[' || c == '{':
			add(tOpen, string(c), 1)
		case c == ')' || c == ']' || c == '}':
			add(tClose, string(c), 1)
		case opRe.MatchString(rest):
			o := opRe.FindString(rest)
			add(tOp, o, len(o))
		default:
			add(tPunct, string(c), 1)
		}
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// A found citation: at is the index of its "line" or "lines" token.
type found struct {
	citation
	at int
}

// notCited are the words before "line N" that make it a line of
// something else than a spec: a trace, a log, a file the comment is
// about.
var notCited = map[string]bool{"trace": true, "file": true, "log": true, "header": true}

func findCitations(toks []tok, ss *specSet) []found {
	var out []found
	var lastDecl [][]string
	for i := 0; i < len(toks); i++ {
		if toks[i].kind != tIdent || (toks[i].text != "line" && toks[i].text != "lines") {
			continue
		}
		ranges, end := parseRanges(toks, i+1)
		if ranges == nil {
			continue
		}
		if i > 0 && (notCited[toks[i-1].text] || toks[i-1].kind == tPoss) {
			continue
		}
		if i == 0 || (toks[i-1].kind == tPunct && toks[i-1].text == "-") {
			// "//   - line 1, the header": a list of a file's lines.
			if end < len(toks) && toks[end].text == "," && end+1 < len(toks) && toks[end+1].text == "the" {
				continue
			}
		}
		c := found{at: i}
		c.ranges = ranges
		// "lines 61-97 of tla/X.tla"
		if end+1 < len(toks) && toks[end].text == "of" && toks[end+1].kind == tFile {
			c.file = toks[end+1].text
		}
		c.text = render(toks, max(0, i-12), min(len(toks), end+4))

		// What it names: right before it, past the spec file named
		// ("X of tla/F.tla (lines", "X (tla/F.tla, lines") and one
		// separator.
		j, seps, atParen := i-1, 0, false
		for j >= 0 {
			t := toks[j]
			switch {
			case t.kind == tFile && c.file == "":
				c.file = t.text
				j--
				if j >= 0 && (toks[j].text == "of" || toks[j].text == "in") {
					j--
				}
				continue
			case seps == 0 && (t.text == "(" || t.text == "," || t.text == ";" || t.text == ":"):
				seps++
				atParen = atParen || t.text == "("
				j--
				continue
			case t.text == "(" && c.file != "" && !atParen:
				atParen = true
				j--
				continue
			}
			break
		}
		if j >= 0 {
			var start int
			c.names, start = subjectBefore(toks, j, ss)
			c.part = start > 0 && toks[start-1].text == "of"
			// "TimeoutV's enabling conjuncts (lines 108-114)"
			if c.names == nil && atParen && c.file == "" {
				for k := j; k >= 1 && k >= j-2 && partNouns[toks[j].text]; k-- {
					if toks[k].kind == tPoss {
						if names, _ := subjectBefore(toks, k-1, ss); names != nil {
							c.names, c.part = names, true
						}
						break
					}
					if toks[k].kind != tIdent || !isLower(toks[k].text) {
						break
					}
				}
			}
		}
		if c.names == nil {
			c.names = declaration(toks, i)
		}
		// "the CONSTANTS of tla/A.tla (lines 43-52); B adds those of
		// tla/C.tla (lines 46-48)"
		if c.names == nil && lastDecl != nil && j >= 0 && (toks[j].text == "those" || j > 0 && toks[j-1].text == "those") {
			c.names = lastDecl
		}
		if d := declaration(toks, i); d != nil || c.names != nil {
			lastDecl = d
		}
		if open := enclosingParen(toks, i); open >= 0 {
			if open >= j {
				// "(lines 211-218: recOff, recCnt, recOut)"
				if c.names == nil && end < len(toks) && toks[end].text == ":" {
					c.names = subjectAfter(toks, end+1, ss)
				}
			} else {
				// "(recOff, recCnt, recOut and the logic's state: lines
				// 269-271)", "(RecvApp and RecvMarker for Spec, line 257)"
				lead := subjectAfter(toks, open+1, ss)
				if c.names == nil {
					c.names = lead
				} else if !reflect.DeepEqual(lead, c.names) {
					c.alt = lead
				}
			}
		}
		out = append(out, c)
		i = end - 1
	}
	return out
}

// declaration reads "the CONSTANTS of tla/F.tla (lines 43-52)", "the
// variables tla/F.tla adds (lines 56-59)": a citation of a CONSTANTS or
// VARIABLES declaration, named among the five words before it (a
// snapshot's variables are not a declaration).
func declaration(toks []tok, i int) [][]string {
	for j := i - 1; j >= 0 && j >= i-6; j-- {
		switch t := toks[j]; {
		case t.text == "." || t.text == ";" || t.text == ")":
			return nil
		case j > 1 && toks[j-1].kind == tPoss && toks[j-2].kind != tFile:
			continue
		case strings.EqualFold(t.text, "constants"):
			return [][]string{{"CONSTANTS"}}
		case strings.EqualFold(t.text, "variables"):
			return [][]string{{"VARIABLES"}}
		}
	}
	return nil
}

// parseRanges reads "56", "56-57", "58, 252", "112 and 121" from toks[i:].
func parseRanges(toks []tok, i int) ([][2]int, int) {
	var rs [][2]int
	for {
		if i >= len(toks) || toks[i].kind != tNum {
			break
		}
		a, _ := strconv.Atoi(toks[i].text)
		b := a
		i++
		if i+1 < len(toks) && toks[i].text == "-" && !toks[i].space && toks[i+1].kind == tNum {
			b, _ = strconv.Atoi(toks[i+1].text)
			i += 2
		}
		rs = append(rs, [2]int{a, b})
		// another range: ", 252", " and 121", ", and 121"
		k := i
		if k < len(toks) && toks[k].text == "," {
			k++
		}
		if k < len(toks) && toks[k].text == "and" {
			k++
		}
		if k == i || k >= len(toks) || toks[k].kind != tNum {
			break
		}
		i = k
	}
	return rs, i
}

// enclosingParen is the index of the "(" left open before toks[i], or -1.
func enclosingParen(toks []tok, i int) int {
	depth := 0
	for j := i - 1; j >= 0; j-- {
		switch toks[j].text {
		case ")":
			depth++
		case "(":
			if depth == 0 {
				return j
			}
			depth--
		}
	}
	return -1
}

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
func subjectBefore(toks []tok, j int, ss *specSet) ([][]string, int) {
	var list [][]string
	at := -1
	for first := true; ; first = false {
		s := exprBack(toks, j)
		if s < 0 {
			break
		}
		// A bare lower-case word after a plain word is prose: "the
		// adaptive mode", "when c's receiver recorded".
		if first && s == j && s > 0 && toks[s].kind == tIdent && isLower(toks[s].text) {
			p := toks[s-1]
			if p.kind == tIdent && isLower(p.text) && !ss.defined[p.text] && !linking[p.text] {
				return nil, -1
			}
		}
		names := specNames(toks[s:j+1], ss)
		if names == nil {
			break
		}
		list = append([][]string{names}, list...)
		at = s
		// "A, B and C": go on only past a joining word.
		k := s - 1
		if k >= 0 && (toks[k].text == "and" || toks[k].text == "or") {
			k--
			if k >= 0 && toks[k].text == "," {
				k--
			}
		} else if k >= 0 && toks[k].text == "," {
			k--
		} else {
			break
		}
		j = k
	}
	return list, at
}

// subjectAfter parses forwards, from toks[i], a list of expressions.
func subjectAfter(toks []tok, i int, ss *specSet) [][]string {
	var list [][]string
	for i < len(toks) {
		e := exprFwd(toks, i)
		if e < 0 {
			break
		}
		names := specNames(toks[i:e+1], ss)
		if names == nil {
			break
		}
		list = append(list, names)
		k := e + 1
		if k < len(toks) && toks[k].text == "," {
			k++
		}
		if k < len(toks) && (toks[k].text == "and" || toks[k].text == "or") {
			k++
		}
		if k == e+1 {
			break
		}
		i = k
	}
	return list
}

func isLower(s string) bool { return s != "" && s[0] >= 'a' && s[0] <= 'z' }

// specNames are the identifiers of ts that a spec defines or declares,
// field names (r.hops) aside.
func specNames(ts []tok, ss *specSet) []string {
	var names []string
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		if t.kind != tIdent || (i > 0 && ts[i-1].text == "." && !t.space) {
			continue
		}
		name := strings.TrimRight(t.text, "'")
		if !ss.defined[name] {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		// A defined operator's arguments, a function's index: its
		// parameters, not names of the spec (Detect(q), mode[n]).
		if i+1 < len(ts) && ts[i+1].kind == tOpen && !ts[i+1].space {
			if e := matchFwd(ts, i+1); e > 0 {
				i = e
			}
		}
	}
	return names
}

// termBack is the start of the term that ends at toks[j] (an identifier,
// a string or number, a bracketed group, with its arguments, indexes,
// fields and primes), or -1.
func termBack(toks []tok, j int) int {
	if j < 0 {
		return -1
	}
	t := toks[j]
	switch t.kind {
	case tClose:
		k := matchBack(toks, j)
		if k < 0 {
			return -1
		}
		if k > 0 && !toks[k].space && (toks[k-1].kind == tIdent || toks[k-1].kind == tClose) {
			return termBack(toks, k-1)
		}
		return k
	case tIdent:
		if j >= 1 && !t.space && toks[j-1].kind == tClose {
			return termBack(toks, j-1) // [Next]_vars
		}
		if j >= 2 && !t.space && toks[j-1].text == "." && !toks[j-1].space && (toks[j-2].kind == tIdent || toks[j-2].kind == tClose) {
			return termBack(toks, j-2)
		}
		return j
	case tStr, tNum:
		return j
	}
	return -1
}

func matchBack(toks []tok, j int) int {
	depth := 0
	for k := j; k >= 0; k-- {
		switch toks[k].kind {
		case tClose:
			depth++
		case tOpen:
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// exprBack is the start of the expression that ends at toks[j]: terms
// joined by TLA+ operators, with a leading ~.
func exprBack(toks []tok, j int) int {
	s := termBack(toks, j)
	for s > 0 {
		p := s - 1
		if toks[p].text == "~" {
			s = p
			continue
		}
		if toks[p].kind != tOp || !binOps[toks[p].text] {
			break
		}
		s2 := termBack(toks, p-1)
		if s2 < 0 {
			break
		}
		s = s2
	}
	return s
}

// termFwd is the end of the term that starts at toks[i], or -1.
func termFwd(toks []tok, i int) int {
	if i >= len(toks) {
		return -1
	}
	var e int
	switch toks[i].kind {
	case tIdent, tStr, tNum:
		e = i
	case tOpen:
		e = matchFwd(toks, i)
	default:
		return -1
	}
	for e >= 0 && e+1 < len(toks) && !toks[e+1].space {
		switch {
		case toks[e+1].kind == tOpen:
			e = matchFwd(toks, e+1)
		case toks[e+1].text == "." && e+2 < len(toks) && toks[e+2].kind == tIdent && !toks[e+2].space:
			e += 2
		default:
			return e
		}
	}
	return e
}

func matchFwd(toks []tok, i int) int {
	depth := 0
	for k := i; k < len(toks); k++ {
		switch toks[k].kind {
		case tOpen:
			depth++
		case tClose:
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

func exprFwd(toks []tok, i int) int {
	if i < len(toks) && toks[i].text == "~" {
		i++
	}
	e := termFwd(toks, i)
	for e >= 0 && e+2 < len(toks) && toks[e+1].kind == tOp && binOps[toks[e+1].text] {
		e2 := termFwd(toks, e+2)
		if e2 < 0 {
			break
		}
		e = e2
	}
	return e
}

// render prints toks[i:j] as words.
func render(toks []tok, i, j int) string {
	var b strings.Builder
	for k := i; k < j; k++ {
		if toks[k].space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(toks[k].text)
	}
	return b.String()
}
