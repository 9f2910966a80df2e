// Command gendocs writes cairn's shell completion scripts (completions/)
// and man pages (man/) into the source tree. `go generate ./...` runs it
// from cmd/cairn; a test in internal/cli fails when the files are stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cairnkv/cairn/internal/cli"
)

func main() {
	dir := flag.String("dir", ".", "root of the source tree")
	flag.Parse()
	if err := cli.WriteDocs(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}
