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
// Asked for with -faults (they are not in "all"; "disk" is the four),
// disk faults put each member's data dir on its own faultfs mount
// (internal/faultfs, FUSE: they need /dev/fuse and root, and are skipped,
// saying so, without): fsync-stall, disk-eio, disk-full and power-loss;
// see diskfaults.go.
//
// Built with -tags failpoints (cairn too, then), two more fault kinds arm
// cairn's failpoints on one member: crashpoint (a crash at a step of the
// WAL, the apply, the backend, a defragmentation or a compaction, then a
// restart) and watchdelay (watch responses held before they are sent while
// the store is compacted every second); see scenarios_failpoints.go.
//
// `go test ./e2e/robustness/` runs the short version (a few runs of 25 s per
// server). Flags (after the package, or as ROBUSTNESS_* variables) shape
// longer runs: -seed, -runs, -duration, -faults, -server, -out,
// -compact-every; see scripts/robustness.sh and RELIABILITY.md.
package robustness
