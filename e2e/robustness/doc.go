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
// is healthy within 5 s of each heal. RELIABILITY.md records what it found.
//
// `go test ./e2e/robustness/` runs the short version (a few runs of 25 s per
// server). Flags (after the package, or as ROBUSTNESS_* variables) shape
// longer runs: -seed, -runs, -duration, -faults, -server, -out; see
// scripts/robustness.sh and RELIABILITY.md.
package robustness
