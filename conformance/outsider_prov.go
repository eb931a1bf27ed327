package conformance

import (
	"fmt"
	"strings"
)

// provenance counts, for each kind of value the replay checks, how many
// the implementation gave and how many were derived from the log.
type provenance struct {
	order []string
	given map[string]int
	total map[string]int
}

func newProvenance() *provenance {
	return &provenance{given: map[string]int{}, total: map[string]int{}}
}

// count notes one value of kind what, given by the implementation or
// derived.
func (p *provenance) count(what string, given bool) {
	if _, ok := p.total[what]; !ok {
		p.order = append(p.order, what)
	}
	p.total[what]++
	if given {
		p.given[what]++
	}
}

// ProvLine says of one kind of value how many of them the implementation
// gave (Given of Total) and which checks read them.
type ProvLine struct {
	What   string `json:"what"`
	Given  int    `json:"given"`
	Total  int    `json:"total"`
	Checks string `json:"checks"`
}

// provChecks names the checks each kind of value bears on.
var provChecks = map[string]string{
	"message ids":             "Message (which message a receive took)",
	"message seqs":            "Message",
	"amounts received":        "Message",
	"after states":            "State",
	"first flags":             "Message (the Receiving Rule's case)",
	"marker sends":            "SnapshotsComplete (the Marker Sending Rule)",
	"marker receipts":         "Enabled, RecordedState (where each channel's recording ends)",
	"recorded local states":   "RecordedState, Conservation",
	"recorded channel states": "RecordedState, ExactChannelState",
	"cut counts":              "ConsistentCut (the reported cut against the model's)",
}

// lines lists the kinds in the order first counted.
func (p *provenance) lines() []ProvLine {
	out := make([]ProvLine, 0, len(p.order))
	for _, w := range p.order {
		out = append(out, ProvLine{What: w, Given: p.given[w], Total: p.total[w], Checks: provChecks[w]})
	}
	return out
}

// provSplit renders the kinds the implementation gave (wholly or in
// part) and those wholly derived.
func (d Derived) provSplit() (own, derived string) {
	var o, dv []string
	for _, l := range d.Prov {
		switch {
		case l.Given == 0:
			dv = append(dv, fmt.Sprintf("%s (%s)", l.What, l.Checks))
		case l.Given == l.Total:
			o = append(o, fmt.Sprintf("%s, %d of %d (%s)", l.What, l.Given, l.Total, l.Checks))
		default:
			o = append(o, fmt.Sprintf("%s, %d of %d, the rest derived (%s)", l.What, l.Given, l.Total, l.Checks))
		}
	}
	return strings.Join(o, "; "), strings.Join(dv, "; ")
}
