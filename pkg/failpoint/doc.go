// Package failpoint holds crash and delay points: calls to Hit("name")
// placed in the code at the step they interrupt, which kill the process
// there, or hold it for a while, when the binary is built with the
// failpoints build tag and the CAIRN_FAILPOINTS environment variable arms
// that name.
//
// Without the tag Hit is an empty function that the compiler inlines away:
// a normal build pays nothing for the points (see BenchmarkHit).
//
// With the tag, CAIRN_FAILPOINTS is read once, at the first Hit. It is a list
// of name=action separated by ';' or ',', where action is
//
//	crash              kill the process at the first hit of the point
//	crash@N            kill it at the Nth hit (N >= 1)
//	sleep(DURATION)    sleep DURATION (time.ParseDuration: 100ms, 2s) at every hit
//	sleep(DURATION)@N  sleep at the Nth hit only
//	N*sleep(DURATION)  sleep at the first N hits
//
// for example CAIRN_FAILPOINTS='walBeforeFsync=crash;backendAfterCommit=crash@3'
// or CAIRN_FAILPOINTS='beforeSendWatchResponse=sleep(100ms)'.
// A crash writes "failpoint NAME: crash" to stderr and sends the process
// SIGKILL: no deferred function runs and nothing buffered is flushed, as in a
// power cut of the process (the kernel's page cache survives, as it does not
// in a real power cut). A sleep holds the goroutine that hit the point, and
// whatever locks it holds, and says nothing.
//
// The points in cairn, by the step they interrupt (those named as etcd's
// gofail points are at the step etcd's are):
//
//	walBeforeFsync, walAfterFsync              pkg/walfmt: the fsync of the WAL tail
//	raftBeforeSave, raftAfterSave              internal/server: the WAL write of a
//	                                           Ready's entries and hard state
//	raftBeforeSaveSnapshot, raftAfterSaveSnapshot
//	                                           internal/server: the .snap file write
//	backendBeforeCommit, backendAfterCommit    pkg/backend: the bbolt commit of a batch
//	applyBeforeConsistentIndex                 internal/server: an entry's writes done,
//	                                           its write transaction (which holds
//	                                           the consistent index) not yet ended
//	snapshotBeforeReceive, snapshotAfterReceive
//	                                           internal/server: the rename of a
//	                                           received <index>.snap.db
//	defragBeforeCopy                           pkg/backend: the open batch committed,
//	                                           the copy of the db not yet begun
//	defragBeforeRename                         pkg/backend: the rename of the
//	                                           defragmented copy over the db
//	compactBeforeSetFinishedCompact            pkg/store: the last batch of a
//	                                           compaction's deletes done, the
//	                                           finished compact revision not yet
//	                                           written (same transaction)
//	compactAfterSetFinishedCompact             pkg/store: that transaction ended
//	                                           (its commit is the backend's next)
//	beforeSendWatchResponse                    internal/api: a watch response of
//	                                           the store's (events, or a compacted
//	                                           watch's cancel) about to be sent on
//	                                           its stream; sleep here to slow a
//	                                           watch down
//
// etcd's compactBeforeCommitScheduledCompact, compactAfterCommitScheduledCompact,
// compactBeforeCommitBatch and compactAfterCommitBatch have no step in cairn:
// the scheduled compact revision is written in the write transaction of the
// compaction request's apply, and a compaction's batches in transactions of
// their own, all committed by the backend's batch commit
// (backendBeforeCommit, backendAfterCommit).
package failpoint

// EnvVar is the environment variable that arms points in a failpoints build.
const EnvVar = "CAIRN_FAILPOINTS"
