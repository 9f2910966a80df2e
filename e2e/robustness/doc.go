// Package robustness runs a three-member cluster (cairn, or etcd 3.7.3 as the
// control) under client load while it injects faults on a schedule fixed by a
// seed: kill -9 and restart, SIGSTOP/SIGCONT, isolation of a member behind
// the suite's own peer proxies, dropped and delayed peer connections, a
// graceful restart of the leader and, when asked for, the replacement of a
// follower through a learner. It then checks what the clients saw: the
// history is linearizable (porcupine, with a model of the keys and the store
// revision), no acknowledged write is lost, every watcher received every
// revision once, in order and atomically, require-leader watches on an
// isolated member are cancelled with "etcdserver: no leader", and every member
// is healthy within 5 s of each heal. Once the members have stopped, their
// WALs must agree: two members holding a committed entry at one index hold
// the same entry. When the store is compacted during the load
// (-compact-every, or a fault kind that needs it), a watch may end
// cancelled as compacted and go on from the compact revision, but never
// skip a revision otherwise; every member's HashKV at the end agrees, and
// every compaction is finished in every member's db. A client per member
// keeps a lease with a TTL of 5 s alive through it for the whole run: no
// such lease may be lost while its keep-alives were being answered, or
// while no fault touched its member (leases.go). RELIABILITY.md records
// what it found.
//
// Disk faults (-faults disk, not in "all") put each member's data dir on a
// faultfs mount (FUSE; skipped, saying so, without): see diskfaults.go.
//
// Built with -tags failpoints (cairn too, then), two more fault kinds arm
// cairn's failpoints on one member: crashpoint (a crash at a step of the
// WAL, the apply, the backend, a defragmentation or a compaction, then a
// restart) and watchdelay (watch responses held before they are sent while
// the store is compacted every second); see scenarios_failpoints.go.
//
// `go test ./e2e/robustness/` runs the short version; scripts/robustness.sh
// and RELIABILITY.md the longer ones.
package robustness
