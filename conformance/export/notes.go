package export

import (
	"fmt"

	"github.com/markerwave/markerwave/spec"
)

// Notes describes a's cuts for people, one line each: the snapshot's
// Summary and its orphan, missing and spurious message counts; then, for
// each kind of faulty message present, how many there are and how the
// diagram draws them. A snap other than 0 limits the notes to that
// snapshot (the one --snap draws).
func (a *Analysis) Notes(snap spec.SnapID) []string {
	var out []string
	for _, c := range a.Cuts {
		if snap == 0 || c.Snap == snap {
			out = append(out, a.cutNote(c))
		}
	}
	for _, k := range []struct {
		st    Status
		drawn string
	}{{Orphan, "red"}, {Missing, "red dashed"}, {Spurious, "red dotted"}} {
		n := a.countAny(k.st)
		if snap != 0 {
			n = a.Count(snap, k.st)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s, drawn in %s", messages(n, string(k.st)), k.drawn))
		}
	}
	return out
}

// cutNote is Notes' line for cut c: its Summary and its orphan, missing
// and (if any) spurious message counts.
func (a *Analysis) cutNote(c Cut) string {
	line := fmt.Sprintf("%s; %d orphan, %d missing", c.Summary(), a.Count(c.Snap, Orphan), a.Count(c.Snap, Missing))
	if n := a.Count(c.Snap, Spurious); n > 0 {
		line += fmt.Sprintf(", %d spurious", n)
	}
	return line
}

// messages renders "1 orphan message", "2 missing messages".
func messages(n int, kind string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s message", kind)
	}
	return fmt.Sprintf("%d %s messages", n, kind)
}
