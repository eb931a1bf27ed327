//go:build !unix

package engine

// allocSlots returns n zeroed fingerprint slots.
func allocSlots(n int) []uint64 { return make([]uint64, n) }

// freeSlots leaves slots to the garbage collector.
func freeSlots([]uint64) {}
