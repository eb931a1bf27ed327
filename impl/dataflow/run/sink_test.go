//go:build !race

package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/pipeline"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"github.com/markerwave/markerwave/impl/dataflow/sink/pgtest"
	"github.com/markerwave/markerwave/impl/dataflow/sink/sinkdb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// sinkDB is a database a test's sink writes to: open opens the store
// again (a sink process starting), kill cuts a connection of store st
// from the server's side (PostgreSQL: pg_terminate_backend; nil for
// SQLite, which has no server).
type sinkDB struct {
	open func(t *testing.T) sink.Store
	kill func(t *testing.T, st sink.Store)
}

// sinkDBs are the databases a sink test runs on: SQLite and PostgreSQL,
// under -short SQLite only (the server's start is most of the time;
// make test runs both).
func sinkDBs(*testing.T) map[string]func(t *testing.T) sinkDB {
	ctx := context.Background()
	m := map[string]func(t *testing.T) sinkDB{
		"sqlite": func(t *testing.T) sinkDB {
			path := filepath.Join(t.TempDir(), "out.db")
			return sinkDB{open: func(t *testing.T) sink.Store {
				st, err := sinkdb.OpenSQLite(ctx, path, sinkdb.Config{})
				require.NoError(t, err)
				return st
			}}
		},
		"postgres": func(t *testing.T) sinkDB {
			url := pgtest.Shared(t)
			return sinkDB{open: func(t *testing.T) sink.Store {
				st, err := sinkdb.OpenPostgres(ctx, url, sinkdb.Config{})
				require.NoError(t, err)
				return st
			}, kill: func(t *testing.T, st sink.Store) {
				c, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Errorf("connecting to kill: %v", err)
					return
				}
				defer c.Close(ctx)
				_, err = c.Exec(ctx, "SELECT pg_terminate_backend($1)", int(st.(*sinkdb.Postgres).WriterPID()))
				assert.NoError(t, err)
			}}
		},
	}
	if testing.Short() {
		delete(m, "postgres")
	}
	return m
}

// fault is one attempt's injected failure: after FailAfter records at
// the sink (FailFrom snapshots in), the sink killed right after it
// pre-commits snapshot kill (counted from the attempt's first), or its
// connection terminated by the server after cut; all off: run to the end.
type fault struct {
	failAfter, failFrom, kill int
	cut                       time.Duration
}

func (f fault) String() string {
	return fmt.Sprintf("fail after %d (from %d), kill after pre-commit %d, cut after %v", f.failAfter, f.failFrom, f.kill, f.cut)
}

// sinkCycles runs g to its end through the sink: attempt after attempt,
// each failing as faults says, a restore from the latest complete
// snapshot (Recover with every complete snapshot) after each; it returns
// the store the last attempt wrote with, still open.
func sinkCycles(t *testing.T, run runFunc, g *dataflow.Graph, logics func() []dataflow.Logic, db sinkDB, faults []fault) sink.Store {
	t.Helper()
	ctx := context.Background()
	total := 0
	for _, n := range g.Nodes {
		total += n.Budget
	}
	c := dataflow.NewCluster(g, logics())
	var complete []int
	var latest *dataflow.Snapshot
	for attempt := 0; ; attempt++ {
		f := fault{failAfter: -1}
		if attempt < len(faults) {
			f = faults[attempt]
		}
		st := db.open(t)
		d := sink.NewDriver(ctx, st, sink.ExactlyOnce, 16)
		rec, err := d.Start(complete)
		require.NoError(t, err, "attempt %d: starting the sink", attempt)
		if f.kill > 0 {
			d.KillAfterPreCommit(c.Sink().Snap() + f.kill)
		}
		if f.cut > 0 && db.kill != nil {
			timer := time.AfterFunc(f.cut, func() { db.kill(t, st) })
			defer timer.Stop()
		}
		res, err := run(ctx, c, Options{InjectAt: 0, Every: total / 10, Interval: 5 * time.Millisecond,
			FailAfter: f.failAfter, FailFrom: f.failFrom, Sink: d, Timeout: 30 * time.Second})
		require.NotNil(t, res, "attempt %d: %v", attempt, err)
		for _, cp := range res.Checkpoints {
			complete = append(complete, cp.Snapshot.ID())
			latest = cp.Snapshot
		}
		t.Logf("attempt %d (%v): recovered %+v; %d snapshots completed, failed %v, err %v", attempt, f, rec, len(res.Checkpoints), res.Failed, err)
		if err == nil && !res.Failed {
			return st
		}
		require.True(t, res.Failed || d.Err() != nil, "attempt %d: %v", attempt, err)
		_ = st.Close()
		if latest == nil {
			c = dataflow.NewCluster(g, logics())
			continue
		}
		c, err = dataflow.RestoreCluster(g, latest, logics())
		require.NoError(t, err)
	}
}

// queriedOnce queries the store's output back and checks that it holds
// every record of g's sources exactly once.
func queriedOnce(t *testing.T, g *dataflow.Graph, st sink.Store) {
	t.Helper()
	rows, err := st.Rows(context.Background())
	require.NoError(t, err)
	seen := map[dataflow.Key]int{}
	for _, r := range rows {
		seen[dataflow.Key{Src: r.Src, I: r.I}]++
	}
	for s, n := range g.Nodes {
		for i := 1; i <= n.Budget; i++ {
			if k := seen[dataflow.Key{Src: s, I: i}]; k != 1 {
				t.Errorf("record %d of %s is in %s %d times, not once", i, n.Name, st.Name(), k)
			}
		}
	}
	assert.Len(t, rows, len(seen), "no row of another record")
}

// TestSinkExactlyOnce: both runtimes drive the two-phase-commit sink into
// SQLite and a real PostgreSQL; a failure after a few snapshots, then a
// sink killed between its pre-commit and the commit, each followed by a
// restore: the database, queried back, holds every result exactly once.
func TestSinkExactlyOnce(t *testing.T) {
	runtimes := map[string]runFunc{"memory": Run, "tcp": RunTCP}
	for rname, rt := range runtimes {
		for dname, newDB := range sinkDBs(t) {
			for _, mode := range []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned} {
				if testing.Short() && (rname == "tcp") == (mode == dataflow.Aligned) {
					continue // -short: memory aligned, TCP unaligned
				}
				t.Run(rname+"/"+dname+"/"+mode.String(), func(t *testing.T) {
					g, logics, err := pipeline.Pipeline(2, 120, 4, mode)
					require.NoError(t, err)
					st := sinkCycles(t, rt, g.Successively(), logics, newDB(t),
						[]fault{{failAfter: 30, failFrom: 2}, {failAfter: -1, kill: 2}})
					defer st.Close()
					queriedOnce(t, g, st)
				})
			}
		}
	}
}

// TestSinkAtLeastOnceDuplicates is the comparison: the sink that writes
// straight into the output has, after a failure and a restore, the
// records it wrote after the restored snapshot twice.
func TestSinkAtLeastOnceDuplicates(t *testing.T) {
	ctx := context.Background()
	g, logics, err := pipeline.Pipeline(2, 120, 4, dataflow.Aligned)
	require.NoError(t, err)
	st, err := sinkdb.OpenSQLite(ctx, filepath.Join(t.TempDir(), "alo.db"), sinkdb.Config{})
	require.NoError(t, err)
	defer st.Close()
	d := sink.NewDriver(ctx, st, sink.AtLeastOnce, 1)
	_, err = d.Start(nil)
	require.NoError(t, err)
	c := dataflow.NewCluster(g, logics())
	res, err := Run(ctx, c, Options{InjectAt: 40, FailAfter: 30, Sink: d})
	require.NoError(t, err)
	require.True(t, res.Failed)
	r, err := dataflow.RestoreCluster(g, res.Latest(), logics())
	require.NoError(t, err)
	_, err = d.Start([]int{res.Latest().ID()})
	require.NoError(t, err)
	_, err = Run(ctx, r, Options{InjectAt: -1, FailAfter: -1, Sink: d})
	require.NoError(t, err)
	rows, err := st.Rows(ctx)
	require.NoError(t, err)
	seen := map[dataflow.Key]int{}
	twice := 0
	for _, row := range rows {
		if seen[dataflow.Key{Src: row.Src, I: row.I}]++; seen[dataflow.Key{Src: row.Src, I: row.I}] == 2 {
			twice++
		}
	}
	assert.Len(t, seen, 240, "every record is there")
	assert.GreaterOrEqual(t, twice, 30, "the records written after the snapshot are there twice")
}

// TestSinkNemesis kills the sink at random points across many
// checkpoints (a failure after a random number of records, the sink
// killed right after a random pre-commit, PostgreSQL's session
// terminated by the server at a random time) and then checks, by querying
// the database, that every result is there exactly once. Fixed seeds;
// MARKERWAVE_SINK_NEMESIS=N runs N faults a case (make sink-nemesis).
func TestSinkNemesis(t *testing.T) {
	cycles := 3
	if testing.Short() {
		cycles = 1
	}
	if n, err := strconv.Atoi(os.Getenv("MARKERWAVE_SINK_NEMESIS")); err == nil && n > 0 {
		cycles = n
	}
	runtimes := map[string]runFunc{"memory": Run, "tcp": RunTCP}
	for rname, rt := range runtimes {
		for dname, newDB := range sinkDBs(t) {
			t.Run(rname+"/"+dname, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(19, uint64(len(rname)*7+len(dname))))
				mode := []dataflow.Mode{dataflow.Aligned, dataflow.Unaligned}[rng.IntN(2)]
				budget := 100 + 40*cycles
				g, logics, err := pipeline.Pipeline(2, budget, 4, mode)
				require.NoError(t, err)
				faults := make([]fault, cycles)
				for k := range faults {
					faults[k] = randomFault(rng, dname == "postgres", budget)
				}
				st := sinkCycles(t, rt, g.Successively(), logics, newDB(t), faults)
				defer st.Close()
				queriedOnce(t, g, st)
			})
		}
	}
}

// randomFault draws one attempt's fault: one of a failure after a
// number of records, a kill after a pre-commit, a cut connection.
func randomFault(rng *rand.Rand, cut bool, budget int) fault {
	f := fault{failAfter: -1}
	switch rng.IntN(3) {
	case 0:
		f.failAfter, f.failFrom = 1+rng.IntN(budget/3), rng.IntN(3)
	case 1:
		f.kill = 1 + rng.IntN(4)
	default:
		if !cut {
			f.kill = 1 + rng.IntN(4)
			break
		}
		f.cut = time.Duration(1+rng.IntN(30)) * time.Millisecond
	}
	return f
}
