package engine

import (
	"errors"
	"testing"

	"github.com/markerwave/markerwave/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counters is a toy specification: a pair (a, b) of counters starting at
// each of inits, each step incrementing a or b while it is below max.
// Its state graph is a grid: (max+1)^2 states, all reachable from (0, 0).
type counters struct {
	max      byte
	inits    [][2]byte
	bad      [2]byte // the invariant "not bad" fails there (when badOn)
	badOn    bool
	live     bool // the final state (max, max) violates the liveness property
	deadlock bool
	fail     error // Expand returns it
}

func (c *counters) Init() ([][]byte, error) {
	var out [][]byte
	for _, s := range c.inits {
		out = append(out, []byte{s[0], s[1]})
	}
	return out, nil
}

func (c *counters) CheckDeadlock() bool { return c.deadlock }

func (c *counters) NewExpander() Expander { return c }

func (c *counters) Expand(enc []byte, emit func([]byte)) (Verdict, error) {
	var v Verdict
	if c.fail != nil {
		return v, c.fail
	}
	a, b := enc[0], enc[1]
	if c.badOn && a == c.bad[0] && b == c.bad[1] {
		v.Invariant = spec.PropConsistentCut
	}
	if c.live && a == c.max && b == c.max {
		v.Live = spec.PropSnapshotsComplete
	}
	if a < c.max {
		emit([]byte{a + 1, b})
	}
	if b < c.max {
		emit([]byte{a, b + 1})
	}
	return v, nil
}

func TestCountsAsTLC(t *testing.T) {
	for _, w := range []int{1, 3} {
		r, err := Run(&counters{max: 9, inits: [][2]byte{{0, 0}}}, Options{Workers: w})
		require.NoError(t, err)
		assert.True(t, r.Passed())
		assert.Equal(t, int64(100), r.Distinct)
		// 1 initial state, then 2 successors per state with a, b < 9, 1 on
		// the two edges, 0 at (9, 9).
		assert.Equal(t, int64(1+2*81+18), r.Generated)
		assert.Equal(t, 19, r.Depth)
		assert.Zero(t, r.Left)
		assert.Equal(t, int64(200), r.StateBytes)
	}
}

func TestInitialDuplicates(t *testing.T) {
	r, err := Run(&counters{max: 2, inits: [][2]byte{{0, 0}, {0, 0}, {2, 2}}}, Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(9), r.Distinct)
	assert.Equal(t, int64(3+2*4+4), r.Generated, "initial states count as generated, duplicates included")
}

func TestShortestPathToViolation(t *testing.T) {
	for _, w := range []int{1, 4} {
		r, err := Run(&counters{max: 9, inits: [][2]byte{{0, 0}}, bad: [2]byte{2, 1}, badOn: true}, Options{Workers: w})
		require.NoError(t, err)
		require.NotNil(t, r.Violation)
		assert.Equal(t, KindInvariant, r.Violation.Kind)
		assert.Equal(t, spec.PropConsistentCut, r.Violation.Property)
		// BFS by levels in emit order: a is incremented first.
		assert.Equal(t, [][]byte{{0, 0}, {1, 0}, {2, 0}, {2, 1}}, r.Violation.Path)
		assert.Equal(t, 4, r.Depth)
		assert.False(t, r.Passed())
	}
}

func TestDeadlockAndLiveness(t *testing.T) {
	r, err := Run(&counters{max: 1, inits: [][2]byte{{0, 0}}, deadlock: true}, Options{})
	require.NoError(t, err)
	require.NotNil(t, r.Violation)
	assert.Equal(t, KindDeadlock, r.Violation.Kind)
	assert.Equal(t, [][]byte{{0, 0}, {1, 0}, {1, 1}}, r.Violation.Path)

	r, err = Run(&counters{max: 1, inits: [][2]byte{{0, 0}}, live: true}, Options{})
	require.NoError(t, err)
	require.NotNil(t, r.Violation)
	assert.Equal(t, KindProperty, r.Violation.Kind)
	assert.Equal(t, spec.PropSnapshotsComplete, r.Violation.Property)
	assert.Equal(t, int64(4), r.Distinct, "a liveness violation is reported after the search completes")
}

func TestBoundsAndErrors(t *testing.T) {
	r, err := Run(&counters{max: 9, inits: [][2]byte{{0, 0}}}, Options{MaxStates: 10})
	require.NoError(t, err)
	assert.Equal(t, StopMaxStates, r.Stop)
	assert.False(t, r.Passed())
	assert.Positive(t, r.Left)

	r, err = Run(&counters{max: 9, inits: [][2]byte{{0, 0}}}, Options{MaxMemory: 30})
	require.NoError(t, err)
	assert.Equal(t, StopMaxMemory, r.Stop)

	stop := make(chan struct{})
	close(stop)
	r, err = Run(&counters{max: 9, inits: [][2]byte{{0, 0}}}, Options{Stop: stop})
	require.NoError(t, err)
	assert.Equal(t, StopCanceled, r.Stop)
	assert.Equal(t, int64(1), r.Left)

	boom := errors.New("boom")
	_, err = Run(&counters{max: 9, inits: [][2]byte{{0, 0}}, fail: boom}, Options{})
	assert.ErrorIs(t, err, boom)
}
