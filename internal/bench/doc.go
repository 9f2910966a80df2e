// Package bench is the commands that load a running cluster and measure
// it: bench (etcd's benchmark tool: put, range, txn-put, watch,
// lease-keepalive) and check perf/datascale (etcdctl's), and loadgen, the
// load generator they share with scripts/etcd-client-bench.
//
// internal/cli puts NewBenchCommand and NewCheckCommand in the command
// tree and gives them the global flags through Globals. They talk to the
// cluster through internal/client and print with internal/cliutil/printer;
// they import nothing of the server's side (server, api, transport), and
// nothing of internal/cli, the command tree above them.
package bench
