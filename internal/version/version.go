// Package version holds the version of cairn and of the etcd API it speaks.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

const (
	// Version is cairn's own release.
	Version = "0.1.0"
	// APIVersion is the etcd v3 API level cairn is compatible with.
	APIVersion = "3.7"
	// StorageVersion is written to the meta bucket, as etcd 3.7 does.
	StorageVersion = "3.7.0"
	// ServerVersion is the etcd release whose API and behaviour cairn
	// matches; Maintenance.Status reports it so that clients that check
	// versions treat cairn as that etcd.
	ServerVersion = "3.7.3"
)

// GitCommit is the VCS revision the binary was built from, or "unknown".
func GitCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && rev != "unknown" {
		rev += "-dirty"
	}
	return rev
}

// String is the multi-line text printed by `cairn --version`.
func String() string {
	return fmt.Sprintf("cairn Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\nAPI version: %s\n",
		Version, GitCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH, APIVersion)
}
