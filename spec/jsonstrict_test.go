package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeStrict(t *testing.T) {
	type node struct {
		ID   string `json:"id"`
		Port uint16 `json:"port"`
	}
	type config struct {
		Nodes []node `json:"nodes"`
		Total int64  `json:"total"`
	}
	var c config
	require.NoError(t, DecodeStrict([]byte(`{"nodes": [{"id": "P1", "port": 7000}], "total": 5}`+"\n"), &c))
	assert.Equal(t, config{Nodes: []node{{"P1", 7000}}, Total: 5}, c)

	for _, tc := range []struct{ in, want string }{
		{`{"nodes": {"id": "P1"}}`, `field "nodes": want an array, got object`},
		{`{"nodes": [{"id": "P1", "port": "x"}]}`, `field "nodes.port": want a non-negative integer, got string`},
		{`{"nodes": [{"id": "P1", "port": 70000}]}`, `field "nodes.port": 70000 is out of range: at most 65535`},
		{`{"nodes": [{"id": "P1", "port": -1}]}`, `field "nodes.port": -1 is negative`},
		{`{"nodes": [{"id": "P1", "port": 1.5}]}`, `field "nodes.port": want a non-negative integer, got number 1.5`},
		{`{"total": 10000000000000000000}`, `field "total": 10000000000000000000 is out of range: at most 9223372036854775807`},
		{`{"total": -10000000000000000000}`, `field "total": -10000000000000000000 is out of range: at least -9223372036854775808`},
		{`{"total": 1e30}`, `field "total": want an integer, got number 1e30`},
		{`[1]`, `want an object, got array`},
		{`{"nodes": [], "color": 1}`, `unknown field "color"`},
		{`{"total": 1} {"total": 2}`, `trailing data after the JSON value: {"total": 2}`},
		{`{"total": 1} ]`, `trailing data after the JSON value`},
		{``, `empty input`},
		{`{"total": `, `truncated JSON`},
		{`{"total" 1}`, `malformed JSON at byte`},
	} {
		err := DecodeStrict([]byte(tc.in), new(config))
		if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.want, tc.in)
			assert.NotContains(t, err.Error(), "Go value", tc.in)
			assert.NotContains(t, err.Error(), "struct", tc.in)
		}
	}
}

// DecodeStrict refuses, for every format, what encoding/json reads
// without a word: a key given twice (it keeps the last), a key that
// matches a field only case-insensitively, bytes that are not UTF-8 and
// half a surrogate pair (both read as U+FFFD). Fields promoted from an
// embedded struct are fields; a type that reads itself
// (json.Unmarshaler) is left to its UnmarshalJSON.
func TestDecodeStrictKeysExact(t *testing.T) {
	type inner struct {
		Port uint16 `json:"port"`
	}
	type outer struct {
		inner
		ID   string            `json:"id"`
		Tags map[string]string `json:"tags"`
		Rec  *RecordedSnapshot `json:"rec"`
	}
	var o outer
	require.NoError(t, DecodeStrict([]byte(`{"id":"P1","port":7,"tags":{"a":"x"}}`), &o))
	assert.Equal(t, uint16(7), o.Port)
	for _, tc := range []struct{ in, want string }{
		{`{"id":"P1","id":"P2"}`, `field "id": given twice`},
		{`{"tags":{"a":"x","a":"y"}}`, `field "tags.a": given twice`},
		{`{"ID":"P1"}`, `unknown field "ID": keys are case-sensitive, the field is "id"`},
		{`{"Port":7}`, `unknown field "Port": keys are case-sensitive, the field is "port"`},
		{"{\"id\":\"P\xff1\"}", `field "id": invalid UTF-8: byte 0xff at byte 9`},
		{`{"id":"P\ud8001"}`, `field "id": \ud800 is half a UTF-16 surrogate pair`},
		{`{"rec":{"snap":1,"snap":2}}`, `given twice`},
	} {
		err := DecodeStrict([]byte(tc.in), new(outer))
		if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.want, tc.in)
		}
	}
	// Counts are the outsider format's to bound: a uint64 of another
	// format may be as large as the type allows.
	var big struct {
		N uint64 `json:"n"`
	}
	require.NoError(t, DecodeStrict([]byte(`{"n":18446744073709551615}`), &big))
	assert.Equal(t, uint64(1<<64-1), big.N)
}
