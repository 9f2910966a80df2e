// Package forensics is cairn's offline kit: the commands that read the data
// directory or the files of a stopped member, cairn's or etcd's, with no
// server running. dump-logs and wal verify/repair read the WAL, dump-db,
// hashkv, snapshot status and defrag --data-dir the bbolt db, snapshot
// restore writes a new data directory from a snapshot file, as etcdutl's.
//
// internal/cli puts its commands in the command tree: Commands,
// SnapshotCommands and AttachOfflineDefrag. A command's flags, its run and
// its tests are side by side here, one file (or a few with a common
// prefix) per command.
//
// It reads the formats through pkg/ (walfmt, snapfmt, store, cluster) and
// prints with internal/cliutil/printer; it may import no server, api, client
// or transport package, so the tools work whatever state the server's code
// is in, and nothing of internal/cli, the command tree above it (a test in
// the module root checks both).
package forensics
