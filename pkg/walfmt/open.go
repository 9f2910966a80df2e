package walfmt

import (
	"fmt"
	"os"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Open locks and reads the WAL in dir from the segment holding snap, like
// ReadAll, and returns a Writer that appends after the last record together
// with what was read. Anything after the last good frame of the last segment
// is zeroed. Leftover .tmp files of an interrupted cut are removed.
func Open(dir string, snap Snapshot, opts Options) (*Writer, *ReadResult, error) {
	segs, err := selectSegments(dir, snap.Index)
	if err != nil {
		return nil, nil, err
	}
	w := &Writer{dir: dir, opts: opts}
	for i, s := range segs {
		flag := os.O_RDONLY
		if i == len(segs)-1 {
			flag = os.O_RDWR
		}
		f, err := os.OpenFile(s.Path, flag, 0)
		if err != nil {
			w.closeFiles()
			return nil, nil, fmt.Errorf("open wal %s: %w", s.Path, err)
		}
		w.segs = append(w.segs, openSegment{Segment: s, f: f})
		if err := tryLock(f); err != nil {
			w.closeFiles()
			return nil, nil, fmt.Errorf("open wal %s: lock: %w", s.Path, err)
		}
	}
	res, err := readSegments(segs, snap)
	if err != nil {
		w.closeFiles()
		return nil, nil, err
	}
	w.metadata, w.crc, w.lastIndex = res.tail.metadataRaw, res.tail.crc, res.tail.lastIndex
	if !isEmptyHardState(res.HardState) {
		w.state = proto.Clone(res.HardState).(*raftpb.HardState)
	}
	w.off = res.tail.endOffset
	tail := w.tail()
	if err := tail.f.Truncate(w.off); err != nil {
		w.closeFiles()
		return nil, nil, fmt.Errorf("open wal %s: truncate at %d: %w", tail.Path, w.off, err)
	}
	if err := preallocate(tail.f, opts.segmentSize()); err != nil {
		w.closeFiles()
		return nil, nil, fmt.Errorf("open wal %s: preallocate: %w", tail.Path, err)
	}
	if err := removeTempFiles(dir); err != nil {
		w.closeFiles()
		return nil, nil, fmt.Errorf("open wal %s: %w", dir, err)
	}
	return w, res, nil
}
