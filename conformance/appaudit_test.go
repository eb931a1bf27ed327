package conformance

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/markerwave/markerwave/impl/app"
	"github.com/markerwave/markerwave/spec"
)

func readTraceFile(t *testing.T, path string) spec.Trace {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr, err := spec.ReadTrace(f)
	require.NoError(t, err)
	return tr
}

// The article's committed traces audit clean at the application level:
// the token ring keeps one token, the banks their money, on every
// recorded snapshot, the states rebuilt from the events alone.
func TestCheckAppInvariantsCommittedTraces(t *testing.T) {
	ring := readTraceFile(t, "../traces/conforms/token-ring.jsonl")
	tokens := func(p spec.ProcID) (App, error) { return app.NewToken(ring.Header.InitBal[p] == 1), nil }
	require.NoError(t, CheckAppInvariants(ring, tokens, []spec.Invariant{app.OneToken()}))

	for _, name := range []string{"two-account-transfer", "concurrent-snapshots", "puzzle"} {
		tr := readTraceFile(t, "../traces/conforms/"+name+".jsonl")
		banks := func(p spec.ProcID) (App, error) { return app.NewBank(tr.Header.InitBal[p]) }
		var total int64
		for _, b := range tr.Header.InitBal {
			total += b
		}
		require.NoError(t, CheckAppInvariants(tr, banks, []spec.Invariant{app.Conservation(total)}), name)
		err := CheckAppInvariants(tr, banks, []spec.Invariant{app.Conservation(total + 1)})
		assert.ErrorContains(t, err, `breaks invariant "Conservation"`, name)
	}
}

// What the app audit cannot rebuild it names: a recorded message never
// sent, a snapshot some process never recorded, a trace with restores, a
// process's application that cannot be built, an event the application
// refuses.
func TestCheckAppInvariantsNamesWhatItCannotRebuild(t *testing.T) {
	base := readTraceFile(t, "../traces/conforms/token-ring.jsonl")
	tokens := func(p spec.ProcID) (App, error) { return app.NewToken(base.Header.InitBal[p] == 1), nil }
	one := []spec.Invariant{app.OneToken()}
	clone := func() spec.Trace { return readTraceFile(t, "../traces/conforms/token-ring.jsonl") } // a fresh copy

	tr := clone()
	c := spec.Channel{From: "P1", To: "P2"}
	tr.Recorded[0].Chans[c] = []spec.AppMsg{{Amt: 1, Seq: 9}}
	assert.ErrorContains(t, CheckAppInvariants(tr, tokens, one), "snapshot 1 records message #9 on P1->P2, never sent")

	tr = clone()
	tr.Events = tr.Events[:1]
	assert.ErrorContains(t, CheckAppInvariants(tr, tokens, one), "snapshot 1: 1 of 3 processes recorded in the events")

	tr = clone()
	tr.Restores = []spec.Restore{{}}
	assert.EqualError(t, CheckAppInvariants(tr, tokens, one), "app audit: a trace with restores is not supported")

	assert.ErrorContains(t, CheckAppInvariants(clone(), func(spec.ProcID) (App, error) { return app.NewBank(-1) }, one),
		"app audit: P1's application: bank: negative initial balance -1")

	noToken := func(spec.ProcID) (App, error) { return app.NewToken(false), nil }
	assert.ErrorContains(t, CheckAppInvariants(clone(), noToken, one), "cannot send the token to")
}
