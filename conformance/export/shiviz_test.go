package export

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func TestShiVizFormat(t *testing.T) {
	tr := twoBank(t)
	var buf bytes.Buffer
	require.NoError(t, ShiViz(tr, &buf))
	out := buf.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2+2*len(tr.Events))
	assert.Equal(t, ShiVizRegex, lines[0], "line 1: the parser regex")
	assert.Equal(t, "", lines[1], "line 2: no multiple-executions delimiter")
	assert.Equal(t, `P1 {"P1":1}`, lines[2])
	assert.Equal(t, "SendApp(P1, P2, 30) #1 | bal=70 sent=1 rcvd=0", lines[3])
	assert.Equal(t, `P2 {"P1":2,"P2":3}`, lines[12], "P2's first marker: it has seen P1's Initiate")
	assert.Equal(t, "RecvMarker(P1, P2) [snap 1] first | bal=60 sent=1 rcvd=1", lines[13])

	// ShiViz's regex (JavaScript syntax, which Go's regexp also accepts)
	// parses the log back into the trace's events and clocks.
	re := regexp.MustCompile(`(?m)^` + ShiVizRegex + `$`)
	body := strings.Join(lines[2:], "\n") + "\n"
	ms := re.FindAllStringSubmatch(body, -1)
	require.Len(t, ms, len(tr.Events))
	last := map[string]uint64{}
	for k, m := range ms {
		e := tr.Events[k]
		host := m[re.SubexpIndex("host")]
		assert.Equal(t, string(e.Proc), host)
		var clock map[string]uint64
		require.NoError(t, json.Unmarshal([]byte(m[re.SubexpIndex("clock")]), &clock))
		for i, p := range tr.Header.Topology.Procs {
			assert.Equal(t, e.VC[i], clock[string(p)], "event %d clock entry %s", k+1, p)
		}
		assert.Equal(t, last[host]+1, clock[host], "a host's own entry grows by one per event")
		last[host] = clock[host]
		assert.True(t, strings.HasPrefix(m[re.SubexpIndex("event")], e.String()))
	}
}

func TestShiVizRejectsBadClocks(t *testing.T) {
	tr := twoBank(t)
	tr.Events[2].VC = []uint64{1}
	var buf bytes.Buffer
	assert.ErrorContains(t, ShiViz(tr, &buf), "event 3")
	assert.Error(t, ShiViz(spec.Trace{}, &buf))
}
