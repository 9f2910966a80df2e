// Command cairn is the etcd-compatible key-value store: server, client and
// offline forensics kit in one binary.
package main

import (
	"os"

	"github.com/cairnkv/cairn/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
