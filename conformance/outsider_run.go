package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// OutsiderRun is one run's observations, gathered from one or more
// outsider logs (spec.OutsiderLog): every node's observations in each
// incarnation, and the snapshots the implementation reported.
type OutsiderRun struct {
	Header spec.OutsiderHeader // the run's constants (Node cleared)
	Files  []string
	incs   []outsiderInc
	snaps  []snapshotAt
	// restoreAt is where each incarnation's restore line was first read
	// (by incKey; the logs' first file to hold one): none for the first
	// incarnation, nor for one its logs name only in their headers
	// (restored_from).
	restoreAt map[string]linePlace
}

// linePlace is a line of one of the run's files.
type linePlace struct {
	file string
	line int
}

// outsiderInc is one incarnation: the snapshot it was restored from
// (nil: the first) and each node's observations.
type outsiderInc struct {
	from  *spec.ObsID
	nodes map[spec.ProcID][]obsAt
	files map[spec.ProcID]string
}

// snapshotAt is a reported snapshot and where it was read.
type snapshotAt struct {
	s    spec.OutsiderSnapshot
	file string
	line int
}

// NewOutsiderRun gathers the logs of one run (files[i] names logs[i],
// for errors): logs naming different runs, or with different constants,
// are refused as logs of different runs; two logs of one node in one
// incarnation are refused, and so are one node's own logs without the
// other nodes' (missingNodeLogs); the incarnations are chained, each
// restored from a snapshot recorded in the one before.
func NewOutsiderRun(logs []spec.OutsiderLog, files []string) (*OutsiderRun, error) {
	if len(logs) == 0 {
		return nil, fmt.Errorf("no outsider logs")
	}
	r := &OutsiderRun{Header: logs[0].Header, Files: files}
	r.Header.Node, r.Header.RestoredFrom = "", nil
	byKey := map[string]*outsiderInc{}
	for i, l := range logs {
		if err := r.join(l, fileOf(files, i), fileOf(files, 0)); err != nil {
			return nil, err
		}
		if err := r.addLog(l, fileOf(files, i), byKey); err != nil {
			return nil, err
		}
	}
	if err := missingNodeLogs(logs, files, r.Header.Topology); err != nil {
		return nil, err
	}
	return r, r.chain(byKey)
}

// missingNodeLogs refuses one node's own logs (a header naming its
// node) gathered without those of the other nodes: their sends, markers
// and recordings are not in the run, and the replay would blame the
// node's receives for them. A process counts as logged if a log's
// header names it or a log without a node holds an observation of it
// (a file holding every node's events leaves the header's node out; a
// node of such a file that observed nothing is not missing).
func missingNodeLogs(logs []spec.OutsiderLog, files []string, top *spec.Topology) error {
	has := map[spec.ProcID]string{}
	var own []string
	for i, l := range logs {
		if p := l.Header.Node; p != "" {
			has[p] = fileOf(files, i)
			own = append(own, fmt.Sprintf("%s's (%s)", string(p), fileOf(files, i)))
			continue
		}
		for _, e := range l.Events {
			has[e.Node] = fileOf(files, i)
		}
	}
	var missing []string
	for _, p := range top.Procs {
		if _, ok := has[p]; !ok {
			missing = append(missing, string(p))
		}
	}
	if len(own) == 0 || len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("incomplete run: the node logs given are only %s, and %s of the topology %s none: give the directory of the run's node logs (or every node's file) to audit them as one run",
		andList(slices.Compact(own)), andList(missing), map[bool]string{true: "has", false: "have"}[len(missing) == 1])
}

// andList joins names as "A", "A and B", "A, B and C".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func fileOf(files []string, i int) string {
	if i < len(files) {
		return files[i]
	}
	return fmt.Sprintf("log %d", i+1)
}

// join checks that log l (file) is of the run so far (the first log's
// file first) and merges its header's claims.
func (r *OutsiderRun) join(l spec.OutsiderLog, file, first string) error {
	h := l.Header
	if err := r.sameConstants(h, file, first); err != nil {
		return err
	}
	r.Header.Drained = r.Header.Drained || h.Drained
	if r.Header.Budget == nil {
		r.Header.Budget = h.Budget
	}
	return r.joinSnaps(h, file, first)
}

// sameConstants checks that header h (of file) names the run of the
// first log, with its constants.
func (r *OutsiderRun) sameConstants(h spec.OutsiderHeader, file, first string) error {
	switch {
	case h.Run != r.Header.Run:
		return fmt.Errorf("logs of two different runs: %s is of run %q, %s of run %q", first, r.Header.Run, file, h.Run)
	case !h.Topology.Equal(r.Header.Topology):
		return fmt.Errorf("logs of two different runs: %s and %s have different topologies", first, file)
	case !maps.Equal(h.InitBal, r.Header.InitBal):
		return fmt.Errorf("logs of two different runs: %s and %s have different init_bal", first, file)
	case !maps.Equal(h.Budget, r.Header.Budget) && h.Budget != nil && r.Header.Budget != nil:
		return fmt.Errorf("logs of two different runs: %s and %s have different budgets", first, file)
	}
	return nil
}

// joinSnaps adds header h's initiators to the run's; two initiators of
// one snapshot are an error.
func (r *OutsiderRun) joinSnaps(h spec.OutsiderHeader, file, first string) error {
	for s, p := range h.Snaps {
		if q, ok := r.Header.Snaps[s]; ok && q != p {
			return fmt.Errorf("%s: field \"snaps.%s\": initiator %s, but %s says %s", file, string(s), string(p), first, string(q))
		}
		if r.Header.Snaps == nil {
			r.Header.Snaps = map[spec.ObsID]spec.ProcID{}
		}
		r.Header.Snaps[s] = p
	}
	return nil
}

// lineAt is lines[i], 0 (unknown) for a log built in memory, which has
// no line numbers.
func lineAt(lines []int, i int) int {
	if i < len(lines) {
		return lines[i]
	}
	return 0
}

// addLog files l's observations by incarnation and node, and its
// snapshots.
func (r *OutsiderRun) addLog(l spec.OutsiderLog, file string, byKey map[string]*outsiderInc) error {
	for i, s := range l.Snapshots {
		r.snaps = append(r.snaps, snapshotAt{s: s, file: file, line: lineAt(l.SnapshotLines, i)})
	}
	for _, rs := range l.Restores {
		r.noteRestore(rs, file)
	}
	from := l.Header.RestoredFrom
	next, seen := 0, map[string]bool{}
	for i, e := range l.Events {
		for ; next < len(l.Restores) && l.Restores[next].At <= i; next++ {
			s := l.Restores[next].Snap
			from = &s
		}
		key := incKey(from)
		inc := incOf(byKey, from)
		nk := key + "\x00" + string(e.Node)
		if f, ok := inc.files[e.Node]; ok && f != file && !seen[nk] {
			return fmt.Errorf("two logs of %s%s: %s and %s", string(e.Node), outsiderIncName(from), f, file)
		}
		seen[nk] = true
		inc.files[e.Node] = file
		inc.nodes[e.Node] = append(inc.nodes[e.Node], obsAt{ev: e, file: file, line: lineAt(l.EventLines, i)})
	}
	return nil
}

// noteRestore keeps where the restore line rs of file was read, unless
// an earlier file's line for the same incarnation was kept.
func (r *OutsiderRun) noteRestore(rs spec.OutsiderRestoreAt, file string) {
	key := incKey(&rs.Snap)
	if _, ok := r.restoreAt[key]; ok || rs.Line <= 0 {
		return
	}
	if r.restoreAt == nil {
		r.restoreAt = map[string]linePlace{}
	}
	r.restoreAt[key] = linePlace{file: file, line: rs.Line}
}

// incOf is the incarnation restored from from in byKey, added if new.
func incOf(byKey map[string]*outsiderInc, from *spec.ObsID) *outsiderInc {
	key := incKey(from)
	inc := byKey[key]
	if inc == nil {
		inc = &outsiderInc{from: from, nodes: map[spec.ProcID][]obsAt{}, files: map[spec.ProcID]string{}}
		byKey[key] = inc
	}
	return inc
}

func incKey(from *spec.ObsID) string {
	if from == nil {
		return ""
	}
	return "r" + string(*from)
}

// outsiderIncName names the incarnation restored from from, for errors.
func outsiderIncName(from *spec.ObsID) string {
	if from == nil {
		return ""
	}
	return fmt.Sprintf(" in the incarnation restored from snapshot %s", from.String())
}

// chain orders the incarnations: the first restored from none, each
// next the one restored from a snapshot recorded in the one before.
func (r *OutsiderRun) chain(byKey map[string]*outsiderInc) error {
	cur, ok := byKey[""]
	if !ok {
		cur = &outsiderInc{nodes: map[spec.ProcID][]obsAt{}}
	}
	delete(byKey, "")
	for {
		r.incs = append(r.incs, *cur)
		if len(byKey) == 0 {
			return nil
		}
		next, err := cur.successor(byKey)
		if err != nil {
			return err
		}
		cur = next
		delete(byKey, incKey(cur.from))
	}
}

// successor is the one incarnation of byKey restored from a snapshot
// that inc records; none or several is an error naming them all.
func (inc outsiderInc) successor(byKey map[string]*outsiderInc) (*outsiderInc, error) {
	var found []*outsiderInc
	for _, o := range byKey {
		if inc.records(*o.from) {
			found = append(found, o)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	var rest []string
	for _, o := range byKey {
		rest = append(rest, o.from.String())
	}
	slices.Sort(rest)
	return nil, fmt.Errorf("cannot chain the incarnations: %d of the logs' incarnations (restored from %s) are restored from a snapshot recorded in the one before, want one", len(found), strings.Join(rest, ", "))
}

// records reports whether some node of the incarnation records
// snapshot s (or receives its marker).
func (inc outsiderInc) records(s spec.ObsID) bool {
	for _, obs := range inc.nodes {
		if nodeRecords(obs, s) {
			return true
		}
	}
	return false
}

// snapIDs lists every snapshot id the run names, in order of first
// appearance.
func (r *OutsiderRun) snapIDs() []spec.ObsID {
	var out []spec.ObsID
	seen := map[spec.ObsID]bool{}
	add := func(id *spec.ObsID) {
		if id != nil && !seen[*id] {
			seen[*id] = true
			out = append(out, *id)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(r.Header.Snaps)) {
		add(&s)
	}
	for _, inc := range r.incs {
		add(inc.from)
		inc.eachSnapRef(r.Header.Topology.Procs, add)
	}
	for _, s := range r.snaps {
		add(s.s.Snap)
	}
	return out
}

// eachSnapRef calls f with every observation's snapshot id (nil if it
// names none), node by node in the order of procs.
func (inc outsiderInc) eachSnapRef(procs []spec.ProcID, f func(*spec.ObsID)) {
	for _, p := range procs {
		for _, o := range inc.nodes[p] {
			f(o.ev.Snap)
		}
	}
}

// msgTable is an incarnation's messages: by channel, each id's message
// and each seq's, and each seq's id.
type msgTable struct {
	ids  map[spec.Channel]map[spec.ObsID]sentMsg
	seqs map[spec.Channel]map[uint64]sentMsg
	idOf map[spec.Channel]map[uint64]spec.ObsID
	line map[spec.Channel]map[spec.ObsID]string
}

func newMsgTable(t *spec.Topology) *msgTable {
	m := &msgTable{ids: map[spec.Channel]map[spec.ObsID]sentMsg{}, seqs: map[spec.Channel]map[uint64]sentMsg{},
		idOf: map[spec.Channel]map[uint64]spec.ObsID{}, line: map[spec.Channel]map[spec.ObsID]string{}}
	for _, c := range t.Chans {
		m.ids[c], m.seqs[c], m.idOf[c], m.line[c] = map[spec.ObsID]sentMsg{}, map[uint64]sentMsg{}, map[uint64]spec.ObsID{}, map[spec.ObsID]string{}
	}
	return m
}

// add enters message m with id on c, sent where; an id sent twice on c
// is an error.
func (m *msgTable) add(c spec.Channel, id spec.ObsID, msg sentMsg, where string) error {
	if prev, dup := m.line[c][id]; dup {
		return fmt.Errorf("%s: field \"id\": %s sent twice on %s (also %s): ids must be unique per channel", where, id, c, prev)
	}
	m.ids[c][id], m.seqs[c][msg.seq], m.idOf[c][msg.seq], m.line[c][id] = msg, msg, id, where
	return nil
}

// restored is the table a restore from cut k starts with: each
// channel's messages in flight at the cut (seqs got+1 .. sent).
func (m *msgTable) restored(t *spec.Topology, k *snapCut) *msgTable {
	n := newMsgTable(t)
	for _, c := range t.Chans {
		for seq := k.got[c] + 1; seq <= k.sent[c]; seq++ {
			if msg, ok := m.seqs[c][seq]; ok {
				_ = n.add(c, m.idOf[c][seq], msg, m.line[c][m.idOf[c][seq]])
			}
		}
	}
	return n
}

// indexSends enters the node's sends in its incarnation's table: seq the
// count on the channel from base, id the log's or that count.
func (d *deriver) indexSends(p spec.ProcID, obs []obsAt, base map[spec.Channel]uint64) error {
	sent := maps.Clone(base)
	for _, o := range obs {
		if o.ev.Ev != spec.ObsSend {
			continue
		}
		c := spec.Channel{From: p, To: o.ev.To}
		sent[c]++
		id := spec.ObsID(strconv.FormatUint(sent[c], 10))
		if o.ev.ID != nil {
			id = *o.ev.ID
		}
		if err := d.tab.add(c, id, sentMsg{seq: sent[c], amount: *o.ev.Amount}, o.where()); err != nil {
			return err
		}
	}
	return nil
}

// silentNodes are the nodes that record but log no marker events at
// all (no marker_send, marker_recv or marker_drop line): their marker
// receipts are derived. A node that logs its marker sends but no
// receipts received none.
func silentNodes(run *OutsiderRun) map[spec.ProcID]bool {
	logs, records := map[spec.ProcID]bool{}, map[spec.ProcID]bool{}
	for _, inc := range run.incs {
		for p, obs := range inc.nodes {
			for _, o := range obs {
				logs[p] = logs[p] || isMarkerObs(o.ev.Ev)
				records[p] = records[p] || o.ev.Ev == spec.ObsRecord
			}
		}
	}
	out := map[spec.ProcID]bool{}
	for p := range records {
		if !logs[p] {
			out[p] = true
		}
	}
	return out
}

// isMarkerObs reports whether an observation of kind k is about a
// marker: marker_send, marker_recv or marker_drop.
func isMarkerObs(k spec.ObsKind) bool {
	return k == spec.ObsMarkerRecv || k == spec.ObsMarkerDrop || k == spec.ObsMarkerSend
}

// nodeRecords reports whether a node's observations obs record snapshot
// s or receive its marker.
func nodeRecords(obs []obsAt, s spec.ObsID) bool {
	return slices.ContainsFunc(obs, func(o obsAt) bool {
		return o.ev.Snap != nil && *o.ev.Snap == s && (o.ev.Ev == spec.ObsRecord || o.ev.Ev == spec.ObsMarkerRecv)
	})
}
