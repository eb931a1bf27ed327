package tlcmodel

type cfgConst struct {
	name  string
	line  int
	ref   string // X <- ref
	value Value  // X = value
}

type cfgFile struct {
	file          string
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

// parseCfg reads a .cfg file: keyword sections in any order.
func parseCfg(file, src string) (*cfgFile, error) {
	toks, err := lex(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{file: file, toks: toks, defs: map[string]Value{}}
	cf := &cfgFile{file: file}
	for {
		t := p.next()
		if t.kind == tEOF {
			break
		}
		if t.kind != tIdent || !cfgKeywords[t.text] {
			return nil, p.errf(t.line, "unexpected %s (expected a keyword such as CONSTANTS, SPECIFICATION, INVARIANTS)", t)
		}
		if err := cf.section(p, t); err != nil {
			return nil, err
		}
	}
	if cf.spec == "" {
		return nil, &Error{file, 0, "no SPECIFICATION (INIT/NEXT models are not supported)"}
	}
	return cf, nil
}

// section reads the section that keyword t starts.
func (cf *cfgFile) section(p *parser, t token) error {
	switch t.text {
	case "CONSTANT", "CONSTANTS":
		return cf.constantsSection(p, t)
	case "SPECIFICATION":
		return cf.specification(p, t)
	case "INVARIANT", "INVARIANTS":
		ns, ls := names(p)
		cf.invariants = append(cf.invariants, ns...)
		cf.invLines = append(cf.invLines, ls...)
	case "PROPERTY", "PROPERTIES":
		ns, ls := names(p)
		cf.properties = append(cf.properties, ns...)
		cf.propLines = append(cf.propLines, ls...)
	case "CHECK_DEADLOCK":
		return cf.checkDeadlockFlag(p, t)
	default:
		return p.errf(t.line, "%s is not supported by the Go model checker (only CONSTANTS, SPECIFICATION, INVARIANTS, PROPERTIES, CHECK_DEADLOCK)", t.text)
	}
	return nil
}

// constantsSection reads the assignments after CONSTANTS (keyword t), up
// to the next keyword.
func (cf *cfgFile) constantsSection(p *parser, t token) error {
	cf.constLine = t.line
	for p.peek().kind == tIdent && !cfgKeywords[p.peek().text] {
		if err := cf.constant(p); err != nil {
			return err
		}
	}
	return nil
}

// specification reads the one name after SPECIFICATION (keyword t).
func (cf *cfgFile) specification(p *parser, t token) error {
	n := p.next()
	if n.kind != tIdent || cfgKeywords[n.text] {
		return p.errf(t.line, "SPECIFICATION needs a name")
	}
	if cf.spec != "" {
		return p.errf(t.line, "SPECIFICATION given twice")
	}
	cf.spec, cf.specLine = n.text, n.line
	return nil
}

// checkDeadlockFlag reads the TRUE or FALSE after CHECK_DEADLOCK (keyword t).
func (cf *cfgFile) checkDeadlockFlag(p *parser, t token) error {
	v := p.next()
	if v.kind != tIdent || (v.text != "TRUE" && v.text != "FALSE") {
		return p.errf(t.line, "CHECK_DEADLOCK must be TRUE or FALSE")
	}
	cf.checkDeadlock = v.text == "TRUE"
	return nil
}

// constant reads X <- Name or X = value.
func (cf *cfgFile) constant(p *parser) error {
	n := p.next()
	c := cfgConst{name: n.text, line: n.line}
	switch {
	case p.is("<-"):
		p.next()
		r := p.next()
		if r.kind != tIdent {
			return p.errf(r.line, "expected a definition name after %s <-", n.text)
		}
		c.ref = r.text
	case p.is("="):
		p.next()
		v, err := p.expr()
		if err != nil {
			return err
		}
		c.value = v
	default:
		return p.errf(n.line, "constant %s: expected <- or =", n.text)
	}
	for _, o := range cf.constants {
		if o.name == c.name {
			return p.errf(n.line, "constant %s assigned twice", n.text)
		}
	}
	cf.constants = append(cf.constants, c)
	return nil
}

// names reads the names of an INVARIANT or PROPERTY section, with their
// lines.
func names(p *parser) ([]string, []int) {
	var ns []string
	var ls []int
	for p.peek().kind == tIdent && !cfgKeywords[p.peek().text] {
		t := p.next()
		ns = append(ns, t.text)
		ls = append(ls, t.line)
	}
	return ns, ls
}
