// Package auth is a member's authentication and authorization state: users
// with hashed passwords, roles with key permissions, the root user and role
// rules, whether authentication is enabled and the auth revision, all kept
// in the db's auth, authUsers and authRoles buckets exactly as etcd writes
// them; and the token providers of --auth-token: etcd's "simple" tokens
// and JWTs (signed and checked with the standard library only: RS*, PS*,
// ES*, EdDSA and HS* as etcd accepts them).
//
// A Store holds that state in memory and changes it only through Apply,
// which the member's apply loop calls for each committed Auth* request with
// the write transaction of its raft entry, so that the auth buckets move
// with the consistent index. Permission checks (IsRangePermitted,
// IsPutPermitted, ...) may be called from any goroutine.
package auth
