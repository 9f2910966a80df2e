package walfmt

import (
	"os"
	"syscall"
)

// fallocate reserves disk blocks for f up to size and extends its length.
func fallocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err != syscall.EINTR {
			return err
		}
	}
}

// datasync flushes f's data (and the metadata needed to read it) to disk.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
