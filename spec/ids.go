package spec

import (
	"fmt"
	"regexp"
)

// ProcID names a process, as an element of the TLA+ constant Proc ("P1").
type ProcID string

// SnapID names a snapshot, as an element of the TLA+ constant Snap.
// Ids are positive; 0 means "no snapshot".
type SnapID uint64

// Channel is a directed FIFO channel <<From, To>>, an element of the TLA+
// constant Chan.
type Channel struct {
	From ProcID `json:"from"`
	To   ProcID `json:"to"`
}

// String renders the channel as "P1->P2".
func (c Channel) String() string { return string(c.From) + "->" + string(c.To) }

var procIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// ValidateProcID reports whether id is a well-formed process id: a letter
// followed by up to 63 letters, digits, '_', '.' or '-'.
func ValidateProcID(id ProcID) error {
	if !procIDPattern.MatchString(string(id)) {
		return fmt.Errorf("invalid process id %q: want a letter then up to 63 of [A-Za-z0-9_.-]", string(id))
	}
	return nil
}
