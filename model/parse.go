package model

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Reading TLC model files. A model is a .cfg file (CONSTANTS, SPECIFICATION,
// INVARIANT(S), PROPERTY(IES), CHECK_DEADLOCK) and the module of the same
// base name beside it (MCRing.cfg and MCRing.tla), whose EXTENDS names the
// spec module and whose definitions Name == expr give the values the .cfg
// substitutes with "X <- Name". Expressions are a small TLA+ subset:
// integers, strings, TRUE/FALSE, names of earlier definitions, sets {..},
// tuples <<..>>, records [k |-> v, ..] and ranges a..b. Anything else is an
// error naming the file and line.

// ModelError is an error in a model file, at a line (0: the whole file).
type ModelError struct {
	File string
	Line int
	Msg  string
}

func (e *ModelError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ---------------------------------------------------------------------------
// Lexer

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tStr
	tPunct // == <- = { } << >> [ ] |-> , .. ( ) - :
	tDashes
	tEquals // ==== (end of module)
)

type token struct {
	kind tokKind
	text string
	line int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tStr:
		return strconv.Quote(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func lex(file, src string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], `\*`):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "(*"):
			start := line
			depth := 0
			for {
				if i >= len(src) {
					return nil, &ModelError{file, start, "unterminated (* comment"}
				}
				if strings.HasPrefix(src[i:], "(*") {
					depth++
					i += 2
				} else if strings.HasPrefix(src[i:], "*)") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					if src[i] == '\n' {
						line++
					}
					i++
				}
			}
		case c == '"':
			j := i + 1
			var sb strings.Builder
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\n' {
					return nil, &ModelError{file, line, "unterminated string"}
				}
				if src[j] == '\\' && j+1 < len(src) {
					j++
					switch src[j] {
					case 'n':
						sb.WriteByte('\n')
					case 't':
						sb.WriteByte('\t')
					default:
						sb.WriteByte(src[j])
					}
					continue
				}
				sb.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, &ModelError{file, line, "unterminated string"}
			}
			toks = append(toks, token{tStr, sb.String(), line})
			i = j + 1
		case strings.HasPrefix(src[i:], "----"):
			for i < len(src) && src[i] == '-' {
				i++
			}
			toks = append(toks, token{tDashes, "----", line})
		case strings.HasPrefix(src[i:], "===="):
			for i < len(src) && src[i] == '=' {
				i++
			}
			toks = append(toks, token{tEquals, "====", line})
		case c == '\\' && i+1 < len(src) && isIdent(src[i+1]):
			// a TLA+ operator such as \in or \cup: lexed so that the
			// parser can say it is not supported
			j := i + 1
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			toks = append(toks, token{tPunct, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			word := src[i:j]
			kind := tNum
			for _, ch := range []byte(word) {
				if ch < '0' || ch > '9' {
					kind = tIdent // TLA+ allows identifiers like 1a; we only read them as names
				}
			}
			toks = append(toks, token{kind, word, line})
			i = j
		case isIdent(c):
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			toks = append(toks, token{tIdent, src[i:j], line})
			i = j
		default:
			matched := false
			for _, p := range []string{"|->", "==", "<-", "<<", ">>", "..", "=", "{", "}", "[", "]", ",", "(", ")", "-", ":"} {
				if strings.HasPrefix(src[i:], p) {
					toks = append(toks, token{tPunct, p, line})
					i += len(p)
					matched = true
					break
				}
			}
			if !matched {
				return nil, &ModelError{file, line, fmt.Sprintf("unexpected character %q", c)}
			}
		}
	}
	toks = append(toks, token{tEOF, "", line})
	return toks, nil
}

// ---------------------------------------------------------------------------
// Values of the subset

// Value is a constant value of the TLA+ subset: int64, string, bool,
// setV, tupleV or recordV.
type Value any

type setV []Value // sorted by valueKey, no duplicates
type tupleV []Value
type recordV struct {
	keys []string
	vals []Value
}

func valueKey(v Value) string {
	switch x := v.(type) {
	case int64:
		return "i" + strconv.FormatInt(x, 10)
	case string:
		return "s" + strconv.Quote(x)
	case bool:
		return "b" + strconv.FormatBool(x)
	case setV:
		return "{" + joinKeys(x) + "}"
	case tupleV:
		return "<<" + joinKeys(x) + ">>"
	case recordV:
		parts := make([]string, len(x.keys))
		for i, k := range x.keys {
			parts[i] = k + "|->" + valueKey(x.vals[i])
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return "?"
}

func joinKeys(vs []Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = valueKey(v)
	}
	return strings.Join(parts, ",")
}

func newSet(vs []Value) setV {
	m := map[string]Value{}
	for _, v := range vs {
		m[valueKey(v)] = v
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(setV, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func describe(v Value) string {
	switch v.(type) {
	case int64:
		return "an integer"
	case string:
		return "a string"
	case bool:
		return "a Boolean"
	case setV:
		return "a set"
	case tupleV:
		return "a tuple"
	case recordV:
		return "a record"
	}
	return "a value"
}

// ---------------------------------------------------------------------------
// Expression parser

type parser struct {
	file string
	toks []token
	pos  int
	defs map[string]Value
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token { t := p.toks[p.pos]; p.pos++; return t }
func (p *parser) is(text string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == text
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &ModelError{p.file, line, fmt.Sprintf(format, args...)}
}

func (p *parser) expect(text string) error {
	t := p.next()
	if t.kind != tPunct || t.text != text {
		return p.errf(t.line, "expected %q, found %s", text, t)
	}
	return nil
}

func (p *parser) expr() (Value, error) {
	line := p.peek().line
	v, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.is("..") {
		p.next()
		w, err := p.primary()
		if err != nil {
			return nil, err
		}
		a, ok1 := v.(int64)
		b, ok2 := w.(int64)
		if !ok1 || !ok2 {
			return nil, p.errf(line, "a..b needs two integers")
		}
		if b-a > 1<<16 {
			return nil, p.errf(line, "range %d..%d is too large", a, b)
		}
		var vs []Value
		for i := a; i <= b; i++ {
			vs = append(vs, i)
		}
		return newSet(vs), nil
	}
	return v, nil
}

func (p *parser) list(closer string) ([]Value, error) {
	var vs []Value
	if p.is(closer) {
		p.next()
		return vs, nil
	}
	for {
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
		if p.is(",") {
			p.next()
			continue
		}
		if err := p.expect(closer); err != nil {
			return nil, err
		}
		return vs, nil
	}
}

func (p *parser) primary() (Value, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, p.errf(t.line, "bad integer %s", t.text)
		}
		return n, nil
	case tStr:
		return t.text, nil
	case tIdent:
		switch t.text {
		case "TRUE":
			return true, nil
		case "FALSE":
			return false, nil
		}
		if p.is("(") {
			return nil, p.errf(t.line, "operator application %s(...) is not supported in model values", t.text)
		}
		if v, ok := p.defs[t.text]; ok {
			return v, nil
		}
		return nil, p.errf(t.line, "unknown name %s (only integers, strings, sets, tuples, records, ranges and earlier definitions are supported)", t.text)
	case tPunct:
		switch t.text {
		case "-":
			n := p.next()
			if n.kind != tNum {
				return nil, p.errf(t.line, "expected a number after '-'")
			}
			x, err := strconv.ParseInt("-"+n.text, 10, 64)
			if err != nil {
				return nil, p.errf(t.line, "bad integer -%s", n.text)
			}
			return x, nil
		case "(":
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			return v, p.expect(")")
		case "{":
			vs, err := p.list("}")
			if err != nil {
				return nil, err
			}
			return newSet(vs), nil
		case "<<":
			vs, err := p.list(">>")
			if err != nil {
				return nil, err
			}
			return tupleV(vs), nil
		case "[":
			var r recordV
			seen := map[string]bool{}
			for {
				k := p.next()
				if k.kind != tIdent {
					return nil, p.errf(k.line, "expected a field name in a record [k |-> v, ...], found %s (function constructors are not supported)", k)
				}
				if !p.is("|->") {
					return nil, p.errf(p.peek().line, "expected |-> after field %s (only records [k |-> v, ...] are supported)", k.text)
				}
				p.next()
				if seen[k.text] {
					return nil, p.errf(k.line, "record field %s given twice", k.text)
				}
				seen[k.text] = true
				v, err := p.expr()
				if err != nil {
					return nil, err
				}
				r.keys = append(r.keys, k.text)
				r.vals = append(r.vals, v)
				if p.is(",") {
					p.next()
					continue
				}
				if err := p.expect("]"); err != nil {
					return nil, err
				}
				break
			}
			// canonical field order
			idx := make([]int, len(r.keys))
			for i := range idx {
				idx[i] = i
			}
			sort.Slice(idx, func(a, b int) bool { return r.keys[idx[a]] < r.keys[idx[b]] })
			var s recordV
			for _, i := range idx {
				s.keys = append(s.keys, r.keys[i])
				s.vals = append(s.vals, r.vals[i])
			}
			return s, nil
		}
	}
	return nil, p.errf(t.line, "unexpected %s in an expression", t)
}

// ---------------------------------------------------------------------------
// The MC module

// specModules lists the spec modules of tla/ and the specifications each
// defines (a module also has those of the modules it extends).
var specModules = map[string][]Variant{
	"ChandyLamport":          {VariantSpec},
	"ChandyLamportNonFIFO":   {VariantSpec, VariantNonFIFO},
	"ChandyLamportNoRecord":  {VariantSpec, VariantNoRecord},
	"ChandyLamportNoForward": {VariantSpec, VariantNoForward},
}

var standardModules = map[string]bool{"Naturals": true, "Integers": true, "Sequences": true, "FiniteSets": true, "TLC": true}

type moduleDef struct {
	val  Value
	line int
}

type module struct {
	file    string
	name    string
	extends []string
	specs   map[Variant]bool
	defs    map[string]moduleDef
}

func parseModule(file, src string) (*module, error) {
	toks, err := lex(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks, defs: map[string]Value{}}
	m := &module{file: file, specs: map[Variant]bool{}, defs: map[string]moduleDef{}}
	// ---- MODULE Name ----
	for p.peek().kind == tDashes {
		p.next()
	}
	t := p.next()
	if t.kind != tIdent || t.text != "MODULE" {
		return nil, p.errf(t.line, "expected ---- MODULE Name ----, found %s", t)
	}
	n := p.next()
	if n.kind != tIdent {
		return nil, p.errf(n.line, "expected the module's name after MODULE")
	}
	m.name = n.text
	if d := p.next(); d.kind != tDashes {
		return nil, p.errf(d.line, "expected ---- after MODULE %s", m.name)
	}
	if p.peek().kind == tIdent && p.peek().text == "EXTENDS" {
		line := p.next().line
		for {
			e := p.next()
			if e.kind != tIdent {
				return nil, p.errf(e.line, "expected a module name in EXTENDS")
			}
			if vs, ok := specModules[e.text]; ok {
				for _, v := range vs {
					m.specs[v] = true
				}
			} else if !standardModules[e.text] {
				return nil, p.errf(e.line, "EXTENDS %s: unknown module (want one of ChandyLamport, ChandyLamportNonFIFO, ChandyLamportNoRecord, ChandyLamportNoForward, plus standard modules)", e.text)
			}
			m.extends = append(m.extends, e.text)
			if !p.is(",") {
				break
			}
			p.next()
		}
		if len(m.specs) == 0 {
			return nil, p.errf(line, "EXTENDS names no Chandy-Lamport spec module")
		}
	} else {
		return nil, p.errf(p.peek().line, "expected EXTENDS naming the spec module (e.g. EXTENDS ChandyLamport)")
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tEquals:
			return m, nil
		case t.kind == tEOF:
			return nil, p.errf(t.line, "missing ==== at the end of module %s", m.name)
		case t.kind == tDashes:
			p.next()
			continue
		case t.kind == tIdent:
			p.next()
			if p.is("(") {
				return nil, p.errf(t.line, "operator definition %s(...) is not supported (only Name == value)", t.text)
			}
			if !p.is("==") {
				return nil, p.errf(t.line, "unsupported TLA+ at %s: a model module may only hold definitions Name == value", t)
			}
			p.next()
			if _, dup := m.defs[t.text]; dup {
				return nil, p.errf(t.line, "%s defined twice", t.text)
			}
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			nt := p.peek()
			if !(nt.kind == tEquals || nt.kind == tDashes || nt.kind == tEOF ||
				nt.kind == tIdent && p.toks[p.pos+1].kind == tPunct && (p.toks[p.pos+1].text == "==" || p.toks[p.pos+1].text == "(")) {
				return nil, p.errf(nt.line, "unexpected %s after the definition of %s (unsupported expression?)", nt, t.text)
			}
			m.defs[t.text] = moduleDef{v, t.line}
			p.defs[t.text] = v
		default:
			return nil, p.errf(t.line, "unexpected %s", t)
		}
	}
}

// ---------------------------------------------------------------------------
// The .cfg file

type cfgConst struct {
	name  string
	line  int
	ref   string // X <- ref
	value Value  // X = value
}

type cfgFile struct {
	constants     []cfgConst
	spec          string
	specLine      int
	invariants    []string
	invLines      []int
	properties    []string
	propLines     []int
	checkDeadlock bool
	constLine     int
}

var cfgKeywords = map[string]bool{
	"CONSTANT": true, "CONSTANTS": true, "SPECIFICATION": true, "INVARIANT": true, "INVARIANTS": true,
	"PROPERTY": true, "PROPERTIES": true, "CHECK_DEADLOCK": true, "INIT": true, "NEXT": true,
	"SYMMETRY": true, "VIEW": true, "CONSTRAINT": true, "CONSTRAINTS": true, "ACTION_CONSTRAINT": true,
	"ACTION_CONSTRAINTS": true, "POSTCONDITION": true, "ALIAS": true,
}

func parseCfg(file, src string) (*cfgFile, error) {
	toks, err := lex(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks, defs: map[string]Value{}}
	cf := &cfgFile{}
	names := func() ([]string, []int) {
		var ns []string
		var ls []int
		for p.peek().kind == tIdent && !cfgKeywords[p.peek().text] {
			t := p.next()
			ns = append(ns, t.text)
			ls = append(ls, t.line)
		}
		return ns, ls
	}
	for {
		t := p.next()
		if t.kind == tEOF {
			break
		}
		if t.kind != tIdent || !cfgKeywords[t.text] {
			return nil, p.errf(t.line, "unexpected %s (expected a keyword such as CONSTANTS, SPECIFICATION, INVARIANTS)", t)
		}
		switch t.text {
		case "CONSTANT", "CONSTANTS":
			cf.constLine = t.line
			for p.peek().kind == tIdent && !cfgKeywords[p.peek().text] {
				n := p.next()
				c := cfgConst{name: n.text, line: n.line}
				switch {
				case p.is("<-"):
					p.next()
					r := p.next()
					if r.kind != tIdent {
						return nil, p.errf(r.line, "expected a definition name after %s <-", n.text)
					}
					c.ref = r.text
				case p.is("="):
					p.next()
					v, err := p.expr()
					if err != nil {
						return nil, err
					}
					c.value = v
				default:
					return nil, p.errf(n.line, "constant %s: expected <- or =", n.text)
				}
				for _, o := range cf.constants {
					if o.name == c.name {
						return nil, p.errf(n.line, "constant %s assigned twice", n.text)
					}
				}
				cf.constants = append(cf.constants, c)
			}
		case "SPECIFICATION":
			n := p.next()
			if n.kind != tIdent || cfgKeywords[n.text] {
				return nil, p.errf(t.line, "SPECIFICATION needs a name")
			}
			if cf.spec != "" {
				return nil, p.errf(t.line, "SPECIFICATION given twice")
			}
			cf.spec, cf.specLine = n.text, n.line
		case "INVARIANT", "INVARIANTS":
			ns, ls := names()
			cf.invariants = append(cf.invariants, ns...)
			cf.invLines = append(cf.invLines, ls...)
		case "PROPERTY", "PROPERTIES":
			ns, ls := names()
			cf.properties = append(cf.properties, ns...)
			cf.propLines = append(cf.propLines, ls...)
		case "CHECK_DEADLOCK":
			v := p.next()
			if v.kind != tIdent || (v.text != "TRUE" && v.text != "FALSE") {
				return nil, p.errf(t.line, "CHECK_DEADLOCK must be TRUE or FALSE")
			}
			cf.checkDeadlock = v.text == "TRUE"
		default:
			return nil, p.errf(t.line, "%s is not supported by the Go model checker (only CONSTANTS, SPECIFICATION, INVARIANTS, PROPERTIES, CHECK_DEADLOCK)", t.text)
		}
	}
	if cf.spec == "" {
		return nil, &ModelError{file, 0, "no SPECIFICATION (INIT/NEXT models are not supported)"}
	}
	return cf, nil
}

// ---------------------------------------------------------------------------
// Putting them together

// LoadModel reads the TLC model cfgPath (a .cfg file) and the module of the
// same base name beside it, and returns the model. Errors name the file
// and line at fault.
func LoadModel(cfgPath string) (*Config, error) {
	src, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	tlaPath := strings.TrimSuffix(cfgPath, filepath.Ext(cfgPath)) + ".tla"
	msrc, err := os.ReadFile(tlaPath)
	if err != nil {
		return nil, fmt.Errorf("model: %s needs its module %s: %w", cfgPath, tlaPath, err)
	}
	return ParseModel(cfgPath, string(src), tlaPath, string(msrc))
}

// ParseModel is LoadModel on file contents; the paths are used in errors
// and the module's name must be the .tla file's base name.
func ParseModel(cfgPath, cfgSrc, tlaPath, tlaSrc string) (*Config, error) {
	cf, err := parseCfg(cfgPath, cfgSrc)
	if err != nil {
		return nil, err
	}
	mod, err := parseModule(tlaPath, tlaSrc)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(tlaPath), filepath.Ext(tlaPath))
	if mod.name != base {
		return nil, &ModelError{tlaPath, 1, fmt.Sprintf("module is named %s, but the file is %s.tla", mod.name, base)}
	}
	variant := Variant(cf.spec)
	if !variant.Valid() || !mod.specs[variant] {
		var have []string
		for v := range mod.specs {
			have = append(have, string(v))
		}
		sort.Strings(have)
		return nil, &ModelError{cfgPath, cf.specLine, fmt.Sprintf("SPECIFICATION %s is not defined by %s (EXTENDS %s defines %s)",
			cf.spec, mod.name, strings.Join(mod.extends, ", "), strings.Join(have, ", "))}
	}
	for i, name := range cf.invariants {
		if _, ok := invariantFuncs[spec.Property(name)]; !ok {
			return nil, &ModelError{cfgPath, cf.invLines[i], fmt.Sprintf("unknown invariant %s (known: %s)", name, knownInvariants())}
		}
	}
	for i, name := range cf.properties {
		if !spec.Property(name).IsTemporal() {
			return nil, &ModelError{cfgPath, cf.propLines[i], fmt.Sprintf("unknown property %s (known: %s)", name, spec.JoinProperties(spec.TemporalProperties))}
		}
	}
	// Resolve the constants.
	type resolved struct {
		v    Value
		file string
		line int
	}
	consts := map[string]resolved{}
	for _, c := range cf.constants {
		switch c.name {
		case "Proc", "Chan", "InitBal", "Amount", "Budget", "Snap", "Initiator":
		default:
			return nil, &ModelError{cfgPath, c.line, fmt.Sprintf("unknown constant %s (the spec declares Proc, Chan, InitBal, Amount, Budget, Snap, Initiator)", c.name)}
		}
		if c.ref != "" {
			d, ok := mod.defs[c.ref]
			if !ok {
				return nil, &ModelError{cfgPath, c.line, fmt.Sprintf("%s <- %s: %s is not defined in %s", c.name, c.ref, c.ref, tlaPath)}
			}
			consts[c.name] = resolved{d.val, tlaPath, d.line}
		} else {
			consts[c.name] = resolved{c.value, cfgPath, c.line}
		}
	}
	for _, name := range []string{"Proc", "Chan", "InitBal", "Amount", "Budget", "Snap", "Initiator"} {
		if _, ok := consts[name]; !ok {
			return nil, &ModelError{cfgPath, cf.constLine, fmt.Sprintf("constant %s is not assigned", name)}
		}
	}
	bad := func(name, format string, args ...any) error {
		r := consts[name]
		return &ModelError{r.file, r.line, fmt.Sprintf("%s: ", name) + fmt.Sprintf(format, args...)}
	}
	// Proc: a non-empty set of strings.
	procSet, ok := consts["Proc"].v.(setV)
	if !ok || len(procSet) == 0 {
		return nil, bad("Proc", "want a non-empty set of process names, got %s", describe(consts["Proc"].v))
	}
	var procs []spec.ProcID
	for _, x := range procSet {
		s, ok := x.(string)
		if !ok {
			return nil, bad("Proc", "want strings, got %s", describe(x))
		}
		procs = append(procs, spec.ProcID(s))
	}
	// Chan: a set of pairs <<p, q>>.
	chanSet, ok := consts["Chan"].v.(setV)
	if !ok {
		return nil, bad("Chan", "want a set of pairs <<p, q>>, got %s", describe(consts["Chan"].v))
	}
	var chans []spec.Channel
	for _, x := range chanSet {
		tp, ok := x.(tupleV)
		if !ok || len(tp) != 2 {
			return nil, bad("Chan", "want pairs <<p, q>>, got %s", describe(x))
		}
		a, ok1 := tp[0].(string)
		b, ok2 := tp[1].(string)
		if !ok1 || !ok2 {
			return nil, bad("Chan", "want pairs of process names")
		}
		chans = append(chans, spec.Channel{From: spec.ProcID(a), To: spec.ProcID(b)})
	}
	topo, err := spec.NewTopology(procs, chans)
	if err != nil {
		return nil, bad("Chan", "%v (the spec ASSUMEs Chan \\subseteq Proc \\X Proc, no self-loops, strongly connected)", err)
	}
	procFunc := func(name string) (map[spec.ProcID]int64, error) {
		r, ok := consts[name].v.(recordV)
		if !ok {
			return nil, bad(name, "want a record [P1 |-> n, ...] over Proc, got %s", describe(consts[name].v))
		}
		out := map[spec.ProcID]int64{}
		for i, k := range r.keys {
			n, ok := r.vals[i].(int64)
			if !ok || n < 0 {
				return nil, bad(name, "%s |-> must be a natural number", k)
			}
			if !topo.Has(spec.ProcID(k)) {
				return nil, bad(name, "%s is not a process", k)
			}
			out[spec.ProcID(k)] = n
		}
		if len(out) != len(topo.Procs) {
			return nil, bad(name, "want an entry for every process of Proc (%d), got %d", len(topo.Procs), len(out))
		}
		return out, nil
	}
	initBal, err := procFunc("InitBal")
	if err != nil {
		return nil, err
	}
	budget64, err := procFunc("Budget")
	if err != nil {
		return nil, err
	}
	budget := map[spec.ProcID]int{}
	for p, b := range budget64 {
		budget[p] = int(b)
	}
	posInts := func(name string) ([]int64, error) {
		s, ok := consts[name].v.(setV)
		if !ok {
			return nil, bad(name, "want a finite set of positive integers, got %s", describe(consts[name].v))
		}
		var out []int64
		for _, x := range s {
			n, ok := x.(int64)
			if !ok || n <= 0 {
				return nil, bad(name, "want positive integers only (the spec ASSUMEs %s \\subseteq Nat \\ {0})", name)
			}
			out = append(out, n)
		}
		return out, nil
	}
	amount, err := posInts("Amount")
	if err != nil {
		return nil, err
	}
	snapInts, err := posInts("Snap")
	if err != nil {
		return nil, err
	}
	var snaps []spec.SnapID
	for _, s := range snapInts {
		snaps = append(snaps, spec.SnapID(s))
	}
	// Initiator \in [Snap -> Proc]: a tuple (a function on 1..n).
	tp, ok := consts["Initiator"].v.(tupleV)
	if !ok {
		return nil, bad("Initiator", "want a tuple <<p1, p2, ...>> (a function on 1..n = Snap), got %s", describe(consts["Initiator"].v))
	}
	if len(tp) != len(snaps) {
		return nil, bad("Initiator", "its domain 1..%d is not Snap (the spec ASSUMEs Initiator \\in [Snap -> Proc])", len(tp))
	}
	initiator := map[spec.SnapID]spec.ProcID{}
	for i, x := range tp {
		s, ok := x.(string)
		if !ok || !topo.Has(spec.ProcID(s)) {
			return nil, bad("Initiator", "entry %d is not a process", i+1)
		}
		initiator[spec.SnapID(i+1)] = spec.ProcID(s)
	}
	for _, s := range snaps {
		if _, ok := initiator[s]; !ok {
			return nil, bad("Initiator", "its domain 1..%d is not Snap (the spec ASSUMEs Initiator \\in [Snap -> Proc])", len(tp))
		}
	}
	cfg, err := NewConfig(Constants{Topo: topo, InitBal: initBal, Amount: amount, Budget: budget, Snap: snaps, Initiator: initiator},
		variant, props(cf.invariants), props(cf.properties))
	if err != nil {
		return nil, &ModelError{cfgPath, cf.constLine, err.Error()}
	}
	cfg.Name = mod.name
	cfg.CheckDeadlock = cf.checkDeadlock
	return cfg, nil
}

// props converts the names of a model file's INVARIANT or PROPERTY section.
func props(names []string) []spec.Property {
	ps := make([]spec.Property, len(names))
	for i, n := range names {
		ps[i] = spec.Property(n)
	}
	return ps
}
