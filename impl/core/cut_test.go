package core

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/markerwave/markerwave/spec"
)

// Cut takes a channel's Sent from its sender's part and Got from its
// receiver's, each less one; a part that is absent leaves its half zero.
func TestCutAssemblesBothEnds(t *testing.T) {
	c12 := spec.Channel{From: "P1", To: "P2"}
	c21 := spec.Channel{From: "P2", To: "P1"}
	p1 := LocalSnapshot{Proc: "P1", NextSend: []ChanSeq{{Chan: c12, Next: 4}}, Chans: []ChanRecording{{Chan: c21, NextRecv: 2}}}
	p2 := LocalSnapshot{Proc: "P2", NextSend: []ChanSeq{{Chan: c21, Next: 3}}, Chans: []ChanRecording{{Chan: c12, NextRecv: 1}}}
	assert.Equal(t, map[spec.Channel]spec.ChanCut{c12: {Sent: 3, Got: 0}, c21: {Sent: 2, Got: 1}}, Cut(p1, p2))
	assert.Equal(t, map[spec.Channel]spec.ChanCut{c12: {Sent: 3}, c21: {Got: 1}}, Cut(p1))
}
