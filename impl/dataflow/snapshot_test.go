package dataflow

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sink's recorded output (Counts, a prefix of the sink's log shared
// with it) is what the sink had received when it recorded, and stays so
// while the sink goes on receiving, and while a cluster restored from it
// goes on; the restored sink starts from those counts and ends with every
// record once.
func TestSinkCountsStayAsRecorded(t *testing.T) {
	g := diamond(t, Aligned, 5, 4)
	c := NewCluster(g, nil)
	for range 2 {
		must(t)(c.Nodes[0].Emit())
	}
	for range 2 {
		must(t)(c.Take(s1x, ActProcess))
		must(t)(c.Take(xk, ActProcess))
	}
	must(t)(c.Nodes[0].Inject())
	must(t)(c.Nodes[1].Inject())
	c.Drain()
	require.True(t, c.Complete())
	want := map[Key]int{{Src: 0, I: 1}: 1, {Src: 0, I: 2}: 1}
	s, err := c.Snapshot()
	require.NoError(t, err)
	out := s.Parts[3].Out
	assert.Equal(t, want, out.Map(), "the sink recorded the two records it had received")
	assert.Len(t, c.Sink().Output(), 10, "the sink went on to receive every record")
	assert.Equal(t, want, out.Map(), "the recorded counts did not follow the sink")

	r, err := RestoreCluster(g, s, nil)
	require.NoError(t, err)
	assert.Equal(t, want, r.Sink().Output(), "the restored sink starts from the recorded counts")
	r.Drain()
	got := r.Sink().Output()
	assert.Len(t, got, 10)
	for k, n := range got {
		assert.Equal(t, 1, n, "record %v reached the restored sink %d times", k, n)
	}
	assert.Equal(t, want, out.Map(), "the restored run did not change the snapshot")
	assert.Empty(t, s.Parts[2].Out.Map(), "an operator records no output")
}
