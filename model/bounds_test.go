package model

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/spec"
)

func TestExploreProgressCallback(t *testing.T) {
	cfg := loadTLA(t, "MCConcurrent")
	var mu sync.Mutex
	var seen []Stats
	res, err := Explore(cfg, Options{ProgressEvery: 5 * time.Millisecond, Progress: func(s Stats) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}})
	require.NoError(t, err)
	require.True(t, res.Passed())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen, "the search takes longer than 5 ms")
	for i, s := range seen {
		assert.LessOrEqual(t, s.Distinct, res.Distinct)
		assert.LessOrEqual(t, s.Generated, res.Generated)
		if i > 0 {
			assert.GreaterOrEqual(t, s.Generated, seen[i-1].Generated, "counts only grow")
		}
	}
}

// A bound stops the search after the level that passes it, the same way
// whatever the number of workers, and the result says which.
func TestExploreBounds(t *testing.T) {
	cfg := loadTLA(t, "MCConcurrent")
	full, err := Explore(cfg, Options{})
	require.NoError(t, err)
	require.Equal(t, StopDone, full.Stop)

	r1, err := Explore(cfg, Options{MaxStates: 100, Workers: 1})
	require.NoError(t, err)
	r2, err := Explore(cfg, Options{MaxStates: 100, Workers: 3})
	require.NoError(t, err)
	assert.Equal(t, StopMaxStates, r1.Stop)
	assert.False(t, r1.Passed())
	assert.Nil(t, r1.Violation)
	assert.Greater(t, r1.Distinct, int64(100))
	assert.Less(t, r1.Distinct, full.Distinct)
	assert.Positive(t, r1.Left)
	assert.Equal(t, [4]int64{r1.Distinct, r1.Generated, r1.Left, int64(r1.Depth)}, [4]int64{r2.Distinct, r2.Generated, r2.Left, int64(r2.Depth)})

	rm, err := Explore(cfg, Options{MaxMemory: 10_000})
	require.NoError(t, err)
	assert.Equal(t, StopMaxMemory, rm.Stop)
	assert.Greater(t, rm.StateBytes+4*rm.Distinct, int64(10_000))
	assert.Less(t, rm.Distinct, full.Distinct)

	big, err := Explore(cfg, Options{MaxStates: full.Distinct, MaxMemory: full.StateBytes + 4*full.Distinct})
	require.NoError(t, err)
	assert.True(t, big.Passed(), "bounds that are not passed do not stop the search")
	assert.Equal(t, full.Distinct, big.Distinct)
}

func TestExploreStop(t *testing.T) {
	cfg := loadTLA(t, "MCConcurrent")
	stop := make(chan struct{})
	close(stop)
	r, err := Explore(cfg, Options{Stop: stop})
	require.NoError(t, err)
	assert.Equal(t, StopCanceled, r.Stop)
	assert.False(t, r.Passed())
	assert.Equal(t, int64(1), r.Distinct)
	assert.Equal(t, int64(1), r.Left, "the initial state was not explored")
}

// Balances that sum past int64 are refused, naming the constant, instead
// of giving a spurious TypeOK violation.
func TestNewConfigOverflow(t *testing.T) {
	topo, err := spec.NewTopology([]spec.ProcID{"P1", "P2"}, []spec.Channel{{From: "P1", To: "P2"}, {From: "P2", To: "P1"}})
	require.NoError(t, err)
	k := Constants{Topo: topo, InitBal: map[spec.ProcID]int64{"P1": math.MaxInt64, "P2": 1}, Amount: []int64{1},
		Budget: map[spec.ProcID]int{"P1": 1, "P2": 1}, Initiator: map[spec.SnapID]spec.ProcID{1: "P1"}}
	_, err = NewConfig(k, VariantSpec, nil, nil)
	var ce *ConstantError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "InitBal", ce.Constant)
	assert.EqualError(t, err, "model: InitBal sums past 9223372036854775807 (the largest 64-bit integer): the model cannot represent TotalMoney")

	k.InitBal["P1"] = math.MaxInt64 - 1
	_, err = NewConfig(k, VariantSpec, nil, nil)
	require.NoError(t, err, "a sum of exactly MaxInt64 fits")

	k.Budget = map[spec.ProcID]int{"P1": math.MaxInt32, "P2": 1}
	_, err = NewConfig(k, VariantSpec, nil, nil)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Budget", ce.Constant)
}
