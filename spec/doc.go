// Package spec is markerwave's shared vocabulary: process and snapshot ids,
// topologies, trace events and global states, named as in
// tla/ChandyLamport.tla. The model (model/), the implementation (impl/) and
// the conformance suite (conformance/) all speak it; it imports none of them.
package spec
