package explorer

import (
	"github.com/markerwave/markerwave/model"
	"github.com/markerwave/markerwave/model/barrier"
)

// Stepper is a session the page steps: a Chandy-Lamport one (Session)
// or a barrier one (BarrierSession). Render is its view for the page
// (View or BarrierView).
type Stepper interface {
	Take(token string) error
	Back() bool
	Random(seed uint64, n int) int
	Replay(schedule string) error
	Render() (any, error)
	TraceJSONL() (string, error)
}

// Render is the session's View.
func (s *Session) Render() (any, error) { return s.View() }

// Render is the session's BarrierView.
func (s *BarrierSession) Render() (any, error) { return s.View() }

// Start starts scenario id, a barrier one (BarrierScenarios) or a
// Chandy-Lamport one (Scenarios), under specification v, or under the
// scenario's own for v "".
func Start(id, v string) (Stepper, error) {
	if _, ok := barrierScenario(id); ok {
		s, err := NewBarrierScenario(id, barrier.Variant(v))
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := NewScenario(id, model.Variant(v))
	if err != nil {
		return nil, err
	}
	return s, nil
}
