package engine

import "fmt"

// RebuildPath turns a path of canonical encodings (a counterexample's, as
// the engine reports it) back into states and the actions between them:
// each state is decode(path[i]), and actions[i-1] is the first action,
// in the order successors yields them, whose successor from state i-1
// encodes as path[i]. It is the one reconstruction every spec's explorer
// uses.
func RebuildPath[S, A any](path [][]byte, decode func([]byte) (S, error), successors func(from S, yield func(a A, enc string))) (states []S, actions []A, err error) {
	for i, enc := range path {
		st, err := decode(enc)
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			var found *A
			want := string(enc)
			successors(states[i-1], func(a A, e string) {
				if found == nil && e == want {
					found = &a
				}
			})
			if found == nil {
				return nil, nil, fmt.Errorf("internal error: no action leads from step %d to step %d of the counterexample", i, i+1)
			}
			actions = append(actions, *found)
		}
		states = append(states, st)
	}
	return states, actions, nil
}
