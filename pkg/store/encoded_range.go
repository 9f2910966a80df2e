package store

import (
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cairnkv/cairn/pkg/backend"
	"github.com/cairnkv/cairn/pkg/keyindex"
)

// Field numbers of etcd's RangeResponse and KeyValue messages.
const (
	rangeResponseKvs   = 2
	rangeResponseMore  = 3
	rangeResponseCount = 4

	keyValueKey            = 1
	keyValueCreateRevision = 2
	keyValueModRevision    = 3
	keyValueVersion        = 4
)

// EncodedRangeOK says whether RangeEncoded can answer req: the key-values
// must come in key order with no revision filter, since sorting and
// filtering need them decoded.
func EncodedRangeOK(req *pb.RangeRequest) bool {
	natural := req.SortTarget == pb.RangeRequest_KEY &&
		(req.SortOrder == pb.RangeRequest_NONE || req.SortOrder == pb.RangeRequest_ASCEND)
	return natural && req.MinModRevision == 0 && req.MaxModRevision == 0 &&
		req.MinCreateRevision == 0 && req.MaxCreateRevision == 0
}

// RangeEncoded answers req as Range does, but as the protobuf bytes of the
// RangeResponse, appended to dst, without the header (a field may come in
// any order: the caller appends the header after). It returns the store's
// revision for that header. The key-values go from the backend into the
// answer as they are stored there, the KeyValue messages etcd's clients
// decode, so nothing is decoded and encoded again and the answer is held
// once, in its final form, instead of as key-values and then as bytes.
// req must satisfy EncodedRangeOK.
func (s *Store) RangeEncoded(req *pb.RangeRequest, dst []byte) ([]byte, int64, error) {
	if len(req.Key) == 0 {
		return dst, 0, ErrEmptyKey
	}
	if !EncodedRangeOK(req) {
		return dst, 0, fmt.Errorf("range %q: sorted or filtered: not encodable as stored", req.Key)
	}
	r := s.Read()
	defer r.End()
	r.ranges++
	curRev := r.rev
	rev, err := readRev(req.Revision, curRev, r.compactRev)
	if err != nil {
		return dst, curRev, err
	}
	if req.CountOnly {
		return appendCount(dst, int64(s.index.CountAt(req.Key, req.RangeEnd, rev))), curRev, nil
	}
	limit := int(req.Limit)
	if limit > 0 {
		limit++ // one more, to learn whether there are more
	}
	var more bool
	var total int
	if req.KeysOnly {
		// Each key is encoded as the index walk reaches it, while its
		// keyIndex and bytes are still cached.
		taken, last := 0, 0
		total = s.index.VisitAt(req.Key, req.RangeEnd, rev, limit, func(ka keyindex.KeyAt) {
			last = len(dst)
			dst = appendKeyOnly(dst, &ka)
			taken++
		})
		if more = req.Limit > 0 && int64(taken) > req.Limit; more {
			dst = dst[:last]
		}
	} else {
		var mods []Revision
		mods, total = s.index.ModRevisionsAt(req.Key, req.RangeEnd, rev, limit)
		if more = req.Limit > 0 && int64(len(mods)) > req.Limit; more {
			mods = mods[:req.Limit]
		}
		if dst, err = appendStoredKVs(dst, mods, r.rt); err != nil {
			return dst, curRev, fmt.Errorf("range %q at %d: %w", req.Key, rev, err)
		}
	}
	if more {
		dst = protowire.AppendTag(dst, rangeResponseMore, protowire.VarintType)
		dst = protowire.AppendVarint(dst, 1)
	}
	return appendCount(dst, int64(total)), curRev, nil
}

func appendCount(dst []byte, count int64) []byte {
	if count == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, rangeResponseCount, protowire.VarintType)
	return protowire.AppendVarint(dst, uint64(count))
}

// appendKeyOnly appends the key-value of ka in a keys-only range: its key,
// create and mod revision and version, without its value or lease, as etcd
// answers it.
func appendKeyOnly(dst []byte, ka *keyindex.KeyAt) []byte {
	fields := [...]struct {
		num protowire.Number
		v   int64
	}{{keyValueCreateRevision, ka.Created.Main}, {keyValueModRevision, ka.Mod.Main}, {keyValueVersion, ka.Version}}
	size := protowire.SizeTag(keyValueKey) + protowire.SizeBytes(len(ka.Key))
	for _, f := range fields {
		if f.v != 0 {
			size += protowire.SizeTag(f.num) + protowire.SizeVarint(uint64(f.v))
		}
	}
	dst = protowire.AppendTag(dst, rangeResponseKvs, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(size))
	dst = protowire.AppendBytes(protowire.AppendTag(dst, keyValueKey, protowire.BytesType), ka.Key)
	for _, f := range fields {
		if f.v != 0 {
			dst = protowire.AppendVarint(protowire.AppendTag(dst, f.num, protowire.VarintType), uint64(f.v))
		}
	}
	return dst
}

// grow makes room in dst for n more bytes, and for the few fields that
// follow the key-values (more, count, the header), in one allocation.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	grown := make([]byte, len(dst), len(dst)+n+64)
	copy(grown, dst)
	return grown
}

// appendStoredKVs appends the stored KeyValue of each revision of mods,
// read from the key bucket of rt: sized first, so that dst grows once.
func appendStoredKVs(dst []byte, mods []Revision, rt *backend.ReadTx) ([]byte, error) {
	vals, err := storedValues(len(mods), func(i int) Revision { return mods[i] }, rt)
	if err != nil {
		return dst, err
	}
	size := 0
	for _, v := range vals {
		size += protowire.SizeTag(rangeResponseKvs) + protowire.SizeBytes(len(v))
	}
	dst = grow(dst, size)
	for _, v := range vals {
		dst = protowire.AppendBytes(protowire.AppendTag(dst, rangeResponseKvs, protowire.BytesType), v)
	}
	return dst, nil
}
