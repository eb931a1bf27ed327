package spec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func ch(a, b string) Channel { return Channel{ProcID(a), ProcID(b)} }

func TestNewTopologyValid(t *testing.T) {
	top, err := NewTopology([]ProcID{"P3", "P1", "P2"}, []Channel{ch("P3", "P1"), ch("P1", "P2"), ch("P2", "P3")})
	require.NoError(t, err)
	assert.Equal(t, []ProcID{"P1", "P2", "P3"}, top.Procs)
	assert.Equal(t, []Channel{ch("P1", "P2"), ch("P2", "P3"), ch("P3", "P1")}, top.Chans)
	assert.Equal(t, []Channel{ch("P3", "P1")}, top.In("P1"))
	assert.Equal(t, []Channel{ch("P1", "P2")}, top.Out("P1"))
	assert.True(t, top.HasChan(ch("P2", "P3")))
	assert.False(t, top.HasChan(ch("P3", "P2")))
	assert.Equal(t, 1, top.ProcIndex("P2"))
	assert.Equal(t, -1, top.ProcIndex("P9"))
	assert.Equal(t, 2, top.ChanIndex(ch("P3", "P1")))
	assert.Equal(t, "P1->P2", ch("P1", "P2").String())
}

func TestNewTopologyErrorsNameTheProblem(t *testing.T) {
	cases := []struct {
		name  string
		procs []ProcID
		chans []Channel
		want  string
	}{
		{"empty", nil, nil, "no processes"},
		{"bad id", []ProcID{"1x"}, nil, `invalid process id "1x"`},
		{"duplicate", []ProcID{"P1", "P1"}, nil, `duplicate process id "P1"`},
		{"unknown from", []ProcID{"P1"}, []Channel{ch("P9", "P1")}, `unknown process "P9"`},
		{"unknown to", []ProcID{"P1"}, []Channel{ch("P1", "P9")}, `unknown process "P9"`},
		{"self-loop", []ProcID{"P1"}, []Channel{ch("P1", "P1")}, "self-loop"},
		{"duplicate channel", []ProcID{"P1", "P2"}, []Channel{ch("P1", "P2"), ch("P2", "P1"), ch("P1", "P2")}, "duplicate channel P1->P2"},
		{"not strongly connected", []ProcID{"P1", "P2", "P3"}, []Channel{ch("P1", "P2"), ch("P2", "P1"), ch("P2", "P3")}, "P3 cannot reach P1"},
		{"isolated", []ProcID{"P1", "P2"}, nil, "P1 cannot reach P2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTopology(c.procs, c.chans)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestParseTopology(t *testing.T) {
	top, err := ParseTopology([]byte(`{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]}`))
	require.NoError(t, err)
	assert.Len(t, top.Chans, 2)

	b, err := json.Marshal(top)
	require.NoError(t, err)
	var back Topology
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, top.Procs, back.Procs)
	assert.Equal(t, top.Chans, back.Chans)

	for in, want := range map[string]string{
		`{"procs":["P1"],"chans":[]}`:         `unknown field "chans"`,
		`{"procs":["P1"]} {}`:                 "trailing data",
		`[1,2]`:                               "want an object, got array",
		`{"procs":["P1","P2"],"channels":[]}`: "not strongly connected",
	} {
		_, err := ParseTopology([]byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}

// Topology.Equal: the same processes and channels, in whatever order
// they were listed (NewTopology sorts them), and through JSON; a channel
// reversed, added or a process more is another topology.
func TestTopologyEqual(t *testing.T) {
	ring := func(chans ...Channel) *Topology {
		procs := []ProcID{"P1", "P2", "P3"}
		top, err := NewTopology(procs, chans)
		require.NoError(t, err)
		return top
	}
	a := ring(ch("P1", "P2"), ch("P2", "P3"), ch("P3", "P1"))
	assert.True(t, a.Equal(a))
	assert.True(t, a.Equal(ring(ch("P3", "P1"), ch("P2", "P3"), ch("P1", "P2"))), "listing order does not matter")
	b, err := json.Marshal(a)
	require.NoError(t, err)
	var back Topology
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, a.Equal(&back), "through JSON")
	assert.False(t, a.Equal(ring(ch("P2", "P1"), ch("P3", "P2"), ch("P1", "P3"))), "channels reversed")
	assert.False(t, a.Equal(ring(ch("P1", "P2"), ch("P2", "P3"), ch("P3", "P1"), ch("P1", "P3"))), "a channel more")
	assert.False(t, a.Equal(Ring(4)), "a process more")
	assert.False(t, Ring(3).Equal(Complete(3)))
}

func TestRingAndComplete(t *testing.T) {
	assert.Len(t, Ring(5).Chans, 5)
	assert.Len(t, Complete(4).Chans, 12)
	assert.Empty(t, Ring(1).Chans)
}

// Random graphs: NewTopology accepts exactly the strongly connected ones.
func TestStrongConnectivityProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		procs := numbered(n)
		var chans []Channel
		adj := map[ProcID]map[ProcID]bool{}
		for _, p := range procs {
			adj[p] = map[ProcID]bool{}
			for _, q := range procs {
				if p != q && rapid.Bool().Draw(t, string(p)+string(q)) {
					chans = append(chans, Channel{p, q})
					adj[p][q] = true
				}
			}
		}
		// Floyd-Warshall closure as an independent oracle.
		reach := map[ProcID]map[ProcID]bool{}
		for _, p := range procs {
			reach[p] = map[ProcID]bool{p: true}
			for q := range adj[p] {
				reach[p][q] = true
			}
		}
		for _, k := range procs {
			for _, i := range procs {
				for _, j := range procs {
					if reach[i][k] && reach[k][j] {
						reach[i][j] = true
					}
				}
			}
		}
		want := true
		for _, i := range procs {
			for _, j := range procs {
				want = want && reach[i][j]
			}
		}
		_, err := NewTopology(procs, chans)
		if want != (err == nil) {
			t.Fatalf("strongly connected=%v but NewTopology error=%v", want, err)
		}
	})
}

func FuzzParseTopology(f *testing.F) {
	f.Add([]byte(`{"procs":["P1","P2"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P1"}]}`))
	f.Add([]byte(`{"procs":["P1"],"channels":[]}`))
	f.Add([]byte(`{"procs":["P1","P2","P3"],"channels":[{"from":"P1","to":"P2"},{"from":"P2","to":"P3"},{"from":"P3","to":"P1"}]}`))
	f.Add([]byte(`{"procs":["P1","P1"]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		top, err := ParseTopology(b)
		if err != nil {
			if top != nil {
				t.Fatal("error with a topology")
			}
			return
		}
		// Accepted topologies are valid and survive a round trip.
		out, err := json.Marshal(top)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseTopology(out)
		if err != nil {
			t.Fatalf("round trip rejected: %v", err)
		}
		if len(back.Procs) != len(top.Procs) || len(back.Chans) != len(top.Chans) {
			t.Fatal("round trip changed the topology")
		}
	})
}
