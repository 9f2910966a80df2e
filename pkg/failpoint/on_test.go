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
	"time"
)

// helperEnv makes the test binary, started again by TestCrash, run the
// hits instead of the tests.
const helperEnv = "FAILPOINT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		for i := 1; i <= 5; i++ {
			Hit("other")
			start := time.Now()
			Hit("p")
			fmt.Printf("survived hit %d\n", i)
			fmt.Fprintf(os.Stderr, "hit %d took %d ms\n", i, time.Since(start).Milliseconds())
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

// tookMS returns how long each of the helper's five hits of p took, from
// its stderr.
func tookMS(t *testing.T, stderr string) [5]int64 {
	t.Helper()
	var took [5]int64
	found := 0
	for _, line := range strings.Split(stderr, "\n") {
		var i int
		var ms int64
		if _, err := fmt.Sscanf(line, "hit %d took %d ms", &i, &ms); err == nil && i >= 1 && i <= 5 {
			took[i-1] = ms
			found++
		}
	}
	if found != 5 {
		t.Fatalf("stderr %q does not time five hits", stderr)
	}
	return took
}

// TestSleep: a sleeping point holds the hits it is armed for, and only
// those, and the process goes on.
func TestSleep(t *testing.T) {
	const d = 200 // ms; the hits not armed take microseconds
	for _, tc := range []struct {
		spec  string
		slept string // hits 1..5: x slept
	}{
		{"p=sleep(200ms)@3", "..x.."},
		{"p=2*sleep(200ms)", "xx..."},
	} {
		stdout, stderr, err := runHelper(t, tc.spec)
		if err != nil {
			t.Fatalf("%s: helper: %v\n%s", tc.spec, err, stderr)
		}
		if strings.Count(stdout, "survived") != 5 {
			t.Errorf("%s: stdout %q", tc.spec, stdout)
		}
		got := ""
		for _, ms := range tookMS(t, stderr) {
			if ms >= d {
				got += "x"
			} else {
				got += "."
			}
		}
		if got != tc.slept {
			t.Errorf("%s: slept at hits %s, want %s (stderr %q)", tc.spec, got, tc.slept, stderr)
		}
		if !strings.Contains(stderr, "failpoint p: armed, sleep 200ms at ") {
			t.Errorf("%s: stderr %q does not say the point is armed", tc.spec, stderr)
		}
	}
}
