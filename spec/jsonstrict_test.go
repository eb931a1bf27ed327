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
