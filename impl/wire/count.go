package wire

import (
	"fmt"
	"sort"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// CountByChan describes how many of envs are on each channel, in channel
// order: "P1->P2: 3, P2->P1: 1". Transports and the runtime use it to
// report frames left behind.
func CountByChan(envs []Envelope) string {
	n := map[spec.Channel]int{}
	for _, e := range envs {
		n[e.Chan]++
	}
	cs := make([]spec.Channel, 0, len(n))
	for c := range n {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return spec.ChannelLess(cs[i], cs[j]) })
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s: %d", c, n[c])
	}
	return strings.Join(parts, ", ")
}
