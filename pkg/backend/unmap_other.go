//go:build !linux

package backend

import bolt "go.etcd.io/bbolt"

// dropMappedPages does nothing here: see unmap_linux.go.
func dropMappedPages(*bolt.DB) {}
