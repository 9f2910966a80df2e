package backend

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropStep is how much of a retired file's map dropMappedPages lets go of
// in one call.
const dropStep = 16 << 20

// dropMappedPages lets go of the pages of db's map, a slice at a time,
// before db is closed; nothing may write to db any more. Unmapping a map
// with gigabytes of pages in it holds the process's lock on its memory map
// for as long as it takes them down (100–130 ms at 3.7 GB), and every
// thread that touched a page not yet mapped for it waited that long: a
// member holding 10 million keys stopped answering for the whole unmap
// after a defragmentation. MADV_DONTNEED takes that lock shared, a slice
// at a time; a reader still on the old file finds its pages again in the
// page cache.
//
// Only the pages in use are dropped: bbolt maps at least those, but the
// file may be longer than the map (bbolt grows it ahead), and advice past
// the map's end would fall on whatever is mapped after it.
func dropMappedPages(db *bolt.DB) {
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return
	}
	base := db.Info().Data
	for off := int64(0); off < size; off += dropStep {
		n := min(dropStep, size-off)
		// No unsafe.Pointer: the range is the kernel's to look at, not Go's.
		syscall.Syscall(syscall.SYS_MADVISE, base+uintptr(off), uintptr(n), syscall.MADV_DONTNEED)
	}
}
