package conformance

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// The replay names an application message amount#seq: its amount and
// its number on its channel, which the derivation counted. An outside
// implementation that logs its own message ids knows its messages by
// them, so the outsider audit's divergence and violations name such a
// message by its amount and the implementation's id instead: 30 (id
// "t1"), not 30#1. A message the log gave no id keeps amount#seq.

// msgNames is each message's id as the log gave it, by channel and seq,
// for the derived trace's first n events (a seq a restore reuses names
// the message of the latest incarnation, the one on the channel then).
func (d Derived) msgNames(n int) map[spec.Channel]map[uint64]spec.ObsID {
	names := map[spec.Channel]map[uint64]spec.ObsID{}
	for i, e := range d.Trace.Events[:min(n, len(d.Trace.Events), len(d.msgIDs))] {
		if id := d.msgIDs[i]; id != nil && (e.Action == spec.SendApp || e.Action == spec.RecvApp) {
			c := e.Chan()
			if names[c] == nil {
				names[c] = map[uint64]spec.ObsID{}
			}
			names[c][e.Msg] = *id
		}
	}
	return names
}

// chanRE is a channel as the reports write it, "N1->N2".
const chanRE = `[A-Za-z][A-Za-z0-9_.-]*->[A-Za-z][A-Za-z0-9_.-]*`

// msgRE finds, in a report's text, what names a channel (an event
// SendApp(A, B, ...) or RecvApp(A, B), groups af and at; a channel "A->B",
// ch, with its message's seq in "A->B #seq", chseq) and what names a
// message: SendApp's "amount) #seq" (samt, sseq), amount#seq (amt, seq)
// with its channel after it in " on A->B" (on).
var msgRE = regexp.MustCompile(`(?:SendApp|RecvApp)\((?P<af>[A-Za-z][A-Za-z0-9_.-]*), (?P<at>[A-Za-z][A-Za-z0-9_.-]*)` +
	`|(?P<ch>` + chanRE + `)(?: #(?P<chseq>\d+))?` +
	`|(?P<samt>-?\d+)\) #(?P<sseq>\d+)` +
	`|(?P<amt>-?\d+)#(?P<seq>\d+)(?: on (?P<on>` + chanRE + `))?`)

// unsentMsgs names, by channel and seq, the messages the log receives
// or reports recorded that no send of the log gives, in the log's words
// (unsentName). The derivation gives each a seq no sent message has: a
// receive without an id its place in FIFO order (past the channel's
// sends), any other one a fresh seq (fresh), so the replay judges it and
// the report names it as the log does.
type unsentMsgs map[spec.Channel]map[uint64]string

// unsentSeqBase is the first fresh seq (unsentMsgs.fresh): above any
// channel's count of messages.
const unsentSeqBase = 1 << 40

// add names message seq on c desc.
func (u *unsentMsgs) add(c spec.Channel, seq uint64, desc string) {
	if *u == nil {
		*u = unsentMsgs{}
	}
	if (*u)[c] == nil {
		(*u)[c] = map[uint64]string{}
	}
	(*u)[c][seq] = desc
}

// fresh is a seq on c that no message has, named desc.
func (u *unsentMsgs) fresh(c spec.Channel, desc string) uint64 {
	seq := uint64(unsentSeqBase + len((*u)[c]))
	u.add(c, seq, desc)
	return seq
}

// unsentName names a message no send gives as the log does: its amount
// where the log gives one, its id where it gives one, why it is no
// message sent and the line that names it (where).
func unsentName(amount *int64, id *spec.ObsID, why, where string) string {
	head, tail := "a message (", ""
	switch {
	case amount != nil && id != nil:
		head, tail = fmt.Sprintf("%d (", *amount), fmt.Sprintf("id %s, ", id)
	case amount != nil:
		head = fmt.Sprintf("%d (", *amount)
	case id != nil:
		head = fmt.Sprintf("message %s (", id)
	}
	return fmt.Sprintf("%s%s%s: %s)", head, tail, why, where)
}

// msgNamer rewrites a report's texts in the implementation's message ids.
type msgNamer struct {
	names map[spec.Channel]map[uint64]spec.ObsID
	// unsent names the messages no send gives (unsentMsgs).
	unsent unsentMsgs
	// dflt is the channel a message with no channel named before or after
	// it is on: the divergent event's.
	dflt spec.Channel
}

// name rewrites s: each message whose seq the log gave an id, on the
// channel named after it, else the last one named before it, else the
// default, is named by its amount and that id, "30 (id "t1")"; one no
// send gives as unsentMsgs names it.
func (m msgNamer) name(s string) string {
	if len(m.names) == 0 && len(m.unsent) == 0 {
		return s
	}
	last := m.dflt
	return replaceSubmatches(msgRE, s, func(g func(string) string) string {
		switch {
		case g("af") != "":
			last = spec.Channel{From: spec.ProcID(g("af")), To: spec.ProcID(g("at"))}
			return g("")
		case g("ch") != "":
			last = chanOf(g("ch"))
			if g("chseq") == "" {
				return g("")
			}
			return m.id(last, g("chseq"), g(""), g("ch")+" (id %s)")
		case g("samt") != "":
			return m.id(last, g("sseq"), g(""), g("samt")+") (id %s)")
		case g("on") != "":
			return m.id(chanOf(g("on")), g("seq"), g(""), g("amt")+" (id %s) on "+g("on"))
		}
		return m.id(last, g("seq"), g(""), g("amt")+" (id %s)")
	})
}

// chanOf is channel "FROM->TO" (chanRE).
func chanOf(s string) spec.Channel {
	from, to, _ := strings.Cut(s, "->")
	return spec.Channel{From: spec.ProcID(from), To: spec.ProcID(to)}
}

// id renders the message seq on c as unsentMsgs names it if no send
// gives it, else with form (its %s the id) if the log gave it an id,
// else as it was (orig).
func (m msgNamer) id(c spec.Channel, seq, orig, form string) string {
	n, err := strconv.ParseUint(seq, 10, 64)
	if desc, unsent := m.unsent[c][n]; err == nil && unsent {
		if strings.HasSuffix(form, " on "+c.String()) {
			return desc + " on " + c.String()
		}
		if strings.HasPrefix(form, c.String()) {
			return c.String() + " " + desc
		}
		return desc
	}
	id, ok := m.names[c][n]
	if err != nil || !ok {
		return orig
	}
	return strings.Replace(form, "%s", id.String(), 1)
}

// replaceSubmatches is re.ReplaceAllStringFunc giving f the match's
// groups by name (g("") the whole match; "" for a group that did not take
// part).
func replaceSubmatches(re *regexp.Regexp, s string, f func(g func(string) string) string) string {
	var out []byte
	at := 0
	for _, ix := range re.FindAllStringSubmatchIndex(s, -1) {
		g := func(name string) string {
			k := 0
			if name != "" {
				k = re.SubexpIndex(name)
			}
			if ix[2*k] < 0 {
				return ""
			}
			return s[ix[2*k]:ix[2*k+1]]
		}
		out = append(append(out, s[at:ix[0]]...), f(g)...)
		at = ix[1]
	}
	return string(append(out, s[at:]...))
}

// nameMessages rewrites r's divergence and violations in the
// implementation's message ids (msgNamer): the divergence's as of its
// step, the violations' as of the end.
func (d Derived) nameMessages(r *Report) {
	if v := r.Divergence; v != nil {
		n := len(d.Trace.Events)
		m := msgNamer{unsent: d.unsent}
		if v.Step > 0 {
			n = v.Step
			m.dflt = d.Trace.Events[v.Step-1].Chan()
		}
		m.names = d.msgNames(n)
		x := *v
		if v.Step > 0 && v.Property == spec.CheckWellFormed {
			// A receive of a message no send gives, its amount not logged:
			// the derived amount 0 stands for none, not the log's word.
			if e := d.Trace.Events[v.Step-1]; e.Action == spec.RecvApp && d.unsent[e.Chan()][e.Msg] != "" {
				x.Property = spec.CheckEnabled
				x.Detail = fmt.Sprintf("RecvApp(%q,%q) is not enabled: %s never sent on %s the message %s received", string(e.From), string(e.To), string(e.From), e.Chan(), string(e.To))
			}
		}
		x.Action, x.Detail, x.Expected, x.Reported, x.Diff = m.name(x.Action), m.name(x.Detail), m.name(x.Expected), m.name(x.Reported), m.name(x.Diff)
		r.Divergence = &x
	}
	if len(r.Violations) == 0 {
		return
	}
	m := msgNamer{names: d.msgNames(len(d.Trace.Events)), unsent: d.unsent}
	vs := make([]Violation, len(r.Violations))
	for i, v := range r.Violations {
		v.Detail = m.name(v.Detail)
		vs[i] = v
	}
	r.Violations = vs
}
