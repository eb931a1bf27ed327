package tlcmodel

import (
	"fmt"
	"sort"
	"strconv"
)

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
	return &Error{p.file, line, fmt.Sprintf(format, args...)}
}

func (p *parser) expect(text string) error {
	t := p.next()
	if t.kind != tPunct || t.text != text {
		return p.errf(t.line, "expected %q, found %s", text, t)
	}
	return nil
}

// expr reads a value: a primary one, or a range a..b of two.
func (p *parser) expr() (Value, error) {
	line := p.peek().line
	v, err := p.primary()
	if err != nil {
		return nil, err
	}
	if !p.is("..") {
		return v, nil
	}
	p.next()
	w, err := p.primary()
	if err != nil {
		return nil, err
	}
	return p.rangeSet(line, v, w)
}

// rangeSet is the set v..w (at line), of two integers at most 65536
// apart.
func (p *parser) rangeSet(line int, v, w Value) (Value, error) {
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

// primary reads a number, a string, TRUE/FALSE, an earlier definition's
// name, or a bracketed expression.
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
		return p.name(t)
	case tPunct:
		return p.bracketed(t)
	}
	return nil, p.errf(t.line, "unexpected %s in an expression", t)
}

// name is TRUE, FALSE or an earlier definition.
func (p *parser) name(t token) (Value, error) {
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
}

// bracketed reads what punctuation t starts: -n, (e), {set}, <<tuple>>,
// [record].
func (p *parser) bracketed(t token) (Value, error) {
	switch t.text {
	case "-":
		return p.negative(t)
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
		return p.record()
	}
	return nil, p.errf(t.line, "unexpected %s in an expression", t)
}

// negative reads the number after a minus sign t.
func (p *parser) negative(t token) (Value, error) {
	n := p.next()
	if n.kind != tNum {
		return nil, p.errf(t.line, "expected a number after '-'")
	}
	x, err := strconv.ParseInt("-"+n.text, 10, 64)
	if err != nil {
		return nil, p.errf(t.line, "bad integer -%s", n.text)
	}
	return x, nil
}

// record reads k |-> v, ... ] after the [, in canonical field order.
func (p *parser) record() (Value, error) {
	var r recordV
	seen := map[string]bool{}
	for {
		k, v, err := p.field(seen)
		if err != nil {
			return nil, err
		}
		r.keys = append(r.keys, k)
		r.vals = append(r.vals, v)
		if !p.is(",") {
			break
		}
		p.next()
	}
	if err := p.expect("]"); err != nil {
		return nil, err
	}
	return r.sorted(), nil
}

// field reads one k |-> v of a record; seen holds the fields before it
// (and gets k), none of which k may repeat.
func (p *parser) field(seen map[string]bool) (string, Value, error) {
	k := p.next()
	if k.kind != tIdent {
		return "", nil, p.errf(k.line, "expected a field name in a record [k |-> v, ...], found %s (function constructors are not supported)", k)
	}
	if !p.is("|->") {
		return "", nil, p.errf(p.peek().line, "expected |-> after field %s (only records [k |-> v, ...] are supported)", k.text)
	}
	p.next()
	if seen[k.text] {
		return "", nil, p.errf(k.line, "record field %s given twice", k.text)
	}
	seen[k.text] = true
	v, err := p.expr()
	return k.text, v, err
}

// sorted is r with its fields in canonical (name) order.
func (r recordV) sorted() recordV {
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
	return s
}
