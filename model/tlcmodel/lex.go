package tlcmodel

import (
	"fmt"
	"strconv"
	"strings"
)

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

// lexer turns a .cfg or .tla source into tokens.
type lexer struct {
	file string
	src  string
	i    int // the next byte
	line int
	toks []token
}

func lex(file, src string) ([]token, error) {
	l := &lexer{file: file, src: src, line: 1}
	for l.i < len(l.src) {
		if err := l.token(); err != nil {
			return nil, err
		}
	}
	l.toks = append(l.toks, token{tEOF, "", l.line})
	return l.toks, nil
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// rest is the source from the next byte on.
func (l *lexer) rest() string { return l.src[l.i:] }

func (l *lexer) emit(kind tokKind, text string) { l.toks = append(l.toks, token{kind, text, l.line}) }

// skip advances past the bytes that satisfy f.
func (l *lexer) skip(f func(byte) bool) string {
	j := l.i
	for l.i < len(l.src) && f(l.src[l.i]) {
		l.i++
	}
	return l.src[j:l.i]
}

// token reads one token, or skips one blank or comment.
func (l *lexer) token() error {
	if l.blank() || l.rule() {
		return nil
	}
	c := l.src[l.i]
	switch {
	case strings.HasPrefix(l.rest(), `\*`):
		l.skip(func(c byte) bool { return c != '\n' })
	case strings.HasPrefix(l.rest(), "(*"):
		return l.blockComment()
	case c == '"':
		return l.str()
	case c == '\\' && l.i+1 < len(l.src) && isIdent(l.src[l.i+1]):
		// a TLA+ operator such as \in or \cup: lexed so that the parser
		// can say it is not supported
		l.i++
		l.emit(tPunct, `\`+l.skip(isIdent))
	case c >= '0' && c <= '9':
		l.number()
	case isIdent(c):
		l.emit(tIdent, l.skip(isIdent))
	default:
		return l.punct()
	}
	return nil
}

// blank skips one space, tab, carriage return or newline (counting the
// line), and reports whether it did.
func (l *lexer) blank() bool {
	switch l.src[l.i] {
	case '\n':
		l.line++
	case ' ', '\t', '\r':
	default:
		return false
	}
	l.i++
	return true
}

// rules are the module's separator lines: four or more dashes open it,
// four or more equals signs close it.
var rules = []struct {
	prefix string
	kind   tokKind
}{{"----", tDashes}, {"====", tEquals}}

// rule reads a separator line of any length as one token, and reports
// whether there was one.
func (l *lexer) rule() bool {
	for _, r := range rules {
		if strings.HasPrefix(l.rest(), r.prefix) {
			l.skip(func(c byte) bool { return c == r.prefix[0] })
			l.emit(r.kind, r.prefix)
			return true
		}
	}
	return false
}

// blockComment skips a (* comment *), which may nest.
func (l *lexer) blockComment() error {
	start, depth := l.line, 0
	for {
		switch {
		case l.i >= len(l.src):
			return &Error{l.file, start, "unterminated (* comment"}
		case strings.HasPrefix(l.rest(), "(*"):
			depth++
			l.i += 2
		case strings.HasPrefix(l.rest(), "*)"):
			depth--
			l.i += 2
			if depth == 0 {
				return nil
			}
		default:
			if l.src[l.i] == '\n' {
				l.line++
			}
			l.i++
		}
	}
}

// str reads a "string" with the escapes \n, \t and \<char>.
func (l *lexer) str() error {
	var sb strings.Builder
	j := l.i + 1
	for ; j < len(l.src) && l.src[j] != '"'; j++ {
		if l.src[j] == '\n' {
			return &Error{l.file, l.line, "unterminated string"}
		}
		if l.src[j] == '\\' && j+1 < len(l.src) {
			j++
			sb.WriteByte(unescape(l.src[j]))
			continue
		}
		sb.WriteByte(l.src[j])
	}
	if j >= len(l.src) {
		return &Error{l.file, l.line, "unterminated string"}
	}
	l.emit(tStr, sb.String())
	l.i = j + 1
	return nil
}

// unescape is the character that \c stands for in a string: \n a
// newline, \t a tab, any other c itself.
func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 't':
		return '\t'
	}
	return c
}

// number reads a number; TLA+ allows identifiers like 1a, read as names.
func (l *lexer) number() {
	word := l.skip(isIdent)
	kind := tNum
	for _, ch := range []byte(word) {
		if ch < '0' || ch > '9' {
			kind = tIdent
		}
	}
	l.emit(kind, word)
}

// puncts are the punctuation tokens, longest first where one is a prefix
// of another.
var puncts = []string{"|->", "==", "<-", "<<", ">>", "..", "=", "{", "}", "[", "]", ",", "(", ")", "-", ":"}

func (l *lexer) punct() error {
	for _, p := range puncts {
		if strings.HasPrefix(l.rest(), p) {
			l.emit(tPunct, p)
			l.i += len(p)
			return nil
		}
	}
	return &Error{l.file, l.line, fmt.Sprintf("unexpected character %q", l.src[l.i])}
}
