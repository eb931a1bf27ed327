package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// checkKeys walks the JSON value b as DecodeStrict will decode it into a
// value of type t, and refuses what encoding/json lets through without a
// word: a key given twice in one object (it keeps the last) and a key
// that names a field of t only case-insensitively (it matches "Amount"
// to "amount"). Errors name the key by its JSON path, as DecodeStrict's
// do. Malformed JSON and unknown fields are left to DecodeStrict.
func checkKeys(b []byte, t reflect.Type) error {
	w := keyWalker{dec: json.NewDecoder(bytes.NewReader(b))}
	w.dec.UseNumber()
	if err := w.value(t, ""); err != nil && !errors.Is(err, errMalformed) {
		return err
	}
	return nil
}

// errMalformed stops a walk at JSON the decoder cannot read.
var errMalformed = errors.New("malformed JSON")

// keyWalker walks one JSON value token by token.
type keyWalker struct {
	dec *json.Decoder
}

// token reads the next token.
func (w *keyWalker) token() (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, errMalformed
	}
	return tok, nil
}

// value walks the value at path, decoded into t (nil: not known).
func (w *keyWalker) value(t reflect.Type, path string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return w.object(t, path)
	case json.Delim('['):
		return w.array(t, path)
	}
	return nil
}

// array walks the elements of the array at path, decoded into t.
func (w *keyWalker) array(t reflect.Type, path string) error {
	var elem reflect.Type
	if t = jsonForm(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for i := 0; w.dec.More(); i++ {
		if err := w.value(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, err := w.token()
	return err
}

// object walks the members of the object at path, decoded into t.
func (w *keyWalker) object(t reflect.Type, path string) error {
	t = jsonForm(t)
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		p := joinPath(path, k)
		if seen[k] {
			return fmt.Errorf("field %q: given twice: a key may appear once in an object", p)
		}
		seen[k] = true
		ft, err := memberType(t, k, path)
		if err != nil {
			return err
		}
		if err := w.value(ft, p); err != nil {
			return err
		}
	}
	_, err := w.token()
	return err
}

// memberType is the type member k of an object at path is decoded into
// when the object is decoded into t: a map's element, or the struct
// field whose JSON name is k exactly; nil where it is not known (an
// unknown field, a json.RawMessage). A key that is a field's name only
// case-insensitively is an error.
func memberType(t reflect.Type, k, path string) (reflect.Type, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.Kind() == reflect.Map:
		return t.Elem(), nil
	case t.Kind() != reflect.Struct:
		return nil, nil
	}
	fields := jsonFields(t)
	if f, ok := fields[k]; ok {
		return f, nil
	}
	for name := range fields {
		if strings.EqualFold(name, k) {
			return nil, fmt.Errorf("unknown field %q: keys are case-sensitive, the field is %q", joinPath(path, k), joinPath(path, name))
		}
	}
	return nil, nil
}

// joinPath is the JSON path of member k of the object at path.
func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonForm is the type whose fields a JSON object decoded into t is
// read into: t without its pointers, or the file form of a type that
// reads itself (a Topology).
func jsonForm(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[Topology]() {
		return reflect.TypeFor[topologyJSON]()
	}
	return t
}

// jsonFieldCache holds jsonFields' answers by struct type.
var jsonFieldCache sync.Map

// jsonFields maps the JSON names of struct t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case !f.IsExported() || name == "-":
			continue
		case name == "":
			name = f.Name
		}
		m[name] = f.Type
	}
	jsonFieldCache.Store(t, m)
	return m
}
