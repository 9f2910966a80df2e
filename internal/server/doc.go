// Package server is one cairn member: the raft loop, WAL and snapshot
// persistence, the apply loop, read index, membership, lease expiry, alarms
// and quotas. It owns the member's goroutines; internal/api calls into it.
// Its configuration is internal/memberconfig's.
package server
