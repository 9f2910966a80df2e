package server

import (
	"fmt"

	"github.com/cairnkv/cairn/pkg/store"
)

// bootstrapDefrag is --bootstrap-defrag-threshold-megabytes: before the
// member starts, the db is defragmented if that would free at least the
// threshold, as in etcd (which logs "Skipping defragmentation" otherwise).
func (s *Server) bootstrapDefrag(st *store.Store) error {
	threshold := int64(s.cfg.BootstrapDefragThresholdMegabytes) << 20
	if threshold == 0 {
		return nil
	}
	b := st.Backend()
	size, inUse := b.Size(), b.SizeInUse()
	if size-inUse < threshold {
		s.log.Info("Skipping defragmentation", "current-db-size-bytes", size, "current-db-size-in-use-bytes", inUse,
			"bootstrap-defrag-threshold-bytes", threshold)
		return nil
	}
	if err := b.Defrag(); err != nil {
		return fmt.Errorf("bootstrap defragmentation: %w", err)
	}
	s.log.Info("defragmented the db at start", "db-size-bytes-before", size, "db-size-bytes-after", b.Size(),
		"bootstrap-defrag-threshold-bytes", threshold)
	return nil
}
