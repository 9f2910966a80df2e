package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cairnkv/cairn/internal/version"
)

// ExecuteAs runs the binary as the program it was started as (argv[0]):
// named `etcd` it is the server, with etcd's command line (`etcd --name
// ...`, `etcd --version`, `etcd gateway start`, `etcd grpc-proxy start`);
// named `etcdctl` or `etcdutl`, or anything else,
// it is cairn, whose client and offline commands have their names, flags
// and outputs. So an etcd installation's binaries can be replaced by links
// to cairn.
func ExecuteAs(argv0 string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if name != "etcd" {
		return Execute(args, stdin, stdout, stderr)
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprint(stdout, etcdVersionText())
		return 0
	}
	if len(args) > 0 && (args[0] == "gateway" || args[0] == "grpc-proxy") {
		return Execute(args, stdin, stdout, stderr)
	}
	return Execute(append([]string{"serve"}, args...), stdin, stdout, stderr)
}

// etcdVersionText is `etcd --version` in etcd's format, for the tools that
// read the server's version from it; the line after it names cairn.
func etcdVersionText() string {
	return fmt.Sprintf("etcd Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\ncairn Version: %s\n",
		version.ServerVersion, version.GitCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, version.Version)
}
