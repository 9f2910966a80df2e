package walfmt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// writeFullSegment writes entries shaped like etcd puts (about 100 bytes of
// data) in batches of 100, each batch with a hard state, until the first
// segment is cut, and returns that full segment.
func writeFullSegment(b *testing.B) Segment {
	b.Helper()
	_, w := newWAL(b, Options{Sync: SyncNever})
	data := []byte(fmt.Sprintf("%0100d", 0))
	index := uint64(0)
	batch := make([]*raftpb.Entry, 100)
	for len(w.Segments()) == 1 {
		for i := range batch {
			index++
			batch[i] = entry(5, index, "")
			batch[i].Data = data
		}
		if err := w.Save(hardState(5, 1, index-50), batch); err != nil {
			b.Fatal(err)
		}
	}
	seg := w.Segments()[0]
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return seg
}

// BenchmarkDecodeSegment64MB decodes a full 64 MB segment: frames, CRC chain
// and every payload.
func BenchmarkDecodeSegment64MB(b *testing.B) {
	seg := writeFullSegment(b)
	st, err := os.Stat(seg.Path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder([]Segment{seg}, DecoderOptions{})
		n := 0
		for {
			_, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		d.Close()
		b.ReportMetric(float64(n), "records/op")
	}
}

// BenchmarkSave measures one Save of 10 entries and a hard state without fsync.
func BenchmarkSave(b *testing.B) {
	_, w := newWAL(b, Options{Sync: SyncNever})
	defer w.Close()
	data := make([]byte, 100)
	batch := make([]*raftpb.Entry, 10)
	index := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			index++
			batch[i] = entry(1, index, "")
			batch[i].Data = data
		}
		if err := w.Save(hardState(1, 1, index), batch); err != nil {
			b.Fatal(err)
		}
	}
}
