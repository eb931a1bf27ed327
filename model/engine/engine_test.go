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

// Fingerprint mode counts as the exact mode, with the frontier spilled to
// disk when it passes its memory budget, and rebuilds the same shortest
// paths from its trace file.
func TestFingerprintMode(t *testing.T) {
	defer func(b int) { batchStates = b }(batchStates)
	batchStates = 16 // several batches a level
	for _, mem := range []int64{0, 64} {
		for _, w := range []int{1, 3} {
			opt := Options{Workers: w, Fingerprint: true, FrontierMemory: mem, TempDir: t.TempDir()}
			r, err := Run(&counters{max: 60, inits: [][2]byte{{0, 0}}}, opt)
			require.NoError(t, err)
			assert.True(t, r.Passed())
			assert.Equal(t, int64(61*61), r.Distinct)
			assert.Equal(t, int64(1+2*60*60+2*60), r.Generated)
			assert.Equal(t, 121, r.Depth)
			assert.True(t, r.Fingerprints)
			assert.InDelta(t, float64(61*61)*float64(2*60*60+2*60+1-61*61)/(1<<64), r.Collision, 1e-25)
			if mem > 0 {
				assert.Positive(t, r.SpilledBytes, "a 64-byte budget spills the frontier")
			} else {
				assert.Zero(t, r.SpilledBytes)
			}

			r, err = Run(&counters{max: 60, inits: [][2]byte{{0, 0}}, bad: [2]byte{40, 30}, badOn: true}, opt)
			require.NoError(t, err)
			require.NotNil(t, r.Violation)
			assert.Equal(t, KindInvariant, r.Violation.Kind)
			require.Len(t, r.Violation.Path, 71)
			for i, st := range r.Violation.Path { // a first, as exact mode's BFS finds
				assert.Equal(t, []byte{byte(min(i, 40)), byte(max(0, i-40))}, st)
			}

			r, err = Run(&counters{max: 3, inits: [][2]byte{{0, 0}}, live: true}, opt)
			require.NoError(t, err)
			require.NotNil(t, r.Violation)
			assert.Equal(t, KindProperty, r.Violation.Kind)
			assert.Equal(t, []byte{3, 3}, r.Violation.Path[len(r.Violation.Path)-1])
		}
	}
}

// The fingerprint set stores what it is given, 0 included, and grows.
func TestFPSet(t *testing.T) {
	var s fpSet
	defer s.free()
	for i := uint64(0); i < 100_000; i++ {
		assert.True(t, s.insert(i*0x9e3779b97f4a7c15))
	}
	for i := uint64(0); i < 100_000; i++ {
		require.True(t, s.contains(i*0x9e3779b97f4a7c15))
		require.False(t, s.insert(i*0x9e3779b97f4a7c15))
	}
	assert.False(t, s.contains(12345))
	assert.True(t, s.contains(1), "0 is stored as 1")
	assert.LessOrEqual(t, s.bytes(), int64(8*100_000*8/3+8*numShards*fpInitSlots))
}
