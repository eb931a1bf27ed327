package barrier

import (
	"fmt"
	"io"
	"strings"
)

// Var is one variable of a state rendered as TLA+ (TLC's notation).
type Var struct {
	Name, Value string
}

// Vars renders st's variables in the order of tla/BarrierSnapshots.tla's
// VARIABLES (lines 93-110), then, for an adaptive model, those of
// tla/BarrierAdaptive.tla (lines 56-59).
func Vars(cfg *Config, st *State) []Var {
	vs := []Var{
		{"emitted", cfg.srcFunc(st.Emitted)},
		{"q", cfg.edgeFunc(func(e int) string { return cfg.items(st.Q[e]) })},
		{"cnt", cfg.nonSrcFunc(st.Cnt)},
		{"out", cfg.keyFunc(st.Out)},
		{"bar", cfg.nonSrcStr(func(n int) string { return cfg.edgeSet(st.Bar[n]) })},
		{"recorded", cfg.nodeSet(st.Recorded)},
		{"recOff", cfg.srcFunc(st.RecOff)},
		{"recCnt", cfg.nonSrcFunc(st.RecCnt)},
		{"recOut", cfg.keyFunc(st.RecOut)},
		{"recChan", cfg.edgeFunc(func(e int) string { return fmt.Sprintf("%q", st.RecChan[e].String()) })},
		{"recQ", cfg.edgeFunc(func(e int) string { return cfg.items(st.RecQ[e]) })},
		{"nSent", cfg.edgeFunc(func(e int) string { return fmt.Sprint(st.NSent[e]) })},
		{"nRcvd", cfg.edgeFunc(func(e int) string { return fmt.Sprint(st.NRcvd[e]) })},
		{"cutSent", cfg.edgeFunc(func(e int) string { return fmt.Sprint(st.CutSent[e]) })},
		{"cutRcvd", cfg.edgeFunc(func(e int) string { return fmt.Sprint(st.CutRcvd[e]) })},
		{"pre", fmt.Sprintf("[ok |-> %s, emitted |-> %s, cnt |-> %s, out |-> %s, q |-> %s]", tlaBool(st.Pre.OK),
			cfg.srcFunc(st.Pre.Emitted), cfg.nonSrcFunc(st.Pre.Cnt), cfg.keyFunc(st.Pre.Out),
			cfg.edgeFunc(func(e int) string { return cfg.items(st.Pre.Q[e]) }))},
		{"restored", tlaBool(st.Restored)},
	}
	if !cfg.Variant.Adaptive() {
		return vs
	}
	return append(vs,
		Var{"mode", cfg.record(func(int) bool { return true }, func(n int) string { return fmt.Sprintf("%q", modeType(st.Switched, n).String()) })},
		Var{"reported", cfg.nonSrcStr(func(n int) string { return fmt.Sprintf("%q", st.Reported[n].String()) })},
		Var{"cutAligned", cfg.nonSrcStr(func(n int) string { return tlaBool(st.CutAligned&(1<<n) != 0) })})
}

// WriteTrace prints a counterexample as TLC does: each state's action and
// its variables (after the first state, only those the step changed).
func WriteTrace(w io.Writer, cfg *Config, v *Violation) {
	labels, vars := make([]string, len(v.Trace)), make([][]Var, len(v.Trace))
	for i, s := range v.Trace {
		labels[i], vars[i] = s.Label, Vars(cfg, s.State)
	}
	writeVarTrace(w, labels, vars, v.Stutter)
}

// writeVarTrace prints the states of a counterexample as TLC does, each
// labelled by its action (the first, labelled "", is the initial state).
func writeVarTrace(w io.Writer, labels []string, vars [][]Var, stutter bool) {
	var prev []Var
	for i, vs := range vars {
		label := "<Initial predicate>"
		if i > 0 {
			label = "<" + labels[i] + ">"
		}
		fmt.Fprintf(w, "State %d: %s\n", i+1, label)
		for j, x := range vs {
			if prev == nil || prev[j].Value != x.Value {
				fmt.Fprintf(w, "/\\ %s = %s\n", x.Name, x.Value)
			}
		}
		prev = vs
		fmt.Fprintln(w)
	}
	if stutter {
		fmt.Fprintf(w, "State %d: Stuttering\n", len(vars)+1)
	}
}

func (cfg *Config) item(it Item) string {
	if it.Barrier {
		return `[kind |-> "barrier"]`
	}
	return fmt.Sprintf(`[kind |-> "rec", src |-> %q, i |-> %d, hops |-> %d, eseq |-> %d]`, cfg.Nodes[it.Src], it.I, it.Hops, it.ESeq)
}

func (cfg *Config) items(q []Item) string {
	s := make([]string, len(q))
	for i, it := range q {
		s[i] = cfg.item(it)
	}
	return "<<" + strings.Join(s, ", ") + ">>"
}

// record renders a function over the nodes keep picks as a TLA+ record.
func (cfg *Config) record(keep func(n int) bool, val func(n int) string) string {
	var s []string
	for n, name := range cfg.Nodes {
		if keep(n) {
			s = append(s, name+" |-> "+val(n))
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func (cfg *Config) srcFunc(xs []int) string {
	return cfg.record(func(n int) bool { return cfg.Kind[n] == Source }, func(n int) string { return fmt.Sprint(xs[n]) })
}

func (cfg *Config) nonSrcFunc(xs []int) string {
	return cfg.nonSrcStr(func(n int) string { return fmt.Sprint(xs[n]) })
}

func (cfg *Config) nonSrcStr(val func(n int) string) string {
	return cfg.record(func(n int) bool { return cfg.Kind[n] != Source }, val)
}

func (cfg *Config) edgeFunc(val func(e int) string) string {
	s := make([]string, len(cfg.Edges))
	for e := range cfg.Edges {
		s[e] = cfg.EdgeName(e) + " :> " + val(e)
	}
	return "(" + strings.Join(s, " @@ ") + ")"
}

func (cfg *Config) keyFunc(xs []int) string {
	var s []string
	for n, k := range cfg.Kind {
		if k != Source {
			continue
		}
		for i := 1; i <= cfg.Budget[n]; i++ {
			s = append(s, fmt.Sprintf("<<%q, %d>> :> %d", cfg.Nodes[n], i, xs[cfg.key(n, i)]))
		}
	}
	if len(s) == 0 {
		return "<<>>"
	}
	return "(" + strings.Join(s, " @@ ") + ")"
}

func (cfg *Config) edgeSet(b uint64) string {
	var s []string
	for e := range cfg.Edges {
		if b&(1<<e) != 0 {
			s = append(s, cfg.EdgeName(e))
		}
	}
	return "{" + strings.Join(s, ", ") + "}"
}

func (cfg *Config) nodeSet(b uint64) string {
	var s []string
	for n, name := range cfg.Nodes {
		if b&(1<<n) != 0 {
			s = append(s, fmt.Sprintf("%q", name))
		}
	}
	return "{" + strings.Join(s, ", ") + "}"
}
