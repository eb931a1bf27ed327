package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/markerwave/markerwave/impl/dataflow"
	"github.com/markerwave/markerwave/impl/dataflow/run"
	"github.com/markerwave/markerwave/impl/dataflow/sink"
	"github.com/markerwave/markerwave/impl/dataflow/sink/sinkdb"
)

// flowSink is flow's external sink (issue #19): every protocol's runs
// write their results through the two-phase-commit sink into one
// database, a job per protocol: SQLite at DIR/sink.db with --out, a
// temporary SQLite file without (removed after), or the PostgreSQL of
// --sink-url. After the restored run flow queries the rows back.
type flowSink struct {
	url      string // the store's URL (a file for SQLite)
	tmp      string // the temporary directory to remove, if any
	name     string // the store's name: which database
	recovery map[dataflow.Mode]string
	dir      string                        // --out: where the sink traces go ("" : none)
	traces   map[dataflow.Mode]*sink.Trace // each protocol's sink trace, its runs' drivers'
}

// openFlowSink picks flow's database and checks, before any run, that it
// opens, has the sink's tables in their shape (or none) and holds no
// output of flow's jobs yet (it would be there twice): each a bad input.
func openFlowSink(o flowOptions) (*flowSink, error) {
	s := &flowSink{url: o.sinkURL, recovery: map[dataflow.Mode]string{}, dir: o.out, traces: map[dataflow.Mode]*sink.Trace{}}
	switch {
	case s.url != "":
	case o.out != "":
		s.url = filepath.Join(o.out, "sink.db")
	default:
		dir, err := os.MkdirTemp("", "markerwave-flow-")
		if err != nil {
			return nil, err
		}
		s.tmp, s.url = dir, filepath.Join(dir, "sink.db")
	}
	for _, mode := range flowModes {
		if err := s.check(mode); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// check opens mode's job in the database and checks it holds nothing.
func (s *flowSink) check(mode dataflow.Mode) error {
	st, err := s.open(mode)
	if err != nil {
		return err
	}
	defer st.Close()
	s.name = st.Name()
	t, err := st.Pending(context.Background())
	if err != nil {
		return err
	}
	if len(t.Committed)+len(t.Prepared) > 0 {
		return fmt.Errorf("--sink-url: %s already holds output of job %s (snapshots %v committed, %v pre-committed): a run never writes over another's; clear it or use another database", st.Name(), job(mode), t.Committed, t.Prepared)
	}
	return nil
}

// job is mode's job name in the database: flow_aligned and so on.
func job(mode dataflow.Mode) string {
	return "flow_" + strings.ReplaceAll(mode.String(), "-", "_")
}

// open opens the store for mode's job (a sink process starting).
func (s *flowSink) open(mode dataflow.Mode) (sink.Store, error) {
	return sinkdb.Open(context.Background(), s.url, sinkdb.Config{Job: job(mode)})
}

// driver starts a sink for g's protocol's job after a restore from the
// latest of complete (none: the run's start): recovery, then the next
// transaction. With --out it writes the protocol's sink trace.
func (s *flowSink) driver(g *dataflow.Graph, complete []int) (*sink.Driver, sink.Recovery, error) {
	st, err := s.open(g.Mode)
	if err != nil {
		return nil, sink.Recovery{}, err
	}
	d := sink.NewDriver(context.Background(), st, sink.ExactlyOnce, 0)
	d.SetTrace(s.traceOf(g))
	rec, err := d.Start(complete)
	if err != nil {
		st.Close()
		return nil, rec, err
	}
	return d, rec, nil
}

// traceOf is g's protocol's sink trace (nil without --out), one for
// the failing run's driver and the restored run's.
func (s *flowSink) traceOf(g *dataflow.Graph) *sink.Trace {
	if s.dir == "" {
		return nil
	}
	if s.traces[g.Mode] == nil {
		names := make([]string, len(g.Nodes))
		for i, n := range g.Nodes {
			names[i] = n.Name
		}
		s.traces[g.Mode] = sink.NewTrace(names)
	}
	return s.traces[g.Mode]
}

// writeTrace writes mode's sink trace to DIR/MODE-sink.jsonl (with
// --out): the restored run ran to its end, so it claims drained.
func (s *flowSink) writeTrace(mode dataflow.Mode) error {
	t := s.traces[mode]
	if t == nil {
		return nil
	}
	var b bytes.Buffer
	if err := t.Write(&b, true); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, mode.String()+"-sink.jsonl"), b.Bytes(), 0o644)
}

// queried queries mode's job's rows back from the database and checks
// each of total records is there exactly once.
func (s *flowSink) queried(st sink.Store, total int) (string, bool) {
	rows, err := st.Rows(context.Background())
	if err != nil {
		return err.Error(), false
	}
	seen := map[dataflow.Key]int{}
	for _, r := range rows {
		seen[dataflow.Key{Src: r.Src, I: r.I}]++
	}
	if why, ok := exactlyOnceRows(seen, total); !ok {
		return why, false
	}
	return fmt.Sprintf("%s, each once", plural(len(rows), "row")), true
}

// verdict fills row's queried column from the database d wrote to, and
// makes a wrong database the row's failure; a loss d reported is named.
func (s *flowSink) verdict(row *flowRow, d *sink.Driver, total int) {
	var ok bool
	if row.queried, ok = s.queried(d.Store(), total); !ok && row.ok {
		row.ok, row.why = false, "the database: "+row.queried
	}
	if lost := d.Lost(); len(lost) > 0 {
		row.queried += fmt.Sprintf("; LOST snapshots %v (the store aborted them)", lost)
	}
}

// exactlyOnceRows says what is wrong with the rows' counts, if anything.
func exactlyOnceRows(seen map[dataflow.Key]int, total int) (string, bool) {
	if dups := duplicates(seen); len(dups) > 0 {
		return fmt.Sprintf("WRONG: %s twice or more", plural(len(dups), "row")), false
	}
	if len(seen) != total {
		return fmt.Sprintf("WRONG: %d rows of %d records", len(seen), total), false
	}
	return "", true
}

// where says where the rows are, for the table's heading.
func (s *flowSink) where() string {
	if s.tmp != "" {
		return "a temporary SQLite database (--out DIR keeps it as DIR/sink.db)"
	}
	return strings.Replace(strings.Replace(s.name, "sqlite ", "SQLite ", 1), "postgres ", "PostgreSQL ", 1)
}

func (s *flowSink) close() {
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}

// recovered renders what a restore's recovery did.
func recovered(r sink.Recovery) string {
	if len(r.Lost) > 0 {
		return fmt.Sprintf("committed %v, aborted %v, LOST %v (the store aborted them)", r.Committed, r.Aborted, r.Lost)
	}
	return fmt.Sprintf("committed %v, aborted %v", r.Committed, r.Aborted)
}

// completeIDs are the ids of the snapshots res completed.
func completeIDs(res *run.Result) []int {
	ids := make([]int, len(res.Checkpoints))
	for i, cp := range res.Checkpoints {
		ids[i] = cp.Snapshot.ID()
	}
	return ids
}
