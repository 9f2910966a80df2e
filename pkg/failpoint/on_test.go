//go:build failpoints && unix

package failpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes the test binary, started again by TestCrash, run the
// hits instead of the tests.
const helperEnv = "FAILPOINT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		for i := 1; i <= 5; i++ {
			Hit("other")
			Hit("p")
			fmt.Printf("survived hit %d\n", i)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(t *testing.T, spec string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1", EnvVar+"="+spec)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func TestCrashAtNthHit(t *testing.T) {
	stdout, stderr, err := runHelper(t, "p=crash@3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper: %v, want killed", err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want SIGKILL", ws)
	}
	if want := "survived hit 1\nsurvived hit 2\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if !strings.Contains(stderr, "failpoint p: crash (hit 3)") {
		t.Errorf("stderr %q does not name the point", stderr)
	}
}

func TestUnarmedPointsPass(t *testing.T) {
	stdout, _, err := runHelper(t, "")
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if strings.Count(stdout, "survived") != 5 {
		t.Errorf("stdout %q", stdout)
	}
}

func TestBadSpecExits(t *testing.T) {
	_, stderr, err := runHelper(t, "p=explode")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("helper: %v, want exit 2", err)
	}
	if !strings.Contains(stderr, "unknown action") {
		t.Errorf("stderr %q", stderr)
	}
}
