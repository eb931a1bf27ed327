package tlcmodel

import (
	"sort"
	"strconv"
	"strings"
)

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
		return x.key()
	}
	return "?"
}

// key is the record's valueKey: [k|->key, ...] in field order.
func (r recordV) key() string {
	parts := make([]string, len(r.keys))
	for i, k := range r.keys {
		parts[i] = k + "|->" + valueKey(r.vals[i])
	}
	return "[" + strings.Join(parts, ",") + "]"
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
