package spec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/markerwave/markerwave/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CheckInvariants names each broken invariant, reports a panicking or
// malformed one by name, and still checks the others.
func TestCheckInvariants(t *testing.T) {
	s := spec.AppSnapshot{Snap: 4, States: map[spec.ProcID][]byte{"P1": []byte(`1`)}}
	holds := spec.Invariant{Name: "holds", Check: func(spec.AppSnapshot) error { return nil }}
	broken := spec.Invariant{Name: "one owner", Check: func(spec.AppSnapshot) error { return errors.New("key k owned by P1 and P2") }}
	panics := spec.Invariant{Name: "nil map", Check: func(s spec.AppSnapshot) error {
		owners := map[string][]spec.ProcID{}
		return fmt.Errorf("owner %s", owners["k"][len(s.States)]) // a bug in the invariant itself
	}}
	require.NoError(t, spec.CheckInvariants(s, []spec.Invariant{holds}))
	require.NoError(t, spec.CheckInvariants(s, nil))

	err := spec.CheckInvariants(s, []spec.Invariant{broken, panics, holds, {Name: "no check"}})
	require.Error(t, err)
	assert.Equal(t, "snapshot 4 breaks invariant \"one owner\": key k owned by P1 and P2\n"+
		"snapshot 4: invariant \"nil map\" panicked: runtime error: index out of range [1] with length 0\n"+
		"snapshot 4 breaks invariant \"#4 no check\": an invariant needs a name and a Check", err.Error())
	var ie *spec.InvariantError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "one owner", ie.Invariant)
	assert.False(t, ie.Panicked)
}
