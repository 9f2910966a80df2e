// Package serve is `cairn serve`, which is also `etcd` itself when the
// binary runs under that name: etcd's server flags (flags.go), its config
// file (configfile.go), the ETCD_* and CAIRN_* variables, the member's log
// (etcd's zap lines, rotation in logrotate.go), and the start and stop of
// a member: internal/server with internal/api serving it.
//
// It may import the server side (internal/server, internal/api,
// internal/servertls, internal/listen) and internal/discovery, which
// reaches a discovery cluster as its client before the member starts.
package serve
