// Package walfmt reads, verifies, writes and repairs write-ahead logs in the
// format of etcd 3.7 (member/wal/*.wal), so that cairn and etcd can read each
// other's logs.
//
// A WAL is a sequence of segment files named %016x-%016x.wal (sequence number,
// raft index the segment was cut at). A segment is a sequence of frames
// (see AppendFrame), each holding one Record. Every segment starts with a crc
// record and a metadata record; the first segment then has an empty snapshot
// record, later segments the last hard state (if there is one). The frames
// end at the end of the file or at a zero length word (preallocated space).
//
// Each record's crc is the CRC-32C of its data continued from the crc of the
// record before it (Chain), one chain from the creation of the WAL on; a crc
// record has no data and so carries the running value unchanged, which lets a
// reader that starts at a later segment pick the chain up.
//
// Reading: Decoder streams records with their file and offset and reports
// damage as *Error values; ReadAll gives what a restarting member needs.
// Writing: Create, Open and Writer. Repair truncates a torn tail.
package walfmt
