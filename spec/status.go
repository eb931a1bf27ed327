package spec

// Status is a channel's recording status in one snapshot: Status ==
// {"idle", "recording", "done"} of tla/ChandyLamport.tla (line 60, a
// channel's) and tla/BarrierSnapshots.tla (line 82, an edge's). The
// model, the Chandy-Lamport core (impl/core) and the dataflow core
// (impl/dataflow) all use this one type.
type Status uint8

// The statuses, in the order a channel goes through them.
const (
	// Idle: the receiver has not recorded its state for the snapshot yet
	// (recChan's initial value, tla/ChandyLamport.tla line 150,
	// tla/BarrierSnapshots.tla line 159).
	Idle Status = iota
	// Recording: the receiver recorded and awaits the channel's marker
	// (barrier); what arrives before it is the channel's state.
	Recording
	// Done: the marker (barrier) arrived, or the channel was recorded
	// empty.
	Done
)

// String is the status as the specs spell it.
func (s Status) String() string {
	switch s {
	case Idle:
		return "idle"
	case Recording:
		return "recording"
	case Done:
		return "done"
	}
	return "status(?)"
}
