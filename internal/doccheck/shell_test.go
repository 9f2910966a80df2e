package doccheck

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shell is one bash session, in which a document's examples run one after
// another, as a reader would type them: the working directory, variables
// and background jobs carry over from one command to the next. Each command
// runs with its own stdin (/dev/null), stdout and stderr (files), so that
// background jobs never hold the session's pipes.
type shell struct {
	t     *testing.T
	ctl   string // the folder of the commands' files
	cmd   *exec.Cmd
	stdin *os.File
	rcs   chan string // the session's status lines
	n     int
}

// result is what one command did.
type result struct {
	rc             int
	stdout, stderr string
}

const rcPrefix = "doc-example-rc "

// startShell starts a session in dir with env; it and every process it
// started are killed when the test ends.
func startShell(t *testing.T, dir string, env []string) *shell {
	t.Helper()
	sh := &shell{t: t, ctl: t.TempDir(), rcs: make(chan string, 1)}
	sh.cmd = exec.Command("bash", "--noprofile", "--norc")
	sh.cmd.Dir, sh.cmd.Env = dir, env
	sh.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(sh.ctl, "session.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	sh.cmd.Stdin, sh.cmd.Stdout, sh.cmd.Stderr = stdinR, stdoutW, stderr
	if err := sh.cmd.Start(); err != nil {
		t.Fatalf("start bash: %v", err)
	}
	stdinR.Close()
	stdoutW.Close()
	stderr.Close()
	sh.stdin = stdinW
	go func() {
		defer close(sh.rcs)
		sc := bufio.NewScanner(stdoutR)
		for sc.Scan() {
			if rc, ok := strings.CutPrefix(sc.Text(), rcPrefix); ok {
				sh.rcs <- rc
			}
		}
	}()
	t.Cleanup(func() {
		sh.stdin.Close()
		// The session and its background jobs (members started by an
		// example) share its process group.
		syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
		sh.cmd.Wait()
		stdoutR.Close()
	})
	return sh
}

// run runs one command in the session and returns what it did, or an error
// if it did not end within timeout or ended the session.
func (sh *shell) run(command string, timeout time.Duration) (result, error) {
	sh.n++
	script := filepath.Join(sh.ctl, fmt.Sprintf("cmd-%d.sh", sh.n))
	out := filepath.Join(sh.ctl, fmt.Sprintf("cmd-%d.stdout", sh.n))
	errf := filepath.Join(sh.ctl, fmt.Sprintf("cmd-%d.stderr", sh.n))
	if err := os.WriteFile(script, []byte(command+"\n"), 0o600); err != nil {
		return result{}, err
	}
	// Sourced, so that what the command sets stays set for the next one.
	line := fmt.Sprintf(". %q </dev/null >%q 2>%q; printf '%s%%d\\n' $?\n", script, out, errf, rcPrefix)
	if _, err := sh.stdin.WriteString(line); err != nil {
		return result{}, fmt.Errorf("write to the shell: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res result
	select {
	case rc, ok := <-sh.rcs:
		if !ok {
			return sh.read(res, out, errf), fmt.Errorf("the shell ended (did the command exit?)")
		}
		res.rc, _ = strconv.Atoi(rc)
	case <-timer.C:
		return sh.read(res, out, errf), fmt.Errorf("still running after %s", timeout)
	}
	return sh.read(res, out, errf), nil
}

// read fills in res's output from the command's files.
func (sh *shell) read(res result, out, errf string) result {
	b, _ := os.ReadFile(out)
	res.stdout = string(b)
	b, _ = os.ReadFile(errf)
	res.stderr = string(b)
	return res
}
