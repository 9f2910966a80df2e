package store

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// LeaseRecord is a lease as the lease bucket stores it: key = 8-byte
// big-endian ID, value = protobuf {int64 ID = 1; int64 TTL = 2;
// int64 RemainingTTL = 3}.
type LeaseRecord struct {
	ID           int64
	TTL          int64
	RemainingTTL int64
}

// Marshal encodes r as etcd's leasepb.Lease.
func (r LeaseRecord) Marshal() []byte {
	var b []byte
	for _, f := range []struct {
		num protowire.Number
		v   int64
	}{{1, r.ID}, {2, r.TTL}, {3, r.RemainingTTL}} {
		if f.v != 0 {
			b = protowire.AppendTag(b, f.num, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(f.v))
		}
	}
	return b
}

// UnmarshalLeaseRecord decodes a value of the lease bucket.
func UnmarshalLeaseRecord(data []byte) (LeaseRecord, error) {
	var r LeaseRecord
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return r, fmt.Errorf("decode lease: %w", protowire.ParseError(n))
		}
		data = data[n:]
		if typ != protowire.VarintType || num < 1 || num > 3 {
			n = protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return r, fmt.Errorf("decode lease field %d: %w", num, protowire.ParseError(n))
			}
			data = data[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(data)
		if n < 0 {
			return r, fmt.Errorf("decode lease field %d: %w", num, protowire.ParseError(n))
		}
		data = data[n:]
		switch num {
		case 1:
			r.ID = int64(v)
		case 2:
			r.TTL = int64(v)
		case 3:
			r.RemainingTTL = int64(v)
		}
	}
	return r, nil
}

// CheckLeases has ExecPut and ExecTxn ask check about the lease of each
// put request that names one, before anything is written, and fail with
// its error: a put, or the whole txn, then changes nothing. The store keeps
// the lease bucket and which keys are attached to which lease, but does not
// decide whether a lease exists: its owner (the lessor) does. Without a
// check, any lease ID is taken.
func (w *WriteTxn) CheckLeases(check func(id int64) error) { w.leaseCheck = check }

// checkLease runs the lease check on a put's lease (0: none).
func (w *WriteTxn) checkLease(id int64) error {
	if id == 0 || w.leaseCheck == nil {
		return nil
	}
	return w.leaseCheck(id)
}

// PutLease records a lease in the lease bucket, in this transaction's batch.
func (w *WriteTxn) PutLease(r LeaseRecord) error {
	if err := w.wt.Put(BucketLease, encodeUint64(uint64(r.ID)), r.Marshal()); err != nil {
		w.err = err
		return err
	}
	return nil
}

// DeleteLeaseRecord removes a lease from the lease bucket.
func (w *WriteTxn) DeleteLeaseRecord(id int64) error {
	if err := w.wt.Delete(BucketLease, encodeUint64(uint64(id))); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Leases returns every lease recorded in the lease bucket.
func (s *Store) Leases() ([]LeaseRecord, error) {
	rt := s.b.Read()
	defer rt.Close()
	var out []LeaseRecord
	var decodeErr error
	err := rt.Range(BucketLease, nil, nil, func(k, v []byte) bool {
		r, err := UnmarshalLeaseRecord(v)
		if err != nil {
			decodeErr = fmt.Errorf("lease %x: %w", k, err)
			return false
		}
		out = append(out, r)
		return true
	})
	if err == nil {
		err = decodeErr
	}
	return out, err
}

// LeaseKeys returns the live keys attached to a lease.
func (s *Store) LeaseKeys(id int64) []string { return s.leases.keysOf(id) }
