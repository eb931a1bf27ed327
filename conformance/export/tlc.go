package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// SpecFiles are the modules MCTrace.tla needs beside it.
var SpecFiles = []string{"ChandyLamport.tla", "TraceChandyLamport.tla"}

// FindSpecDir locates the repository's tla folder: $MARKERWAVE_TLA_DIR if
// set, else the first tla/ holding TraceChandyLamport.tla in the working
// directory or one of its parents.
func FindSpecDir() (string, error) {
	if d := os.Getenv("MARKERWAVE_TLA_DIR"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "tla", "TraceChandyLamport.tla")); err == nil {
			return filepath.Join(d, "tla"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("export: no tla/TraceChandyLamport.tla in %s or its parents; set MARKERWAVE_TLA_DIR or give --spec-dir", wd)
		}
	}
}

// ExportTLC writes MCTrace.tla and MCTrace.cfg into dir and copies
// ChandyLamport.tla and TraceChandyLamport.tla there from FindSpecDir, so
// that `java -cp tla2tools.jar tlc2.TLC -config MCTrace.cfg MCTrace` run in
// dir validates the trace (see tla/TraceChandyLamport.tla).
func ExportTLC(tr spec.Trace, dir string) error {
	specDir, err := FindSpecDir()
	if err != nil {
		return err
	}
	return ExportTLCFrom(tr, dir, specDir)
}

// ExportTLCFrom is ExportTLC with the spec modules taken from specDir.
//
// The constants: Proc and Chan from the topology; InitBal from the header
// (0 for a process it omits); Amount, the amounts the trace's messages
// carry; Budget, the header's budget where it gives one, else the number
// of sends the process makes in the trace; Snap, the snapshots named by
// the header or the events; Initiator from the header, else from the
// Initiate events; Trace, one record per event.
func ExportTLCFrom(tr spec.Trace, dir, specDir string) error {
	mod, cfg, err := TLCModel(tr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := copySpecModules(specDir, dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "MCTrace.tla"), []byte(mod), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "MCTrace.cfg"), []byte(cfg), 0o644)
}

// copySpecModules copies the spec modules the trace model extends
// (SpecFiles) from specDir into dir.
func copySpecModules(specDir, dir string) error {
	for _, f := range SpecFiles {
		b, err := os.ReadFile(filepath.Join(specDir, f))
		if err != nil {
			return fmt.Errorf("export: spec module: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tlaString renders s as a TLA+ string literal.
func tlaString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(s) + `"`
}

// tlaFunc renders a finite function as (k1 :> v1 @@ k2 :> v2), or <<>>
// for the empty function.
func tlaFunc(keys, vals []string) string {
	if len(keys) == 0 {
		return "<<>>"
	}
	parts := make([]string, len(keys))
	for i := range keys {
		parts[i] = keys[i] + " :> " + vals[i]
	}
	return "(" + strings.Join(parts, " @@ ") + ")"
}

// TLCModel returns the texts of MCTrace.tla and MCTrace.cfg for tr.
func TLCModel(tr spec.Trace) (mod, cfg string, err error) {
	top := tr.Header.Topology
	if top == nil {
		return "", "", fmt.Errorf("export: trace has no topology")
	}
	for _, p := range top.Procs {
		if err := spec.ValidateProcID(p); err != nil {
			return "", "", fmt.Errorf("export: %w", err)
		}
	}
	if err := tlcCanValidate(tr); err != nil {
		return "", "", err
	}
	k := traceConstants(tr)
	var b strings.Builder
	b.WriteString(mcTraceHead)
	writeConstants(&b, top, tr.Header, k)
	writeEvents(&b, tr.Events)
	writeRecorded(&b, top, tr.Recorded)
	fmt.Fprintf(&b, "\n\\* The trace claims a drained run.\nMCDrained == %s\n", tlaBool(tr.Header.Drained))
	b.WriteString("=============================================================================\n")
	return b.String(), mcTraceCfg, nil
}

// tlcCanValidate refuses, by name, a trace that tla/TraceChandyLamport.tla
// cannot validate as the audit does: one with an event of the failure
// handling (tla/ChandyLamportFaults.tla), or one of several incarnations
// (spec.Restore lines). TraceInit is the spec's Init, so a restored
// incarnation, which starts from a snapshot's recorded state, is no
// behaviour of it, and joining the incarnations into one run would make
// TLC reject what the audit accepts (a message of the cut received
// again after the restore).
func tlcCanValidate(tr spec.Trace) error {
	for i, e := range tr.Events {
		if e.Action.Fault() {
			return fmt.Errorf("export: event %d is %s, an action of the failure handling (tla/ChandyLamportFaults.tla); TLC trace validation (tla/TraceChandyLamport.tla) knows the actions of tla/ChandyLamport.tla only: markerwave audit replays runs with failures", i+1, e)
		}
	}
	if n := len(tr.Restores); n > 0 {
		r := tr.Restores[0]
		return fmt.Errorf("export: the trace is a run of %d incarnations (restore %d: Restore(%d) to incarnation %d, before event %d); TLC trace validation (tla/TraceChandyLamport.tla) starts every behaviour from Init, and a restored incarnation starts from a snapshot's recorded state: markerwave audit replays runs with restores, each incarnation from its snapshot",
			n+1, 1, r.Snap, r.Incarnation, r.At+1)
	}
	return nil
}

// mcTraceHead opens MCTrace.tla.
const mcTraceHead = `------------------------------- MODULE MCTrace -------------------------------
(* Generated by markerwave export --tlc from a trace: the model constants   *)
(* of the run and the trace itself, for tla/TraceChandyLamport.tla.  Run in *)
(* this folder:                                                             *)
(*   java -XX:+UseParallelGC -cp tla2tools.jar tlc2.TLC -workers 1          *)
(*        -noGenerateSpecTE -config MCTrace.cfg MCTrace                     *)
EXTENDS TraceChandyLamport, TLC

`

// mcTraceCfg is MCTrace.cfg: the constants, the trace spec, the spec's
// invariants and the trace's own (tla/TraceChandyLamport.tla).
const mcTraceCfg = `\* Generated by markerwave export --tlc: validates the trace in MCTrace.tla
\* against tla/ChandyLamport.tla (see TraceChandyLamport.tla).
CONSTANTS
    Proc      <- MCProc
    Chan      <- MCChan
    InitBal   <- MCInitBal
    Amount    <- MCAmount
    Budget    <- MCBudget
    Snap      <- MCSnap
    Initiator <- MCInitiator
    Trace     <- MCTrace
    Recorded  <- MCRecorded
    Drained   <- MCDrained
INIT TraceInit
NEXT TraceNext
INVARIANTS
    TraceMatched
    TypeOK
    ConsistentCut
    ExactChannelState
    Conservation
    ChandyLamportTheorem
    StableCatalogue
    ReportedConsistentCut
    ReportedExactChannelState
    ReportedConservation
    ReportedRecordedState
    ReportedComplete
    ReportedSnapshotsComplete
POSTCONDITION TraceAccepted
ALIAS TraceAlias
CHECK_DEADLOCK FALSE
`

// constants are the model constants a trace implies beyond its header:
// each process's number of sends (its budget when the header gives
// none), the amounts sent, and every snapshot with its initiator ("" when
// no event or header entry names it).
type constants struct {
	sends   map[spec.ProcID]int
	amounts []int64
	snaps   map[spec.SnapID]spec.ProcID
}

// traceConstants collects the constants of tr from its header, its
// reported snapshots and its events.
func traceConstants(tr spec.Trace) constants {
	k := constants{sends: map[spec.ProcID]int{}, snaps: map[spec.SnapID]spec.ProcID{}}
	amounts := map[int64]bool{}
	for s, p := range tr.Header.Snaps {
		k.snaps[s] = p
	}
	for _, r := range tr.Recorded {
		k.nameSnap(r.Snap, r.Initiator)
	}
	for _, e := range tr.Events {
		k.see(e, amounts)
	}
	k.amounts = slices.Sorted(maps.Keys(amounts))
	return k
}

// see collects the constants event e implies: a send counted, an amount
// sent or received, a snapshot and the initiator an Initiate names, a
// snapshot a marker names.
func (k *constants) see(e spec.Event, amounts map[int64]bool) {
	switch e.Action {
	case spec.SendApp:
		k.sends[e.Proc]++
		fallthrough
	case spec.RecvApp:
		if e.Amount > 0 {
			amounts[e.Amount] = true
		}
	case spec.Initiate:
		if k.snaps[e.Snap] == "" {
			k.snaps[e.Snap] = e.Proc
		}
	case spec.RecvMarker:
		k.nameSnap(e.Snap, "")
	}
}

// nameSnap notes snapshot s with initiator p, unless s is already known.
func (k *constants) nameSnap(s spec.SnapID, p spec.ProcID) {
	if _, ok := k.snaps[s]; !ok {
		k.snaps[s] = p
	}
}

// writeConstants writes MCProc, MCChan, MCInitBal, MCAmount, MCBudget,
// MCSnap and MCInitiator.
func writeConstants(b *strings.Builder, top *spec.Topology, h spec.Header, k constants) {
	var procs, chans, keys, bals, budgets []string
	for _, p := range top.Procs {
		procs = append(procs, tlaString(string(p)))
		keys = append(keys, tlaString(string(p)))
		bals = append(bals, strconv.FormatInt(h.InitBal[p], 10))
		n, ok := h.Budget[p]
		if !ok {
			n = k.sends[p]
		}
		budgets = append(budgets, strconv.Itoa(n))
	}
	for _, c := range top.Chans {
		chans = append(chans, tlaChan(c))
	}
	var as []string
	for _, a := range k.amounts {
		as = append(as, strconv.FormatInt(a, 10))
	}
	fmt.Fprintf(b, "MCProc == {%s}\n", strings.Join(procs, ", "))
	fmt.Fprintf(b, "MCChan == {%s}\n", strings.Join(chans, ", "))
	fmt.Fprintf(b, "MCInitBal == %s\n", tlaFunc(keys, bals))
	fmt.Fprintf(b, "MCAmount == {%s}\n", strings.Join(as, ", "))
	fmt.Fprintf(b, "MCBudget == %s\n", tlaFunc(keys, budgets))
	writeSnaps(b, top, k.snaps)
}

// writeSnaps writes MCSnap and MCInitiator.
func writeSnaps(b *strings.Builder, top *spec.Topology, snaps map[spec.SnapID]spec.ProcID) {
	var sk, sv, unknown []string
	for _, s := range slices.Sorted(maps.Keys(snaps)) {
		sk = append(sk, strconv.FormatUint(uint64(s), 10))
		p := snaps[s]
		if p == "" {
			// No initiator known: any process will do, since no marker of
			// s can be in a channel before Initiate(s); TLC rejects the
			// first event of s.
			p = top.Procs[0]
			unknown = append(unknown, strconv.FormatUint(uint64(s), 10))
		}
		sv = append(sv, tlaString(string(p)))
	}
	fmt.Fprintf(b, "MCSnap == {%s}\n", strings.Join(sk, ", "))
	if len(unknown) > 0 {
		fmt.Fprintf(b, "\\* No Initiate event or header entry names the initiator of snapshot(s) %s.\n", strings.Join(unknown, ", "))
	}
	fmt.Fprintf(b, "MCInitiator == %s\n\n", tlaFunc(sk, sv))
}

// writeEvents writes MCTrace, one record per event in the form
// TraceChandyLamport.tla's constant Trace takes.
func writeEvents(b *strings.Builder, events []spec.Event) {
	fmt.Fprintf(b, "\\* The trace: %d events in causal order.\nMCTrace == <<\n", len(events))
	for k, e := range events {
		from, to := "", ""
		if e.Action != spec.Initiate {
			from, to = string(e.From), string(e.To)
		}
		fmt.Fprintf(b, "  [action |-> %s, pid |-> %s, from |-> %s, to |-> %s, snap |-> %d, amount |-> %d, msg |-> %d, first |-> %s, bal |-> %d, sent |-> %d, rcvd |-> %d]%s\n",
			tlaString(string(e.Action)), tlaString(string(e.Proc)), tlaString(from), tlaString(to), e.Snap, e.Amount, e.Msg,
			tlaBool(e.First), e.After.Bal, e.After.Sent, e.After.Rcvd, sepAfter(k, len(events)))
	}
	b.WriteString("  >>\n\n")
}

// sepAfter is the separator after element k of a TLA+ sequence of n.
func sepAfter(k, n int) string {
	if k == n-1 {
		return ""
	}
	return ","
}

func tlaBool(v bool) string { return strings.ToUpper(strconv.FormatBool(v)) }

func tlaChan(c spec.Channel) string {
	return fmt.Sprintf("<<%s, %s>>", tlaString(string(c.From)), tlaString(string(c.To)))
}

// writeRecorded writes MCRecorded, the snapshots the trace reports, in the
// form TraceChandyLamport.tla's constant Recorded takes.
func writeRecorded(b *strings.Builder, top *spec.Topology, recs []spec.RecordedSnapshot) {
	fmt.Fprintf(b, "\\* The snapshots the implementation reported: %d.\nMCRecorded == <<\n", len(recs))
	for k, r := range recs {
		var pk, pv []string
		for _, p := range top.Procs {
			l := r.Procs[p]
			pk = append(pk, tlaString(string(p)))
			pv = append(pv, fmt.Sprintf("[bal |-> %d, sent |-> %d, rcvd |-> %d]", l.Bal, l.Sent, l.Rcvd))
		}
		var ck, msgs, sent, got []string
		for _, c := range top.Chans {
			ck = append(ck, tlaChan(c))
			var ms []string
			for _, m := range r.Chans[c] {
				ms = append(ms, fmt.Sprintf("[amt |-> %d, seq |-> %d]", m.Amt, m.Seq))
			}
			msgs = append(msgs, "<<"+strings.Join(ms, ", ")+">>")
			sent = append(sent, strconv.FormatUint(r.Cut[c].Sent, 10))
			got = append(got, strconv.FormatUint(r.Cut[c].Got, 10))
		}
		fmt.Fprintf(b, "  [snap |-> %d,\n   procs |-> %s,\n   msgs |-> %s,\n   sent |-> %s,\n   got |-> %s]%s\n",
			r.Snap, tlaFunc(pk, pv), tlaFunc(ck, msgs), tlaFunc(ck, sent), tlaFunc(ck, got), sepAfter(k, len(recs)))
	}
	b.WriteString("  >>\n")
}

// TLCVerdict is what TLC said of an exported trace.
type TLCVerdict struct {
	// Accepted: TLC completed without error and reported the whole trace
	// consumed.
	Accepted bool
	// Events is the trace's length; Consumed how many events TLC matched
	// (Events when accepted, -1 if TLC did not say).
	Events, Consumed int
	// Errors are TLC's "Error: ..." lines.
	Errors []string
	// Violated is the invariant TLC reports violated ("" if none).
	Violated string
	// Output is TLC's whole output; ExitCode its exit status.
	Output   string
	ExitCode int
}

var (
	reConsumed    = regexp.MustCompile(`TraceAccepted: trace NOT accepted; events consumed", (\d+), "of", (\d+)`)
	reFull        = regexp.MustCompile(`"TraceAccepted: trace fully consumed", (\d+), "events"`)
	reError       = regexp.MustCompile(`(?m)^Error: .*$`)
	reViolated    = regexp.MustCompile(`(?m)^Error: Invariant (\w+) is violated`)
	reVerdictLine = regexp.MustCompile(`(?m)^Error: (Invariant \w+ is violated|Postcondition|The following assumption|Assumption|Deadlock|Temporal)`)
)

// RunTLC runs TLC (java -cp jar tlc2.TLC) on the MCTrace model in dir, as
// written by ExportTLC, and returns its verdict. An error means TLC could
// not give one (java missing, a parse error, a crash); a rejected trace is
// a verdict, not an error.
func RunTLC(ctx context.Context, java, jar, dir string) (TLCVerdict, error) {
	meta, err := os.MkdirTemp("", "markerwave-tlc-")
	if err != nil {
		return TLCVerdict{}, err
	}
	defer os.RemoveAll(meta)
	cmd := exec.CommandContext(ctx, java, "-XX:+UseParallelGC", "-cp", jar, "tlc2.TLC",
		"-workers", "1", "-noGenerateSpecTE", "-metadir", meta, "-config", "MCTrace.cfg", "MCTrace")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	v := TLCVerdict{Output: out.String(), Consumed: -1, Events: -1}
	var ee *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &ee):
		v.ExitCode = ee.ExitCode()
	default:
		return v, fmt.Errorf("export: running TLC: %w", runErr)
	}
	if ctx.Err() != nil {
		return v, fmt.Errorf("export: TLC: %w", ctx.Err())
	}
	if v.read() {
		return v, nil
	}
	return v, fmt.Errorf("export: TLC gave no verdict (exit %d):\n%s", v.ExitCode, tail(v.Output, 40))
}

// read reads TLC's verdict in v.Output: the errors it printed, the
// invariant violated, how many of the trace's events it consumed, and
// whether it accepted the trace (exit 0, checking completed, no error).
// It reports whether TLC gave a verdict.
func (v *TLCVerdict) read() bool {
	v.Errors = reError.FindAllString(v.Output, -1)
	if m := reViolated.FindStringSubmatch(v.Output); m != nil {
		v.Violated = m[1]
	}
	if m := reFull.FindStringSubmatch(v.Output); m != nil {
		v.Events, _ = strconv.Atoi(m[1])
	}
	if m := reConsumed.FindStringSubmatch(v.Output); m != nil {
		v.Consumed, _ = strconv.Atoi(m[1])
		v.Events, _ = strconv.Atoi(m[2])
	}
	done := strings.Contains(v.Output, "Model checking completed. No error has been found.")
	if v.ExitCode == 0 && done && v.Events >= 0 && len(v.Errors) == 0 {
		v.Accepted = true
		v.Consumed = v.Events
		return true
	}
	return reVerdictLine.MatchString(v.Output)
}

// tlcProperty names, for each invariant of MCTrace.cfg that is not one of
// the spec's own, the property or check of the audit it decides
// (tla/TraceChandyLamport.tla).
var tlcProperty = map[string]spec.Property{
	"TraceMatched":              spec.CheckEnabled,
	"ReportedConsistentCut":     spec.PropConsistentCut,
	"ReportedExactChannelState": spec.PropExactChannelState,
	"ReportedConservation":      spec.PropConservation,
	"ReportedRecordedState":     spec.CheckRecordedState,
	"ReportedComplete":          spec.CheckCompleteClaim,
	"ReportedSnapshotsComplete": spec.PropSnapshotsComplete,
}

// Property is the property or check by which TLC rejected the trace, in
// the audit's terms: the violated invariant (a trace invariant mapped to
// the property it checks), CheckEnabled when TLC could not consume the
// whole trace, "" when it accepted the trace.
func (v TLCVerdict) Property() spec.Property {
	switch {
	case v.Accepted:
		return ""
	case v.Violated != "":
		if p, ok := tlcProperty[v.Violated]; ok {
			return p
		}
		return spec.Property(v.Violated)
	}
	return spec.CheckEnabled
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
