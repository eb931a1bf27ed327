package sink

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPlan: the restore's plan (tla/BarrierSink.tla's Restore) commits
// the pre-committed transactions of complete snapshots, aborts every
// other open or pre-committed one, and reports a complete snapshot with
// neither as lost. The Driver's and the stores' tests, on SQLite and a
// real PostgreSQL, are in sinkdb.
func TestPlan(t *testing.T) {
	r := plan(Txns{Open: []int{5}, Prepared: []int{3, 4}, Committed: []int{1}}, []int{1, 2, 3})
	assert.Equal(t, Recovery{Committed: []int{3}, Aborted: []int{4, 5}, Lost: []int{2}}, r)
}

// TestTraceNil: a Driver without a trace records nothing and a nil
// *Trace's steps do nothing.
func TestTraceNil(t *testing.T) {
	var tr *Trace
	tr.take(Record{I: 1})
	tr.preCommit(1)
	tr.complete(1)
	tr.committed(1, false)
	tr.start(nil, Recovery{}, 1)
	assert.Nil(t, tr)
}
