package model

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// Printing states as TLC does: each variable as /\ name = value, values in
// TLA+ syntax. A function whose domain is 1..n prints as a tuple (as TLC
// prints [Snap -> ...] when Snap = 1..n); other functions print as
// (k1 :> v1 @@ k2 :> v2).

// VarNames lists the spec's variables in declaration order (line 82).
var VarNames = []string{"proc", "chan", "nSent", "got", "recorded", "recProc", "recChan", "recMsgs", "cutSent", "cutGot", "pre", "post"}

// FaultVarNames lists the variables tla/ChandyLamportFaults.tla adds, in
// declaration order (line 42).
var FaultVarNames = []string{"alive", "suspected", "abortedBy", "crashes", "inc", "base", "restoredFrom"}

// varNames are the model's variables: VarNames, then FaultVarNames for the
// faults specifications.
func varNames(cfg *Config) []string {
	if cfg.Faults() {
		return append(slices.Clip(VarNames), FaultVarNames...)
	}
	return VarNames
}

// FormatVars renders every variable of st as TLA+, in VarNames order
// (then FaultVarNames order for the faults specifications).
func FormatVars(cfg *Config, st *State) []string {
	t := newTLAFormat(cfg)
	vars := t.vars(st)
	if !cfg.Faults() {
		return vars
	}
	return append(vars, t.faultVars(st)...)
}

// tlaFormat renders values of cfg's model as TLC prints them.
type tlaFormat struct {
	cfg *Config
	// snapTuple: Snap is 1..n, so a function on it prints as a tuple.
	snapTuple bool
}

func newTLAFormat(cfg *Config) tlaFormat {
	t := tlaFormat{cfg: cfg, snapTuple: true}
	for i, s := range cfg.Snap {
		if s != spec.SnapID(i+1) {
			t.snapTuple = false
		}
	}
	return t
}

// vars renders the variables of tla/ChandyLamport.tla (VarNames).
func (t tlaFormat) vars(st *State) []string {
	return []string{
		t.procFn(func(p int) string { return local(st.Proc[p]) }),
		t.chanFn(func(c int) string { return t.msgs(st.Chan[c]) }),
		t.chanFn(func(c int) string { return strconv.FormatUint(st.NSent[c], 10) }),
		t.chanFn(func(c int) string { return nats(st.Got[c]) }),
		t.snapFn(func(s int) string { return t.set(st.Recorded[s]) }),
		t.snapFn(func(s int) string { return t.procFn(func(p int) string { return local(st.RecProc[s][p]) }) }),
		t.snapFn(func(s int) string {
			return t.chanFn(func(c int) string { return strconv.Quote(st.RecChan[s][c].String()) })
		}),
		t.snapFn(func(s int) string { return t.chanFn(func(c int) string { return appSeq(st.RecMsgs[s][c]) }) }),
		t.snapFn(func(s int) string {
			return t.chanFn(func(c int) string { return strconv.FormatUint(st.CutSent[s][c], 10) })
		}),
		t.snapFn(func(s int) string { return t.chanFn(func(c int) string { return nats(st.CutGot[s][c]) }) }),
		t.snapFn(func(s int) string { return t.shadow(st.Pre[s]) }),
		t.snapFn(func(s int) string { return t.shadow(st.Post[s]) }),
	}
}

// faultVars renders the variables tla/ChandyLamportFaults.tla adds
// (FaultVarNames).
func (t tlaFormat) faultVars(st *State) []string {
	return []string{
		t.set(st.Alive),
		t.set(st.Suspected),
		t.snapFn(func(s int) string { return t.set(st.AbortedBy[s]) }),
		strconv.Itoa(st.Crashes),
		strconv.Itoa(st.Inc),
		t.shadow(st.Base),
		strconv.Quote(st.RestoredFrom.String()),
	}
}

// procFn renders a function on Proc: ("P1" :> v1 @@ ...).
func (t tlaFormat) procFn(f func(p int) string) string {
	parts := make([]string, t.cfg.NumProcs())
	for p, id := range t.cfg.Topo.Procs {
		parts[p] = strconv.Quote(string(id)) + " :> " + f(p)
	}
	return "(" + strings.Join(parts, " @@ ") + ")"
}

// chanFn renders a function on Chan: (<<"P1", "P2">> :> v @@ ...).
func (t tlaFormat) chanFn(f func(c int) string) string {
	if t.cfg.NumChans() == 0 {
		return "<<>>"
	}
	parts := make([]string, t.cfg.NumChans())
	for c, ch := range t.cfg.Topo.Chans {
		parts[c] = fmt.Sprintf("<<%q, %q>> :> %s", string(ch.From), string(ch.To), f(c))
	}
	return "(" + strings.Join(parts, " @@ ") + ")"
}

// snapFn renders a function on Snap: a tuple if Snap is 1..n, else
// (1 :> v @@ ...).
func (t tlaFormat) snapFn(f func(s int) string) string {
	parts := make([]string, t.cfg.NumSnaps())
	for s, id := range t.cfg.Snap {
		if t.snapTuple {
			parts[s] = f(s)
		} else {
			parts[s] = fmt.Sprintf("%d :> %s", id, f(s))
		}
	}
	if t.snapTuple {
		return "<<" + strings.Join(parts, ", ") + ">>"
	}
	if len(parts) == 0 {
		return "<<>>"
	}
	return "(" + strings.Join(parts, " @@ ") + ")"
}

// set renders a set of processes: {"P1", ...}.
func (t tlaFormat) set(ps ProcSet) string {
	var ids []string
	for p, id := range t.cfg.Topo.Procs {
		if ps.Has(p) {
			ids = append(ids, strconv.Quote(string(id)))
		}
	}
	return "{" + strings.Join(ids, ", ") + "}"
}

// msgs renders a channel's messages, app messages and markers.
func (t tlaFormat) msgs(ms []Msg) string {
	return seq(len(ms), func(i int) string {
		if ms[i].Kind == KindMarker {
			return fmt.Sprintf("[kind |-> \"marker\", snap |-> %d]", t.cfg.Snap[ms[i].Snap])
		}
		return app(ms[i].AppMsg)
	})
}

// shadow renders a Shadow: [ok |-> .., proc |-> .., chan |-> ..].
func (t tlaFormat) shadow(sh Shadow) string {
	return fmt.Sprintf("[ok |-> %s, proc |-> %s, chan |-> %s]", strings.ToUpper(strconv.FormatBool(sh.OK)),
		t.procFn(func(p int) string { return local(sh.Proc[p]) }),
		t.chanFn(func(c int) string { return appSeq(sh.Chan[c]) }))
}

func local(l spec.LocalState) string {
	return fmt.Sprintf("[bal |-> %d, sent |-> %d, rcvd |-> %d]", l.Bal, l.Sent, l.Rcvd)
}

func app(m spec.AppMsg) string {
	return fmt.Sprintf("[kind |-> \"app\", amt |-> %d, seq |-> %d]", m.Amt, m.Seq)
}

// seq renders a sequence of n elements: <<f(0), ...>>.
func seq(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return "<<" + strings.Join(parts, ", ") + ">>"
}

func nats(g []uint64) string {
	return seq(len(g), func(i int) string { return strconv.FormatUint(g[i], 10) })
}

func appSeq(ms []spec.AppMsg) string { return seq(len(ms), func(i int) string { return app(ms[i]) }) }

// FormatState renders st as TLC prints a state: one /\ var = value line
// per variable.
func FormatState(cfg *Config, st *State) string {
	var b strings.Builder
	names := varNames(cfg)
	for i, v := range FormatVars(cfg, st) {
		fmt.Fprintf(&b, "/\\ %s = %s\n", names[i], v)
	}
	return b.String()
}

// Var is a variable of the spec and its value in TLA+ syntax.
type Var struct {
	Name  string
	Value string
}

// ChangedVars lists for each state of a trace the variables that differ
// from the previous state's (every variable for the first state), in
// VarNames order, as TLC prints a counterexample.
func ChangedVars(cfg *Config, trace []TraceStep) [][]Var {
	out := make([][]Var, len(trace))
	var prev []string
	names := varNames(cfg)
	for i, step := range trace {
		vars := FormatVars(cfg, step.State)
		for j, val := range vars {
			if prev == nil || prev[j] != val {
				out[i] = append(out[i], Var{Name: names[j], Value: val})
			}
		}
		prev = vars
	}
	return out
}

// WriteTrace prints a counterexample as TLC does: numbered states, each
// with the action that led to it; the first state in full, later ones with
// only the variables that changed.
func WriteTrace(w io.Writer, cfg *Config, v *Violation) {
	for i, vars := range ChangedVars(cfg, v.Trace) {
		if i == 0 {
			fmt.Fprintf(w, "State 1: <Initial predicate>\n")
		} else {
			fmt.Fprintf(w, "State %d: <%s>\n", i+1, v.Trace[i].Label)
		}
		for _, x := range vars {
			fmt.Fprintf(w, "/\\ %s = %s\n", x.Name, x.Value)
		}
		fmt.Fprintln(w)
	}
	if v.Stutter {
		fmt.Fprintf(w, "State %d: Stuttering\n", len(v.Trace)+1)
	}
}
