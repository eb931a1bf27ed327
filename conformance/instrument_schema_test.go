package conformance

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/instrument"
)

// TestInstrumentSchema: what the instrument package writes, a node's own
// log and a file every node writes into, is valid under
// traces/outsider.schema.json.
func TestInstrumentSchema(t *testing.T) {
	header, later := compileOutsiderSchema(t)
	cfg := instrument.Config{Run: "r", Procs: []string{"N1", "N2"}, InitBal: map[string]int64{"N1": 10, "N2": 10}}
	var own, shared bytes.Buffer
	n1, err := instrument.NewNode(&own, cfg, "N1")
	require.NoError(t, err)
	all, err := instrument.New(&shared, cfg)
	require.NoError(t, err)
	for _, r := range []*instrument.Recorder{n1, all.For("N1")} {
		r.Send("N2", 7, 3)
		r.Recv("N2", "m", 2)
		r.RecordState(0, 9)
		r.MarkerSent("N2", 0)
		r.RecordChannelMessage(0, "N2", "m2", 4)
		r.MarkerReceived("N2", 0)
		r.Report(0)
		require.NoError(t, r.Err())
	}
	require.NoError(t, validateOutsider(header, later, own.Bytes()), own.String())
	require.NoError(t, validateOutsider(header, later, shared.Bytes()), shared.String())
	require.Error(t, validateOutsider(header, later, append(own.Bytes(), `{"ev":"send","to":"N2"}`+"\n"...)), "a send without its amount")
}
