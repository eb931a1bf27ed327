package explorer

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// walk is what a session remembers of its run: the states reached and the
// steps taken, and how to step on. T is a step of the model (the enabled
// instance taken, with the state it leads to), S a state. Both sessions
// (Session over model, BarrierSession over model/barrier) embed one, so
// taking, undoing, replaying and drawing at random are written once.
type walk[T, S any] struct {
	states []S // states[0] is Init; states[i] after step i
	steps  []T
	// next lists the steps enabled in a state (the model's Next), token
	// names a step as the page writes it, after is the state a step
	// leads to.
	next  func(S) []T
	token func(T) string
	after func(T) S
}

func newWalk[T, S any](init S, next func(S) []T, token func(T) string, after func(T) S) walk[T, S] {
	return walk[T, S]{states: []S{init}, next: next, token: token, after: after}
}

func (w *walk[T, S]) state() S { return w.states[len(w.states)-1] }

// Enabled is every instance enabled in the current state.
func (w *walk[T, S]) Enabled() []T { return w.next(w.state()) }

func (w *walk[T, S]) push(t T) {
	w.steps = append(w.steps, t)
	w.states = append(w.states, w.after(t))
}

// takeToken takes the enabled instance named token: an error at the
// page's limit, false if no enabled instance has that name.
func (w *walk[T, S]) takeToken(token string) (bool, error) {
	if len(w.steps) >= MaxSteps {
		return false, fmt.Errorf("the schedule has %d steps, the page's limit", MaxSteps)
	}
	for _, t := range w.Enabled() {
		if w.token(t) == token {
			w.push(t)
			return true, nil
		}
	}
	return false, nil
}

func (w *walk[T, S]) enabledTokens() string {
	var ts []string
	for _, t := range w.Enabled() {
		ts = append(ts, w.token(t))
	}
	if len(ts) == 0 {
		return "none"
	}
	return strings.Join(ts, " ")
}

// replay takes every step of schedule in order (dot-separated tokens)
// with take, stopping at the first that cannot be taken.
func (w *walk[T, S]) replay(schedule string, take func(string) error) error {
	if schedule == "" {
		return nil
	}
	for _, tok := range strings.Split(schedule, ".") {
		if err := take(tok); err != nil {
			return err
		}
	}
	return nil
}

// Back undoes the last step; false at the initial state.
func (w *walk[T, S]) Back() bool {
	if len(w.steps) == 0 {
		return false
	}
	w.steps = w.steps[:len(w.steps)-1]
	w.states = w.states[:len(w.states)-1]
	return true
}

// Random takes up to n steps, each chosen uniformly among the enabled
// instances by a generator seeded with seed (as model.Simulate chooses),
// and stops early where nothing is enabled. It returns how many it took.
func (w *walk[T, S]) Random(seed uint64, n int) int {
	r := rand.New(rand.NewPCG(seed, uint64(len(w.steps))))
	took := 0
	for ; took < n && len(w.steps) < MaxSteps; took++ {
		ts := w.Enabled()
		if len(ts) == 0 {
			break
		}
		w.push(ts[r.IntN(len(ts))])
	}
	return took
}

// Schedule is the steps taken, as tokens joined by dots.
func (w *walk[T, S]) Schedule() string {
	ts := make([]string, len(w.steps))
	for i, t := range w.steps {
		ts[i] = w.token(t)
	}
	return strings.Join(ts, ".")
}
