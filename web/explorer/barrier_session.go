package explorer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

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
	pos    *barrier.Config
	states []*barrier.State // states[0] is Init; states[i] after step i
	steps  []barrier.Step
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
	return &BarrierSession{sc: sc, cfg: cfg, pos: pos, states: []*barrier.State{barrier.Init(cfg)}}, nil
}

// BarrierToken names an action instance for a schedule, the same under
// every specification of the model:
//
//	E<n>  Emit at source index n       I<n>  InjectV at source n
//	P<e>  ProcessV off edge index e    B<e>  RecvBarrierV off edge e
//	T<n>  TimeoutV at node index n     R     Restore
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
	case barrier.ActRestore:
		return "R"
	}
	return fmt.Sprintf("K%dn%de%d", a.Kind, a.Node, a.Edge)
}

// Enabled lists the enabled instances in the current state, in the
// order of the spec's Next.
func (s *BarrierSession) Enabled() []barrier.Step { return barrier.Next(s.cfg, s.state()) }

func (s *BarrierSession) state() *barrier.State { return s.states[len(s.states)-1] }

// Take takes the enabled instance named by token, or says why it cannot:
// the false conjunct of the action, quoted from the spec
// (barrier.NotEnabled), or that no action has that name.
func (s *BarrierSession) Take(token string) error {
	if len(s.steps) >= MaxSteps {
		return fmt.Errorf("the schedule has %d steps, the page's limit", MaxSteps)
	}
	for _, t := range s.Enabled() {
		if BarrierToken(t.Action) == token {
			s.steps = append(s.steps, t)
			s.states = append(s.states, t.State)
			return nil
		}
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

func (s *BarrierSession) enabledTokens() string {
	var ts []string
	for _, t := range s.Enabled() {
		ts = append(ts, BarrierToken(t.Action))
	}
	if len(ts) == 0 {
		return "none"
	}
	return strings.Join(ts, " ")
}

// Replay takes every step of schedule in order (dot-separated tokens),
// stopping at the first that cannot be taken.
func (s *BarrierSession) Replay(schedule string) error {
	if schedule == "" {
		return nil
	}
	for _, tok := range strings.Split(schedule, ".") {
		if err := s.Take(tok); err != nil {
			return err
		}
	}
	return nil
}

// Back undoes the last step; false at the initial state.
func (s *BarrierSession) Back() bool {
	if len(s.steps) == 0 {
		return false
	}
	s.steps = s.steps[:len(s.steps)-1]
	s.states = s.states[:len(s.states)-1]
	return true
}

// Random takes up to n steps, each chosen uniformly among the enabled
// instances by a generator seeded with seed, and stops early where
// nothing is enabled. It returns how many it took.
func (s *BarrierSession) Random(seed uint64, n int) int {
	r := rand.New(rand.NewPCG(seed, uint64(len(s.steps))))
	took := 0
	for ; took < n && len(s.steps) < MaxSteps; took++ {
		ts := s.Enabled()
		if len(ts) == 0 {
			break
		}
		t := ts[r.IntN(len(ts))]
		s.steps = append(s.steps, t)
		s.states = append(s.states, t.State)
	}
	return took
}

// Schedule is the steps taken, as tokens joined by dots.
func (s *BarrierSession) Schedule() string {
	ts := make([]string, len(s.steps))
	for i, t := range s.steps {
		ts[i] = BarrierToken(t.Action)
	}
	return strings.Join(ts, ".")
}

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
