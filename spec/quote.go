package spec

import "fmt"

// Quote is where a piece of a TLA+ spec is written: its text, the module
// (file) and the line. The models quote the conjunct of an action that
// is false when the action is not enabled.
type Quote struct {
	TLA    string
	Module string
	Line   int
}

func (q Quote) String() string {
	return fmt.Sprintf("%s, %s line %d", q.TLA, q.Module, q.Line)
}
