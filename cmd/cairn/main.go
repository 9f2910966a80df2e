// Command cairn is the etcd-compatible key-value store: server, client and
// offline forensics kit in one binary. Started as `etcd` it is the server
// with etcd's command line (see cli.ExecuteAs).
package main

import (
	"os"

	"github.com/cairnkv/cairn/internal/cli"
)

func main() {
	os.Exit(cli.ExecuteAs(os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
