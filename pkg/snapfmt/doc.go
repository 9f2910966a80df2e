// Package snapfmt reads and writes the snapshot files of an etcd 3.7 data
// directory: raft snapshots (member/snap/%016x-%016x.snap, term and index),
// and the bbolt snapshot files of `snapshot save`, which carry a sha256
// trailer.
//
// A .snap file is the protobuf message {uint32 crc = 1; bytes data = 2} where
// data is a marshalled raftpb.Snapshot and crc is the CRC-32C of data.
package snapfmt
