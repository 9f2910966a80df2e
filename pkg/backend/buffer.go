package backend

import (
	"bytes"
	"slices"
)

// writeBuffer holds the writes of the open batch, which bbolt readers cannot
// see until it commits. Readers consult it before bbolt so that a write is
// visible as soon as it is applied.
type writeBuffer struct {
	buckets map[string]*bucketBuffer
}

type bucketBuffer struct {
	entries map[string]bufferedValue
	keys    []string // in insertion order; sorted while appends are ascending
	sorted  bool
}

// bufferedValue is a pending value, or a pending deletion.
type bufferedValue struct {
	value   []byte
	deleted bool
}

func newWriteBuffer() *writeBuffer {
	return &writeBuffer{buckets: make(map[string]*bucketBuffer)}
}

func (wb *writeBuffer) bucket(name []byte) *bucketBuffer {
	bb := wb.buckets[string(name)]
	if bb == nil {
		bb = &bucketBuffer{entries: make(map[string]bufferedValue), sorted: true}
		wb.buckets[string(name)] = bb
	}
	return bb
}

func (wb *writeBuffer) set(bucket, key []byte, v bufferedValue) {
	bb := wb.bucket(bucket)
	k := string(key)
	if _, seen := bb.entries[k]; !seen {
		if n := len(bb.keys); n > 0 && bb.keys[n-1] >= k {
			bb.sorted = false
		}
		bb.keys = append(bb.keys, k)
	}
	bb.entries[k] = v
}

func (wb *writeBuffer) get(bucket, key []byte) (bufferedValue, bool) {
	bb := wb.buckets[string(bucket)]
	if bb == nil {
		return bufferedValue{}, false
	}
	v, ok := bb.entries[string(key)]
	return v, ok
}

// sortedKeysIn returns the buffered keys of bucket in [start, end) in order
// (end nil: no upper bound).
func (wb *writeBuffer) sortedKeysIn(bucket, start, end []byte) []string {
	bb := wb.buckets[string(bucket)]
	if bb == nil {
		return nil
	}
	keys := bb.keys
	if !bb.sorted {
		keys = slices.Clone(keys)
		slices.Sort(keys)
	}
	lo, _ := slices.BinarySearch(keys, string(start))
	hi := len(keys)
	if end != nil {
		hi, _ = slices.BinarySearch(keys, string(end))
	}
	if lo >= hi {
		return nil
	}
	return slices.Clone(keys[lo:hi])
}

// bucketNames returns the buffer's buckets, in order.
func (wb *writeBuffer) bucketNames() []string {
	names := make([]string, 0, len(wb.buckets))
	for name := range wb.buckets {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// sortedKeys returns the bucket's keys in order, to be read only.
func (bb *bucketBuffer) sortedKeys() []string {
	if bb.sorted {
		return bb.keys
	}
	return slices.Sorted(slices.Values(bb.keys))
}

func (wb *writeBuffer) len() int {
	n := 0
	for _, bb := range wb.buckets {
		n += len(bb.entries)
	}
	return n
}

// inRange reports whether key is in [start, end) (end nil: no upper bound).
func inRange(key, start, end []byte) bool {
	return bytes.Compare(key, start) >= 0 && (end == nil || bytes.Compare(key, end) < 0)
}
