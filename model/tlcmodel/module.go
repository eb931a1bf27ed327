package tlcmodel

import "slices"

// SpecModules are the spec modules of tla/ a model may extend: the
// Chandy-Lamport family (package model's) and tla/BarrierSnapshots.tla
// with tla/BarrierAdaptive.tla and tla/BarrierSink.tla (package model/barrier's). Which specifications each defines is its
// loader's to know.
var SpecModules = []string{"ChandyLamport", "ChandyLamportNonFIFO", "ChandyLamportNoRecord", "ChandyLamportNoForward",
	"ChandyLamportLossy", "ChandyLamportFaults", "BarrierSnapshots", "BarrierAdaptive", "BarrierSink"}

var standardModules = map[string]bool{"Naturals": true, "Integers": true, "Sequences": true, "FiniteSets": true, "TLC": true}

type moduleDef struct {
	val  Value
	line int
}

type module struct {
	file    string
	name    string
	extends []string
	spec    string // the first spec module of SpecModules it extends
	defs    map[string]moduleDef
}

// parseModule reads an MC module: ---- MODULE Name ----, EXTENDS naming a
// spec module, then definitions Name == value up to ====.
func parseModule(file, src string) (*module, error) {
	toks, err := lex(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks, defs: map[string]Value{}}
	m := &module{file: file, defs: map[string]moduleDef{}}
	if err := m.header(p); err != nil {
		return nil, err
	}
	if err := m.extendsClause(p); err != nil {
		return nil, err
	}
	if err := m.body(p); err != nil {
		return nil, err
	}
	return m, nil
}

// body reads the definitions, and ---- lines between them, up to ====.
func (m *module) body(p *parser) error {
	for {
		t := p.peek()
		switch t.kind {
		case tEquals:
			return nil
		case tEOF:
			return p.errf(t.line, "missing ==== at the end of module %s", m.name)
		case tDashes:
			p.next()
		case tIdent:
			if err := m.definition(p); err != nil {
				return err
			}
		default:
			return p.errf(t.line, "unexpected %s", t)
		}
	}
}

// header reads ---- MODULE Name ----.
func (m *module) header(p *parser) error {
	for p.peek().kind == tDashes {
		p.next()
	}
	t := p.next()
	if t.kind != tIdent || t.text != "MODULE" {
		return p.errf(t.line, "expected ---- MODULE Name ----, found %s", t)
	}
	n := p.next()
	if n.kind != tIdent {
		return p.errf(n.line, "expected the module's name after MODULE")
	}
	m.name = n.text
	if d := p.next(); d.kind != tDashes {
		return p.errf(d.line, "expected ---- after MODULE %s", m.name)
	}
	return nil
}

// extendsClause reads EXTENDS M1, M2, ...: one spec module at least, and
// standard modules.
func (m *module) extendsClause(p *parser) error {
	if p.peek().kind != tIdent || p.peek().text != "EXTENDS" {
		return p.errf(p.peek().line, "expected EXTENDS naming the spec module (e.g. EXTENDS ChandyLamport)")
	}
	line := p.next().line
	for {
		e := p.next()
		if e.kind != tIdent {
			return p.errf(e.line, "expected a module name in EXTENDS")
		}
		if err := m.extend(p, e); err != nil {
			return err
		}
		if !p.is(",") {
			break
		}
		p.next()
	}
	if m.spec == "" {
		return p.errf(line, "EXTENDS names no spec module")
	}
	return nil
}

// extend takes module e of the EXTENDS clause: the first spec module
// named is the one the model checks; a module neither a spec nor a
// standard one is an error.
func (m *module) extend(p *parser, e token) error {
	if slices.Contains(SpecModules, e.text) {
		if m.spec == "" {
			m.spec = e.text
		}
	} else if !standardModules[e.text] {
		return p.errf(e.line, "EXTENDS %s: unknown module (want one of ChandyLamport, ChandyLamportNonFIFO, ChandyLamportNoRecord, ChandyLamportNoForward, ChandyLamportLossy, ChandyLamportFaults, BarrierSnapshots, BarrierAdaptive, BarrierSink, plus standard modules)", e.text)
	}
	m.extends = append(m.extends, e.text)
	return nil
}

// definition reads Name == value; the value must end where the next
// definition, a ---- line or ==== starts.
func (m *module) definition(p *parser) error {
	t := p.next()
	if p.is("(") {
		return p.errf(t.line, "operator definition %s(...) is not supported (only Name == value)", t.text)
	}
	if !p.is("==") {
		return p.errf(t.line, "unsupported TLA+ at %s: a model module may only hold definitions Name == value", t)
	}
	p.next()
	if _, dup := m.defs[t.text]; dup {
		return p.errf(t.line, "%s defined twice", t.text)
	}
	v, err := p.expr()
	if err != nil {
		return err
	}
	if nt := p.peek(); !p.atDefinitionEnd() {
		return p.errf(nt.line, "unexpected %s after the definition of %s (unsupported expression?)", nt, t.text)
	}
	m.defs[t.text] = moduleDef{v, t.line}
	p.defs[t.text] = v
	return nil
}

// atDefinitionEnd reports whether the next token may follow a definition's
// value: the module's end, a ---- line, or the next definition (Name == or
// Name( ).
func (p *parser) atDefinitionEnd() bool {
	nt := p.peek()
	switch nt.kind {
	case tEquals, tDashes, tEOF:
		return true
	case tIdent:
		after := p.toks[p.pos+1]
		return after.kind == tPunct && (after.text == "==" || after.text == "(")
	}
	return false
}
