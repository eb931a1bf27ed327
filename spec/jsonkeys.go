package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// checkKeys walks the JSON value b as DecodeStrict will decode it into a
// value of type t, and refuses what encoding/json lets through without a
// word: a key given twice in one object (it keeps the last), a key that
// names a field of t only case-insensitively (it matches "Amount" to
// "amount"), bytes that are not UTF-8 and a \u escape of half a UTF-16
// surrogate pair (it reads both as U+FFFD, so two ids that differ read
// as one). With counts, a count out of the outsider format's range is
// refused too (jsonField.checkCount); the project's own formats leave
// their uint64s to the decoder. Errors name the key by its JSON path, as
// DecodeStrict's do. Other malformed JSON and unknown fields are left to
// DecodeStrict. The walk scans the bytes itself: json.Decoder's Token is
// several times slower than the decoding.
func checkKeys(b []byte, t reflect.Type, counts bool) error {
	w := keyWalker{b: b, bad: invalidUTF8(b), counts: counts, path: make([]pathStep, 0, 8)}
	err := w.value(jsonField{t: t})
	switch {
	case err != nil && !errors.Is(err, errMalformed):
		return err
	case w.bad >= 0: // outside any string: the JSON is malformed there
		return w.utf8Error()
	}
	return nil
}

// errMalformed stops a walk at JSON it cannot read.
var errMalformed = errors.New("malformed JSON")

// keyWalker walks one JSON value.
type keyWalker struct {
	b   []byte
	i   int // the offset of the next byte to read
	bad int // the offset of b's first byte that is not UTF-8, or -1

	counts bool // check counts against the outsider format's range

	// path is where the walk is: the keys and array indexes from the
	// value's root, spelled only when an error names it (pathString).
	path []pathStep
}

// pathStep is one step of a JSON path: member key of an object (index
// -1), or element index of an array.
type pathStep struct {
	key   []byte
	index int
}

// pathString is the JSON path of the value being walked, as errors name
// it: "nodes[2].port".
func (w *keyWalker) pathString() string {
	var sb strings.Builder
	for _, s := range w.path {
		switch {
		case s.index >= 0:
			sb.WriteString("[" + strconv.Itoa(s.index) + "]")
		case sb.Len() > 0:
			sb.WriteByte('.')
			fallthrough
		default:
			sb.Write(s.key)
		}
	}
	return sb.String()
}

// next skips white space and reports whether the next byte is c (and
// then reads it).
func (w *keyWalker) next(c byte) bool {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\n' || w.b[w.i] == '\r') {
		w.i++
	}
	if w.i < len(w.b) && w.b[w.i] == c {
		w.i++
		return true
	}
	return false
}

// value walks the value at w's path, decoded into field f (f.t nil: not
// known).
func (w *keyWalker) value(f jsonField) error {
	switch {
	case w.next('{'):
		return w.object(f.t)
	case w.next('['):
		return w.array(f.t)
	case w.next('"'):
		_, err := w.str(false)
		return err
	}
	start := w.i
	for w.i < len(w.b) && !endsLiteral(w.b[w.i]) {
		w.i++
	}
	if lit := w.b[start:w.i]; w.counts && len(lit) > 0 && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') {
		return f.checkCount(string(lit), w.pathString)
	}
	return nil // true, false, null, or malformed: DecodeStrict says so
}

// endsLiteral reports whether c ends a number or a true, false or null.
func endsLiteral(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ':', ']', '}':
		return true
	}
	return false
}

// array walks the elements of the array at w's path, decoded into t.
func (w *keyWalker) array(t reflect.Type) error {
	var elem reflect.Type
	if t = jsonForm(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	if w.next(']') {
		return nil
	}
	w.path = append(w.path, pathStep{})
	for i := 0; ; i++ {
		w.path[len(w.path)-1].index = i
		if err := w.value(jsonField{t: elem}); err != nil {
			return err
		}
		switch {
		case w.next(']'):
			w.path = w.path[:len(w.path)-1]
			return nil
		case !w.next(','):
			return errMalformed
		}
	}
}

// smallObject is how many keys an object's duplicate check compares one
// by one before it keeps them in a map.
const smallObject = 16

// object walks the members of the object at w's path, decoded into t:
// each key once (a key given twice is an error), each value as the
// field it names.
func (w *keyWalker) object(t reflect.Type) error {
	t = jsonForm(t)
	if w.next('}') {
		return nil
	}
	var few [smallObject][]byte
	keys := few[:0]
	var many map[string]bool
	for {
		k, err := w.key()
		if err != nil {
			return err
		}
		if seenKey(keys, many, k) {
			w.path = append(w.path, pathStep{key: k, index: -1})
			return fmt.Errorf("field %q: given twice: a key may appear once in an object", w.pathString())
		}
		switch {
		case many != nil:
			many[string(k)] = true
		case len(keys) < smallObject:
			keys = append(keys, k)
		default:
			many = map[string]bool{string(k): true}
			for _, o := range keys {
				many[string(o)] = true
			}
		}
		if err := w.member(t, k); err != nil {
			return err
		}
		switch {
		case w.next('}'):
			return nil
		case !w.next(','):
			return errMalformed
		}
	}
}

// seenKey reports whether k is among an object's keys so far: keys, or
// many once there are more than smallObject.
func seenKey(keys [][]byte, many map[string]bool, k []byte) bool {
	if many != nil {
		return many[string(k)]
	}
	for _, o := range keys {
		if string(o) == string(k) {
			return true
		}
	}
	return false
}

// key reads an object member's key and the colon after it.
func (w *keyWalker) key() ([]byte, error) {
	if !w.next('"') {
		return nil, errMalformed
	}
	k, err := w.str(true)
	if err != nil {
		return nil, err
	}
	if !w.next(':') {
		return nil, errMalformed
	}
	return k, nil
}

// member walks the value of member k of the object at w's path, decoded
// into t.
func (w *keyWalker) member(t reflect.Type, k []byte) error {
	f, err := memberType(t, k, w.pathString)
	if err != nil {
		return err
	}
	w.path = append(w.path, pathStep{key: k, index: -1})
	if err := w.value(f); err != nil {
		return err
	}
	w.path = w.path[:len(w.path)-1]
	return nil
}

// str reads the string whose opening quote was just read, checks it for
// bytes that are not UTF-8 and halves of surrogate pairs, and returns it
// unquoted: the value at w's path, or a key of the object there.
func (w *keyWalker) str(key bool) ([]byte, error) {
	start, escaped := w.i-1, false
	for ; w.i < len(w.b) && w.b[w.i] != '"'; w.i++ {
		if w.b[w.i] == '\\' {
			escaped = true
			w.i++
		}
	}
	if w.i >= len(w.b) {
		return nil, errMalformed
	}
	w.i++
	raw := w.b[start:w.i]
	if w.bad >= start && w.bad < w.i {
		return nil, fmt.Errorf("%s: %w", where(w.pathString(), key), w.utf8Error())
	}
	if !escaped {
		return raw[1 : len(raw)-1], nil
	}
	if s := loneSurrogate(raw); s != "" {
		return nil, fmt.Errorf("%s: %s is half a UTF-16 surrogate pair, no character", where(w.pathString(), key), s)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, errMalformed
	}
	return []byte(s), nil
}

// utf8Error says where b is not UTF-8.
func (w *keyWalker) utf8Error() error {
	return fmt.Errorf("invalid UTF-8: byte 0x%02x at byte %d (JSON text must be UTF-8)", w.b[w.bad], w.bad+1)
}

// where names, in errors, the value at path or a key of the object at
// path.
func where(path string, key bool) string {
	switch {
	case !key:
		return fmt.Sprintf("field %q", path)
	case path == "":
		return "a key"
	}
	return fmt.Sprintf("a key in field %q", path)
}

// invalidUTF8 is the offset of the first byte of b that is not UTF-8,
// or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogate is the first \u escape in the JSON text raw (a string
// token) that is half a UTF-16 surrogate pair without its other half,
// or "".
func loneSurrogate(raw []byte) string {
	for i := 0; i+1 < len(raw); i++ {
		switch {
		case raw[i] != '\\':
			continue
		case raw[i+1] != 'u':
			i++ // an escape of one character: skip it
			continue
		}
		switch r := hex4(raw[i+2:]); {
		case r >= 0xd800 && r < 0xdc00 && lowSurrogate(raw[i+6:]):
			i += 11 // a pair
		case r >= 0xd800 && r < 0xe000:
			return string(raw[i : i+6])
		default:
			i += 5
		}
	}
	return ""
}

// lowSurrogate reports whether b begins with a \u escape of the second
// half of a surrogate pair.
func lowSurrogate(b []byte) bool {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return false
	}
	r := hex4(b[2:])
	return r >= 0xdc00 && r < 0xe000
}

// hex4 is the value of the four hex digits b begins with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return -1
	}
	return int(n)
}

// memberType is what member k of an object (at the path parent spells)
// is decoded into when the object is decoded into t: a map's element, or
// the struct field whose JSON name is k exactly; no type where it is not
// known (an unknown field, a json.RawMessage). A key that is a field's
// name only case-insensitively is an error.
func memberType(t reflect.Type, k []byte, parent func() string) (jsonField, error) {
	switch {
	case t == nil:
		return jsonField{}, nil
	case t.Kind() == reflect.Map:
		return jsonField{t: t.Elem()}, nil
	case t.Kind() != reflect.Struct:
		return jsonField{}, nil
	}
	fields := jsonFields(t)
	if f, ok := fields[string(k)]; ok {
		return f, nil
	}
	for name := range fields {
		if strings.EqualFold(name, string(k)) {
			path := parent()
			return jsonField{}, fmt.Errorf("unknown field %q: keys are case-sensitive, the field is %q", joinPath(path, string(k)), joinPath(path, name))
		}
	}
	return jsonField{}, nil
}

// joinPath is the JSON path of member k of the object at path.
func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonForm is the type whose fields a JSON object decoded into t is
// read into: t without its pointers, the file form of a Topology, and no
// type (not known) for another type that reads itself (a json.Unmarshaler
// whose file form is its own: RecordedSnapshot decodes its form through
// DecodeStrict, which walks it there).
func jsonForm(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	if f, ok := jsonFormCache.Load(t); ok {
		return f.(jsonFormOf).t
	}
	f := derefType(t)
	switch {
	case f == reflect.TypeFor[Topology]():
		f = reflect.TypeFor[topologyJSON]()
	case reflect.PointerTo(f).Implements(unmarshalerType):
		f = nil
	}
	jsonFormCache.Store(t, jsonFormOf{f})
	return f
}

// jsonFormCache holds jsonForm's answers by type.
var jsonFormCache sync.Map

// jsonFormOf is a jsonForm answer, which may be no type.
type jsonFormOf struct{ t reflect.Type }

// unmarshalerType is json.Unmarshaler's.
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// jsonFieldCache holds jsonFields' answers by struct type.
var jsonFieldCache sync.Map

// jsonField is what a JSON value is decoded into: a Go type, and the
// least value a count of the outsider format may have there (a struct
// field's tag min:"1": a field read into a uint64 with omitempty would
// take 0 for none).
type jsonField struct {
	t   reflect.Type
	min uint64
}

// maxCount bounds the outsider format's counts (step, seq, vc, a
// channel's sent and got): the schema's maximum, a signed 64-bit
// integer's, though they are read into uint64s.
const maxCount = 1<<63 - 1

// checkCount checks number n, at the JSON path that path spells, against
// f when f is a count (an unsigned integer): at least f.min, at most
// maxCount. Numbers that are not whole, negative or malformed are left
// to DecodeStrict.
func (f jsonField) checkCount(n string, path func() string) error {
	t := jsonForm(f.t)
	if t == nil || t.Kind() != reflect.Uint64 || strings.Trim(n, "0123456789") != "" {
		return nil
	}
	v, err := strconv.ParseUint(n, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && v > maxCount:
		return fmt.Errorf("field %q: %s is out of range: at most %d", path(), n, uint64(maxCount))
	case err == nil && v < f.min:
		return fmt.Errorf("field %q: %d, want %d or more (leave it out to have it derived)", path(), v, f.min)
	}
	return nil
}

// jsonFields maps the JSON names of struct t's fields to their types,
// the fields of an embedded struct without a JSON name among them (as
// encoding/json promotes them; t's own fields first).
func jsonFields(t reflect.Type) map[string]jsonField {
	if m, ok := jsonFieldCache.Load(t); ok {
		return m.(map[string]jsonField)
	}
	m := map[string]jsonField{}
	var promoted []map[string]jsonField
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if e := derefType(f.Type); f.Anonymous && name == "" && e.Kind() == reflect.Struct {
			promoted = append(promoted, jsonFields(e))
			continue
		}
		switch {
		case !f.IsExported() || name == "-":
			continue
		case name == "":
			name = f.Name
		}
		min, _ := strconv.ParseUint(f.Tag.Get("min"), 10, 64)
		m[name] = jsonField{t: f.Type, min: min}
	}
	for _, p := range promoted {
		for name, f := range p {
			if _, ok := m[name]; !ok {
				m[name] = f
			}
		}
	}
	jsonFieldCache.Store(t, m)
	return m
}

// derefType is t without its pointers.
func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
