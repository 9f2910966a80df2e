// Package kvcodec encodes and decodes mvccpb.KeyValue, the value of each
// revision in a db's key bucket, by hand: exactly the bytes of
// proto.Marshal (fields in number order, zero values left out), without
// reflection, on the path of every write, every read and the index rebuild.
package kvcodec

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of mvccpb.KeyValue.
const (
	kvFieldKey            = 1
	kvFieldCreateRevision = 2
	kvFieldModRevision    = 3
	kvFieldVersion        = 4
	kvFieldValue          = 5
	kvFieldLease          = 6
)

// Append appends the protobuf encoding of kv to dst.
func Append(dst []byte, kv *mvccpb.KeyValue) []byte {
	appendBytes := func(num protowire.Number, v []byte) {
		if len(v) > 0 {
			dst = protowire.AppendTag(dst, num, protowire.BytesType)
			dst = protowire.AppendBytes(dst, v)
		}
	}
	appendInt := func(num protowire.Number, v int64) {
		if v != 0 {
			dst = protowire.AppendTag(dst, num, protowire.VarintType)
			dst = protowire.AppendVarint(dst, uint64(v))
		}
	}
	appendBytes(kvFieldKey, kv.Key)
	appendInt(kvFieldCreateRevision, kv.CreateRevision)
	appendInt(kvFieldModRevision, kv.ModRevision)
	appendInt(kvFieldVersion, kv.Version)
	appendBytes(kvFieldValue, kv.Value)
	appendInt(kvFieldLease, kv.Lease)
	return dst
}

// Marshal returns the protobuf encoding of kv.
func Marshal(kv *mvccpb.KeyValue) []byte {
	return Append(make([]byte, 0, len(kv.Key)+len(kv.Value)+32), kv)
}

// Unmarshal decodes data into kv, which it resets first. Key and
// Value are copies, so data may be reused. Unknown fields are skipped.
func Unmarshal(data []byte, kv *mvccpb.KeyValue) error {
	if err := Decode(data, kv); err != nil {
		return err
	}
	kv.Key = append([]byte(nil), kv.Key...)
	kv.Value = append([]byte(nil), kv.Value...)
	return nil
}

// Decode is Unmarshal with Key and Value in data, not copied.
func Decode(data []byte, kv *mvccpb.KeyValue) error {
	kv.Reset()
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("decode KeyValue: %w", protowire.ParseError(n))
		}
		if num > protowire.MaxValidNumber {
			return fmt.Errorf("decode KeyValue: field number %d out of range", num)
		}
		data = data[n:]
		switch {
		case (num == kvFieldKey || num == kvFieldValue) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(data)
			if n < 0 {
				return fmt.Errorf("decode KeyValue field %d: %w", num, protowire.ParseError(n))
			}
			if num == kvFieldKey {
				kv.Key = v
			} else {
				kv.Value = v
			}
			data = data[n:]
		case num >= kvFieldCreateRevision && num <= kvFieldLease && num != kvFieldValue && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(data)
			if n < 0 {
				return fmt.Errorf("decode KeyValue field %d: %w", num, protowire.ParseError(n))
			}
			switch num {
			case kvFieldCreateRevision:
				kv.CreateRevision = int64(v)
			case kvFieldModRevision:
				kv.ModRevision = int64(v)
			case kvFieldVersion:
				kv.Version = int64(v)
			case kvFieldLease:
				kv.Lease = int64(v)
			}
			data = data[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return fmt.Errorf("decode KeyValue field %d: %w", num, protowire.ParseError(n))
			}
			data = data[n:]
		}
	}
	return nil
}
