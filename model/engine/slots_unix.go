//go:build unix

package engine

import (
	"syscall"
	"unsafe"
)

// allocSlots returns n zeroed fingerprint slots in anonymous memory
// outside the Go heap: the fingerprint set is most of a large search's
// memory and lives until its end, so on the heap it would double the
// garbage collector's goal (GOGC) for nothing; it holds no pointers.
func allocSlots(n int) []uint64 {
	b, err := syscall.Mmap(-1, 0, 8*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]uint64, n) // the heap's own out-of-memory handling then applies
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n)
}

// freeSlots releases slots from allocSlots.
func freeSlots(s []uint64) {
	if len(s) == 0 {
		return
	}
	// A slice from make (allocSlots' fallback) is not a mapping: Munmap
	// fails with EINVAL and the garbage collector frees it.
	syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 8*len(s)))
}
