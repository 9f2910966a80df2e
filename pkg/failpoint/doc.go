// Package failpoint holds crash points: calls to Hit("name") placed in the
// code at the step they interrupt, which kill the process there when the
// binary is built with the failpoints build tag and the CAIRN_FAILPOINTS
// environment variable arms that name.
//
// Without the tag Hit is an empty function that the compiler inlines away:
// a normal build pays nothing for the points (see BenchmarkHit).
//
// With the tag, CAIRN_FAILPOINTS is read once, at the first Hit. It is a list
// of name=action separated by ';' or ',', where action is
//
//	crash     kill the process at the first hit of the point
//	crash@N   kill it at the Nth hit (N >= 1)
//
// for example CAIRN_FAILPOINTS='walBeforeFsync=crash;backendAfterCommit=crash@3'.
// A crash writes "failpoint NAME: crash" to stderr and sends the process
// SIGKILL: no deferred function runs and nothing buffered is flushed, as in a
// power cut of the process (the kernel's page cache survives, as it does not
// in a real power cut).
//
// The points in cairn, by the step they interrupt:
//
//	walBeforeFsync, walAfterFsync              pkg/walfmt: the fsync of the WAL tail
//	raftBeforeSaveSnapshot, raftAfterSaveSnapshot
//	                                           internal/server: the .snap file write
//	backendBeforeCommit, backendAfterCommit    pkg/store: the bbolt commit of a batch
//	applyBeforeConsistentIndex                 internal/server: an entry's writes done,
//	                                           its write transaction (which holds
//	                                           the consistent index) not yet ended
//	snapshotBeforeReceive, snapshotAfterReceive
//	                                           internal/server: the rename of a
//	                                           received <index>.snap.db
//	defragBeforeRename                         pkg/store: the rename of the
//	                                           defragmented copy over the db
package failpoint

// EnvVar is the environment variable that arms points in a failpoints build.
const EnvVar = "CAIRN_FAILPOINTS"
