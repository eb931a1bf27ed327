package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// DecodeStrict decodes exactly one JSON value from b into v, strictly: an
// unknown field, trailing data after the value, and a value of the wrong
// type are errors, and each error names the field by its JSON path
// ("field \"nodes[2].port\": want a number, got string"), never a Go type.
// So are what encoding/json reads without a word (checkKeys): a key given
// twice in an object, a key that matches a field only case-insensitively,
// bytes that are not UTF-8 and half a UTF-16 surrogate pair. Every file
// format of the project (traces, topologies, recorded snapshots, cluster
// configs, stored snapshots, the TLC manifest) is read through it.
func DecodeStrict(b []byte, v any) error {
	if err := checkKeys(b, reflect.TypeOf(v), false); err != nil {
		return err
	}
	return decodeJSON(b, v)
}

// decodeJSON is DecodeStrict after the key walk: encoding/json's decoding
// with unknown fields and trailing data refused.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return explainJSON(err)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("trailing data after the JSON value: %w", err)
	}
	return fmt.Errorf("trailing data after the JSON value: %s", truncateJSON(extra))
}

// explainJSON rewrites encoding/json's errors in the terms of the file:
// the JSON path of the field and JSON kinds, not Go types.
func explainJSON(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		why := fmt.Sprintf("want %s, got %s", jsonKind(te.Type), te.Value)
		if r, ok := outOfRange(te); ok {
			why = r
		}
		if te.Field == "" {
			return errors.New(why)
		}
		return fmt.Errorf("field %q: %s", te.Field, why)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, se)
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("empty input: want a JSON value")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated JSON: %w", err)
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return fmt.Errorf("unknown field %s", strings.TrimPrefix(msg, "json: unknown field "))
	}
	return err
}

// outOfRange explains a whole number too large (or too small) for the
// integer field it is decoded into, which encoding/json reports as a
// number that is not of the field's type.
func outOfRange(te *json.UnmarshalTypeError) (string, bool) {
	lit, ok := strings.CutPrefix(te.Value, "number ")
	if !ok || te.Type == nil || strings.ContainsAny(lit, ".eE") {
		return "", false
	}
	negative := strings.HasPrefix(lit, "-")
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := te.Type.Bits()
		if negative {
			return fmt.Sprintf("%s is out of range: at least %d", lit, int64(-1)<<(bits-1)), true
		}
		return fmt.Sprintf("%s is out of range: at most %d", lit, uint64(1)<<(bits-1)-1), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if negative {
			return fmt.Sprintf("%s is negative", lit), true
		}
		return fmt.Sprintf("%s is out of range: at most %d", lit, uint64(1)<<te.Type.Bits()-1), true
	}
	return "", false
}

// jsonKind names the JSON kind a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	if k, ok := reflect.Zero(t).Interface().(interface{ JSONKind() string }); ok {
		return k.JSONKind()
	}
	if t.Kind() == reflect.Pointer {
		return jsonKind(t.Elem())
	}
	if k, ok := jsonKinds[t.Kind()]; ok {
		return k
	}
	return "a value"
}

// jsonKinds names the JSON kind each Go kind is decoded from.
var jsonKinds = map[reflect.Kind]string{
	reflect.Bool: "true or false",
	reflect.Int:  "an integer", reflect.Int8: "an integer", reflect.Int16: "an integer",
	reflect.Int32: "an integer", reflect.Int64: "an integer",
	reflect.Uint: "a non-negative integer", reflect.Uint8: "a non-negative integer",
	reflect.Uint16: "a non-negative integer", reflect.Uint32: "a non-negative integer",
	reflect.Uint64:  "a non-negative integer",
	reflect.Float32: "a number", reflect.Float64: "a number",
	reflect.String: "a string",
	reflect.Slice:  "an array", reflect.Array: "an array",
	reflect.Map: "an object", reflect.Struct: "an object",
}

func truncateJSON(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
