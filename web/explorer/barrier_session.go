package explorer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/markerwave/markerwave/conformance"
	"github.com/markerwave/markerwave/conformance/export"
	"github.com/markerwave/markerwave/model/barrier"
	"github.com/markerwave/markerwave/spec"
)

// BarrierSession is one run of a barrier model in the page: the scenario,
// the specification, and the states the schedule reached. Every step is
// one barrier.Next enables, so an action the model gains appears here
// with no change to the page (BarrierToken names it generically).
type BarrierSession struct {
	sc  BarrierScenario
	cfg *barrier.Config
	// pos is the positive specification of cfg's family on the same
	// constants: what a broken variant's steps are compared with, to name
	// the rule it drops (barrier_why.go).
	pos *barrier.Config
	// the run: states[0] is Init, states[i] after step i (barrier.Next's
	// steps)
	walk[barrier.Step, *barrier.State]
}

// NewBarrierScenario starts barrier scenario id under specification v,
// or under the scenario's own for v "".
func NewBarrierScenario(id string, v barrier.Variant) (*BarrierSession, error) {
	sc, ok := barrierScenario(id)
	if !ok {
		return nil, fmt.Errorf("no barrier scenario %q", id)
	}
	if v == "" {
		v = sc.Variant
	}
	cfg, err := barrierConfig(sc, v)
	if err != nil {
		return nil, err
	}
	pos, err := barrierConfig(sc, positive(v))
	if err != nil {
		return nil, err
	}
	next := func(st *barrier.State) []barrier.Step { return barrier.Next(cfg, st) }
	token := func(t barrier.Step) string { return BarrierToken(t.Action) }
	after := func(t barrier.Step) *barrier.State { return t.State }
	return &BarrierSession{sc: sc, cfg: cfg, pos: pos, walk: newWalk(barrier.Init(cfg), next, token, after)}, nil
}

// BarrierToken names an action instance for a schedule, the same under
// every specification of the model:
//
//	E<n>  Emit at source index n       I<n>  InjectV at source n
//	P<e>  ProcessV off edge index e    B<e>  RecvBarrierV off edge e
//	T<n>  TimeoutV at node index n     O<n>  TimeoutOutV at node n
//	R     Restore
//
// Nodes and edges are indexed as barrier.Config orders them (sources,
// operators, sink; edges by their ends' names). An action the page does
// not know is K<kind>n<node>e<edge>.
func BarrierToken(a barrier.Action) string {
	switch a.Kind {
	case barrier.ActEmit:
		return fmt.Sprintf("E%d", a.Node)
	case barrier.ActInject:
		return fmt.Sprintf("I%d", a.Node)
	case barrier.ActProcess:
		return fmt.Sprintf("P%d", a.Edge)
	case barrier.ActRecvBarrier:
		return fmt.Sprintf("B%d", a.Edge)
	case barrier.ActTimeout:
		return fmt.Sprintf("T%d", a.Node)
	case barrier.ActTimeoutOut:
		return fmt.Sprintf("O%d", a.Node)
	case barrier.ActRestore:
		return "R"
	}
	return fmt.Sprintf("K%dn%de%d", a.Kind, a.Node, a.Edge)
}

// Take takes the enabled instance named by token, or says why it cannot:
// the false conjunct of the action, quoted from the spec
// (barrier.NotEnabled), or that no action has that name.
func (s *BarrierSession) Take(token string) error {
	if ok, err := s.takeToken(token); ok || err != nil {
		return err
	}
	return fmt.Errorf("step %d, %s: %s", len(s.steps)+1, token, s.refusal(token))
}

// refusal says why the instance token names is not enabled now.
func (s *BarrierSession) refusal(token string) string {
	for _, a := range s.cfg.Actions() {
		if BarrierToken(a) != token {
			continue
		}
		_, err := a.Apply(s.cfg, s.state())
		var ne *barrier.NotEnabled
		if errors.As(err, &ne) {
			return fmt.Sprintf("not enabled in %s: %s", s.cfg.Variant, ne.Error())
		}
	}
	return fmt.Sprintf("no action of %s is named so (enabled: %s)", s.cfg.Variant, s.enabledTokens())
}

// Replay takes every step of schedule in order (dot-separated tokens),
// stopping at the first that cannot be taken.
func (s *BarrierSession) Replay(schedule string) error { return s.replay(schedule, s.Take) }

// Trace is the run so far as a barrier trace: one event per step
// (conformance.BarrierModelEvent, the audit's inverse), the graph in the
// header, drained if the run ended with every buffer empty and every
// budget emitted.
func (s *BarrierSession) Trace() *spec.BarrierTrace {
	tr := &spec.BarrierTrace{Header: spec.BarrierHeader{Format: spec.BarrierTraceFormat, Graph: barrierGraph(s.cfg, s.cfg.Variant),
		Drained: barrier.Terminated(s.cfg, s.state()),
		Source:  "markerwave explorer page (model/barrier, " + string(s.cfg.Variant) + ", " + s.sc.Model + ")"}}
	for i, t := range s.steps {
		tr.Events = append(tr.Events, conformance.BarrierModelEvent(s.cfg, s.states[i], t.Action, t.State))
		tr.Lines = append(tr.Lines, i+2)
	}
	return tr
}

// TraceJSONL is Trace in the barrier trace file format, for download
// and for the page's audit.
func (s *BarrierSession) TraceJSONL() (string, error) {
	tr := s.Trace()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	if err := enc.Encode(tr.Header); err != nil {
		return "", err
	}
	for _, ev := range tr.Events {
		if err := enc.Encode(ev); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// Diagram draws the run so far as markerwave export --diagram draws a
// barrier trace (export.BarrierDiagram: the blocked inputs shaded, the
// switch a diamond, the records persisted as channel state thick), with
// the diagram's notes; "" before the first step.
func (s *BarrierSession) Diagram() (string, []string, error) {
	if len(s.steps) == 0 {
		return "", nil, nil
	}
	var b bytes.Buffer
	_, notes, err := export.BarrierDiagram(s.Trace(), &b, export.SVG)
	return b.String(), notes, err
}
