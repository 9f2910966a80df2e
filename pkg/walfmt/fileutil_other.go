//go:build !linux

package walfmt

import (
	"errors"
	"os"
)

func fallocate(*os.File, int64) error { return errors.ErrUnsupported }

func datasync(f *os.File) error { return f.Sync() }
