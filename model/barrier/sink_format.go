package barrier

import (
	"fmt"
	"io"
	"strings"
)

// SinkVars renders st's variables: those of tla/BarrierSnapshots.tla
// (Vars), then the sink's in the order of tla/BarrierSink.tla's VARIABLES
// (lines 75-83).
func SinkVars(cfg *SinkConfig, st *SinkState) []Var {
	b := cfg.Base
	txns := make([]string, len(st.Txns))
	for i, t := range st.Txns {
		txns[i] = fmt.Sprintf("[ck |-> %d, st |-> %q, recs |-> %s]", t.Ck, t.St, cfg.keySet(t.Recs))
	}
	var lost []string
	for c := 1; c <= cfg.MaxCkpt; c++ {
		if st.ReportedLoss&(1<<c) != 0 {
			lost = append(lost, fmt.Sprint(c))
		}
	}
	return append(Vars(b, st.B),
		Var{"ckpt", fmt.Sprint(st.Ckpt)},
		Var{"done", fmt.Sprint(st.Done)},
		Var{"snap", fmt.Sprintf("[off |-> %s, cnt |-> %s, out |-> %s, q |-> %s, sent |-> %s, rcvd |-> %s]",
			b.srcFunc(st.Snap.Off), b.nonSrcFunc(st.Snap.Cnt), b.keyFunc(st.Snap.Out),
			b.edgeFunc(func(e int) string { return b.items(st.Snap.Q[e]) }),
			b.edgeFunc(func(e int) string { return fmt.Sprint(st.Snap.Sent[e]) }),
			b.edgeFunc(func(e int) string { return fmt.Sprint(st.Snap.Rcvd[e]) }))},
		Var{"txns", "<<" + strings.Join(txns, ", ") + ">>"},
		Var{"store", b.keyFunc(st.Store)},
		Var{"restores", fmt.Sprint(st.Restores)},
		Var{"aborts", fmt.Sprint(st.Aborts)},
		Var{"reportedLoss", "{" + strings.Join(lost, ", ") + "}"})
}

// WriteSinkTrace prints a counterexample of a sink model as TLC does.
func WriteSinkTrace(w io.Writer, cfg *SinkConfig, v *SinkViolation) {
	labels, vars := make([]string, len(v.Trace)), make([][]Var, len(v.Trace))
	for i, s := range v.Trace {
		labels[i], vars[i] = s.Label, SinkVars(cfg, s.State)
	}
	writeVarTrace(w, labels, vars, v.Stutter)
}

// keySet renders a set of Key indexes as TLA+ writes it.
func (cfg *SinkConfig) keySet(r uint64) string {
	var s []string
	for src, k := range cfg.Base.Kind {
		if k != Source {
			continue
		}
		for i := 1; i <= cfg.Base.Budget[src]; i++ {
			if r&(1<<cfg.Base.key(src, i)) != 0 {
				s = append(s, fmt.Sprintf("<<%q, %d>>", cfg.Base.Nodes[src], i))
			}
		}
	}
	return "{" + strings.Join(s, ", ") + "}"
}
