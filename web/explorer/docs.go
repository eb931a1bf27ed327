package explorer

import (
	"bufio"
	"io"
	"regexp"
	"strings"

	"github.com/markerwave/markerwave/spec"
)

// DocsBase is where the page links a property's argument: the repository's
// docs/properties.md, one section (Anchor) a property. A build may point
// it elsewhere (a fork, a release tag) with
// -ldflags "-X github.com/markerwave/markerwave/web/explorer.DocsBase=URL".
var DocsBase = "https://github.com/markerwave/markerwave/blob/main/docs/properties.md"

// DocsFile is the file DocsBase names, in the repository.
const DocsFile = "docs/properties.md"

// PropertyDoc is what the page says of a property before the model runs:
// its name, where the spec defines it, and in one sentence what it says;
// docs/properties.md (at Anchor) says why it holds and what breaks it.
type PropertyDoc struct {
	Name   spec.Property `json:"name"`
	Where  string        `json:"where"`
	Says   string        `json:"says"`
	Anchor string        `json:"anchor"`
}

// PropertyDocs are the properties the page shows, in the order of the
// specs: tla/ChandyLamport.tla's, tla/ChandyLamportFaults.tla's,
// tla/BarrierSnapshots.tla's, then tla/BarrierAdaptive.tla's.
var PropertyDocs = []PropertyDoc{
	doc(spec.PropTypeOK, "tla/ChandyLamport.tla:267", "every variable stays in its type"),
	doc(spec.PropConsistentCut, "tla/ChandyLamport.tla:287", "no orphan message: nothing received before the receiver's cut was sent after the sender's"),
	doc(spec.PropExactChannelState, "tla/ChandyLamport.tla:297", "a channel's recording holds exactly the messages in flight across the cut, in order"),
	doc(spec.PropConservation, "tla/ChandyLamport.tla:306", "a complete snapshot holds all the money: balances plus transfers in flight"),
	doc(spec.PropChandyLamportTheorem, "tla/ChandyLamport.tla:325", "the recorded state is reachable from the initial state, and the current state from it"),
	doc(spec.PropStableCatalogue, "tla/ChandyLamport.tla:344", "a stable predicate true in a complete snapshot is true now; false there, it was false initially"),
	doc(spec.PropSnapshotsComplete, "tla/ChandyLamport.tla:355", "every initiated snapshot eventually completes (liveness)"),
	doc(spec.PropFaultTypeOK, "tla/ChandyLamportFaults.tla:245", "TypeOK, and the failure variables stay in their types"),
	doc(spec.PropMoneyConserved, "tla/ChandyLamportFaults.tla:258", "balances and transfers in flight hold the initial money, across crashes and recoveries"),
	doc(spec.PropExactlyOnce, "tla/ChandyLamportFaults.tla:262", "no transfer is applied twice or lost"),
	doc(spec.PropTheoremUnlessAborted, "tla/ChandyLamportFaults.tla:269", "the Chandy-Lamport theorem for every snapshot not aborted"),
	doc(spec.PropAbortSound, "tla/ChandyLamportFaults.tla:276", "an aborted snapshot never completes, and its cause is suspected"),
	doc(spec.PropRecoveredFromComplete, "tla/ChandyLamportFaults.tla:280", "every recovery restores a complete snapshot"),
	doc(spec.PropRecoveryReachable, "tla/ChandyLamportFaults.tla:284", "the state every incarnation started from is reachable"),
	doc(spec.PropSnapshotsEnd, "tla/ChandyLamportFaults.tla:287", "every initiated snapshot eventually completes or is aborted (liveness)"),
	// The barrier snapshots' (BarrierScenarios).
	doc(spec.PropBarrierTypeOK, "tla/BarrierSnapshots.tla:318", "every variable stays in its type: queues of records and barriers, node and edge sets in the graph"),
	doc(spec.PropBarrierConsistentCut, "tla/BarrierSnapshots.tla:335", "no node's cut counts a record its sender sent after its own cut"),
	doc(spec.PropBarrierExactChannelState, "tla/BarrierSnapshots.tla:341", "a done edge's channel state is exactly the records sent before its sender's cut and taken after its receiver's"),
	doc(spec.PropAlignedNoChannelState, "tla/BarrierSnapshots.tla:348", "aligned snapshots record channel state on back-edges only"),
	doc(spec.PropBarrierSnapshotReachable, "tla/BarrierSnapshots.tla:353", "a complete snapshot is a state the application reaches: the shadow run of what each node had done at its cut"),
	doc(spec.PropBarrierExactlyOnce, "tla/BarrierSnapshots.tla:360", "the sink receives each record at most once, and exactly once when the run drained, restored or not"),
	doc(spec.PropBarriersComplete, "tla/BarrierSnapshots.tla:366", "once a source injected its barrier, the snapshot eventually completes (liveness)"),
	doc(spec.PropAdaptiveTypeOK, "tla/BarrierAdaptive.tla:216", "BarrierTypeOK, and mode, reported and cutAligned in their types"),
	doc(spec.PropUnswitchedNoChannelState, "tla/BarrierAdaptive.tla:227", "an edge neither of whose ends switched records no channel state"),
	doc(spec.PropForceAlignedNoChannelState, "tla/BarrierAdaptive.tla:231", "a force-aligned edge never carries channel state"),
	doc(spec.PropReportedTypeTaken, "tla/BarrierAdaptive.tla:234", "each node that recorded reported the type of snapshot it took"),
}

func doc(p spec.Property, where, says string) PropertyDoc {
	return PropertyDoc{Name: p, Where: where, Says: says, Anchor: Anchor(p)}
}

// DocumentedAnchor is Anchor(p) if PropertyDocs documents p, else "".
func DocumentedAnchor(p spec.Property) string {
	for _, d := range PropertyDocs {
		if d.Name == p {
			return d.Anchor
		}
	}
	return ""
}

// Anchor is property p's section in docs/properties.md: its heading is
// the property's name, which GitHub's anchor lowercases.
func Anchor(p spec.Property) string { return strings.ToLower(string(p)) }

// DocAnchors are the anchors of a markdown file's headings, as GitHub
// makes them: lowercased, punctuation but hyphens and underscores
// dropped, spaces made hyphens. The tests check Anchor against
// docs/properties.md with it.
func DocAnchors(md io.Reader) (map[string]bool, error) {
	out := map[string]bool{}
	sc := bufio.NewScanner(md)
	fence := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if h, ok := strings.CutPrefix(line, "#"); ok && !fence {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out, sc.Err()
}

var anchorDrop = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
