// Package lease is cairn's lessor: it grants, revokes and renews leases,
// tracks their expiry on the primary (the member that is raft leader), and
// produces lease checkpoints, with etcd's semantics.
//
// The lessor owns no goroutines. The server drives it:
//
//   - from the apply loop, in log order, with the store write transaction of
//     the entry being applied: Grant, Revoke, Checkpoint (so a lease record
//     lands in the same backend batch as the raft index);
//   - from its leadership changes: Promote when this member becomes leader,
//     Demote when it stops being leader;
//   - from its own loop, every TickInterval: Tick returns the leases that have
//     expired, for the server to propose LeaseRevoke; CheckpointsDue returns
//     the checkpoints to propose as LeaseCheckpoint;
//   - from the API: Renew (keepalive, primary only), TimeToLive, Leases,
//     Lookup;
//   - after a restart or a snapshot install: Recover, from the store's lease
//     bucket.
//
// Only the primary tracks expiry; on the others every lease lives forever
// until a LeaseRevoke is applied. Time comes from Config.Now, so that tests
// can drive expiry with a fake clock.
package lease
