package conformance

import (
	"strings"
	"testing"

	"github.com/markerwave/markerwave/spec"
)

// outsiderRun reads lines (an outsider trace, header first) as one run.
func outsiderRun(t *testing.T, lines ...string) *OutsiderRun {
	t.Helper()
	l, err := spec.ReadOutsider(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	run, err := NewOutsiderRun([]spec.OutsiderLog{l}, []string{"run.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

const ringHeader = `{"format":"markerwave-outsider/1","topology":{"procs":["N1","N2","N3"],"channels":[{"from":"N1","to":"N2"},{"from":"N2","to":"N3"},{"from":"N3","to":"N1"}]},"init_bal":{"N1":100,"N2":50,"N3":20}%s}`

func ring(extra string) string { return strings.Replace(ringHeader, "%s", extra, 1) }

// TestOutsiderExplains holds the list of explanations, each in
// the implementation's terms.
func TestOutsiderExplains(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		prop  spec.Property
		want  []string
	}{{
		// The issue: no marker forwarding was named by three different
		// properties; it is the marker never sent, SnapshotsComplete.
		name: "marker never sent",
		lines: []string{ring(""),
			`{"node":"N1","ev":"record","snap":1,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":1}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":1}`,
			`{"node":"N2","ev":"record","snap":1,"state":{"bal":50}}`,
			`{"node":"N2","ev":"send","to":"N3","id":"a","amount":10}`,
			`{"node":"N3","ev":"recv","from":"N2","id":"a"}`},
		prop: spec.PropSnapshotsComplete,
		want: []string{"N2 never sent snapshot 1's marker on N2->N3 after recording at its step 1"},
	}, {
		name: "snapshot id 0 conforms",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N1","ev":"record","snap":0,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":0}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":0}`,
			`{"node":"N2","ev":"record","snap":0,"state":{"bal":50}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":0}`,
			`{"node":"N3","ev":"marker_recv","from":"N2","snap":0}`,
			`{"node":"N3","ev":"record","snap":0,"state":{"bal":20}}`,
			`{"node":"N3","ev":"marker_send","to":"N1","snap":0}`,
			`{"node":"N1","ev":"marker_recv","from":"N3","snap":0}`},
		want: []string{"conforms: 4 steps, 1 snapshot"},
	}, {
		name: "incomplete without drained",
		lines: []string{ring(""),
			`{"node":"N1","ev":"record","snap":"alpha","state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":"alpha"}`},
		want: []string{`incomplete: snapshot "alpha" was initiated but never completed: N2 never recorded, N3 never recorded, N1 never received its marker on N3->N1`},
	}, {
		name: "incomplete and drained",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N1","ev":"record","snap":0,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":0}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":0}`,
			`{"node":"N2","ev":"record","snap":0,"state":{"bal":50}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":0}`},
		prop: spec.PropSnapshotsComplete,
		want: []string{"incomplete: snapshot 0 was initiated but never completed: N3 never recorded, N1 never received its marker on N3->N1"},
	}, {
		name: "channel state by amounts",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N3","ev":"send","to":"N1","amount":5}`,
			`{"node":"N1","ev":"record","snap":7,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":7}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":7}`,
			`{"node":"N2","ev":"record","snap":7,"state":{"bal":50}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":7}`,
			`{"node":"N3","ev":"marker_recv","from":"N2","snap":7}`,
			`{"node":"N3","ev":"record","snap":7,"state":{"bal":15}}`,
			`{"node":"N3","ev":"marker_send","to":"N1","snap":7}`,
			`{"node":"N1","ev":"recv","from":"N3"}`,
			`{"node":"N1","ev":"marker_recv","from":"N3","snap":7}`,
			`{"snapshot":{"snap":7,"procs":{"N1":{"bal":100},"N2":{"bal":50},"N3":{"bal":15}},"chans":{"N3->N1":{"amounts":[5]}}}}`},
		want: []string{"conforms"},
	}, {
		name: "recorded late",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N1","ev":"record","snap":7,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":7}`,
			`{"node":"N1","ev":"send","to":"N2","amount":10}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":7}`,
			`{"node":"N2","ev":"recv","from":"N1"}`,
			`{"node":"N2","ev":"record","snap":7,"state":{"bal":60}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":7}`,
			`{"node":"N3","ev":"marker_recv","from":"N2","snap":7}`,
			`{"node":"N3","ev":"record","snap":7,"state":{"bal":20}}`,
			`{"node":"N3","ev":"marker_send","to":"N1","snap":7}`,
			`{"node":"N1","ev":"marker_recv","from":"N3","snap":7}`},
		prop: spec.PropConservation,
		want: []string{"note: N2 recorded snapshot 7 at its step 3 (run.jsonl: trace line 7), after its first marker of it (step 1, run.jsonl: trace line 5) and 1 send or receive since"},
	}, {
		name: "channel state by amounts, wrong",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N3","ev":"send","to":"N1","amount":5}`,
			`{"node":"N1","ev":"record","snap":7,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":7}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":7}`,
			`{"node":"N2","ev":"record","snap":7,"state":{"bal":50}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":7}`,
			`{"node":"N3","ev":"marker_recv","from":"N2","snap":7}`,
			`{"node":"N3","ev":"record","snap":7,"state":{"bal":15}}`,
			`{"node":"N3","ev":"marker_send","to":"N1","snap":7}`,
			`{"node":"N1","ev":"recv","from":"N3"}`,
			`{"node":"N1","ev":"marker_recv","from":"N3","snap":7}`,
			`{"snapshot":{"snap":7,"procs":{"N1":{"bal":100},"N2":{"bal":50},"N3":{"bal":15}}}}`},
		prop: spec.PropExactChannelState,
		want: []string{"recorded channel states, 3 of 3"},
	}, {
		// A marker sent twice on a channel, or before the node recorded
		// its snapshot, is a marker send no step of the model takes.
		name: "marker sent twice",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N1","ev":"record","snap":0,"state":{"bal":100}}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":0}`,
			`{"node":"N1","ev":"marker_send","to":"N2","snap":0}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":0}`,
			`{"node":"N2","ev":"record","snap":0,"state":{"bal":50}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":0}`,
			`{"node":"N3","ev":"marker_recv","from":"N2","snap":0}`,
			`{"node":"N3","ev":"record","snap":0,"state":{"bal":20}}`,
			`{"node":"N3","ev":"marker_send","to":"N1","snap":0}`,
			`{"node":"N1","ev":"marker_recv","from":"N3","snap":0}`},
		prop: spec.CheckEnabled,
		want: []string{"the implementation sent a marker the spec does not send: N1 sent snapshot 0's marker on N1->N2 twice (its steps 2 and 3): the spec sends one on each channel, in the recording step (N1's step 3 (run.jsonl: trace line 4))"},
	}, {
		name: "marker sent before recording",
		lines: []string{ring(`,"drained":true`),
			`{"node":"N1","ev":"marker_send","to":"N2","snap":0}`,
			`{"node":"N1","ev":"send","to":"N2","id":"a","amount":10}`,
			`{"node":"N1","ev":"record","snap":0,"state":{"bal":90}}`,
			`{"node":"N2","ev":"marker_recv","from":"N1","snap":0}`,
			`{"node":"N2","ev":"record","snap":0,"state":{"bal":50}}`,
			`{"node":"N2","ev":"marker_send","to":"N3","snap":0}`,
			`{"node":"N2","ev":"recv","from":"N1","id":"a"}`,
			`{"node":"N3","ev":"marker_recv","from":"N2","snap":0}`,
			`{"node":"N3","ev":"record","snap":0,"state":{"bal":20}}`,
			`{"node":"N3","ev":"marker_send","to":"N1","snap":0}`,
			`{"node":"N1","ev":"marker_recv","from":"N3","snap":0}`},
		prop: spec.CheckEnabled,
		want: []string{"N1 sent snapshot 0's marker on N1->N2 at its step 1, before recording the snapshot: the spec sends the markers in the recording step, after the state is recorded (N1's step 1 (run.jsonl: trace line 2))"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := AuditOutsider(outsiderRun(t, c.lines...), Options{})
			if err != nil {
				t.Fatal(err)
			}
			out := rep.String()
			if rep.Property() != c.prop {
				t.Errorf("property %q, want %q:\n%s", rep.Property(), c.prop, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestOutsiderNoIncompleteAfterDivergence: B logs its record line after
// a receive that follows its first marker, so the replay diverges at B's
// marker receipt; the report says nothing of B or C never recording,
// which their logs contradict.
func TestOutsiderNoIncompleteAfterDivergence(t *testing.T) {
	run := outsiderRun(t, ring(`,"drained":true`),
		`{"node":"N1","ev":"send","to":"N2","id":"m1","amount":10}`,
		`{"node":"N1","ev":"record","snap":"s1","state":{"bal":90}}`,
		`{"node":"N1","ev":"marker_send","to":"N2","snap":"s1"}`,
		`{"node":"N2","ev":"marker_recv","from":"N1","snap":"s1"}`,
		`{"node":"N2","ev":"recv","from":"N1","id":"m1"}`,
		`{"node":"N2","ev":"record","snap":"s1","state":{"bal":60}}`,
		`{"node":"N2","ev":"marker_send","to":"N3","snap":"s1"}`,
		`{"node":"N3","ev":"marker_recv","from":"N2","snap":"s1"}`,
		`{"node":"N3","ev":"record","snap":"s1","state":{"bal":20}}`,
		`{"node":"N3","ev":"marker_send","to":"N1","snap":"s1"}`,
		`{"node":"N1","ev":"marker_recv","from":"N3","snap":"s1"}`)
	rep, err := AuditOutsider(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := rep.String()
	if rep.Divergence == nil || rep.Divergence.Step == 0 {
		t.Fatalf("no divergence at a step:\n%s", out)
	}
	if len(rep.Incomplete) > 0 || strings.Contains(out, "incomplete:") || strings.Contains(out, "never recorded") {
		t.Errorf("the report lists incomplete snapshots after the divergence:\n%s", out)
	}
}
