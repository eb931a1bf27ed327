package tlcmodel

import (
	"fmt"
	"strconv"
	"strings"
)

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
					return nil, &Error{file, start, "unterminated (* comment"}
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
					return nil, &Error{file, line, "unterminated string"}
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
				return nil, &Error{file, line, "unterminated string"}
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
				return nil, &Error{file, line, fmt.Sprintf("unexpected character %q", c)}
			}
		}
	}
	toks = append(toks, token{tEOF, "", line})
	return toks, nil
}
