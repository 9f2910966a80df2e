package keyindex

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkIndexRestore1MVarintKeys replays 1,000,000 puts of distinct keys
// into an empty index, as a restart does, in revision order: the keys of
// etcd's benchmark tool (the varint of the key's number, zero-padded to 8
// bytes), which that order scatters over the key space.
func BenchmarkIndexRestore1MVarintKeys(b *testing.B) {
	keys := make([][]byte, 1000000)
	for i := range keys {
		keys[i] = binary.AppendUvarint(make([]byte, 0, 8), uint64(i))[:8]
	}
	for b.Loop() {
		loader := NewLoader()
		for i, k := range keys {
			rev := int64(i + 2)
			loader.Add(k, Revision{Main: rev}, false, rev, 1)
		}
		if ti := loader.Index(); ti.Len() != len(keys) {
			b.Fatalf("%d keys", ti.Len())
		}
	}
}

// BenchmarkIndexHeap1MKeys reports the heap taken by the key index of
// 1,000,000 keys with one revision each.
func BenchmarkIndexHeap1MKeys(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ti := New()
		for i := 0; i < 1000000; i++ {
			ti.Put(fmt.Appendf(nil, "/registry/pods/ns-%03d/pod-%07d", i%1000, i), Revision{Main: int64(i + 2)})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MB-heap")
		runtime.KeepAlive(ti)
	}
}
