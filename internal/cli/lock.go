package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
	"github.com/cairnkv/cairn/internal/cliutil/printer"
)

// concurrencyGroup holds lock and elect in the help, as etcdctl shows them.
var concurrencyGroup = &cobra.Group{ID: "concurrency", Title: "Concurrency commands"}

// addConcurrencyCommands attaches lock and elect.
func addConcurrencyCommands(root *cobra.Command, g *globalOptions) {
	addToGroup(root, concurrencyGroup, newLockCommand(g), newElectCommand(g))
}

func newLockCommand(g *globalOptions) *cobra.Command {
	var ttl int64
	cmd := &cobra.Command{
		Use:   "lock <lockname> [exec-command arg1 arg2 ...]",
		Short: "Acquires a named lock",
		Long: `Acquires a named lock: waits until it is free, prints the key that holds it
(<lockname>/<lease ID>), and holds it until interrupted (Ctrl-C), which
releases it. With a command, runs the command while holding the lock and
releases the lock when the command ends; the command sees the lock's key
and revision in ETCD_LOCK_KEY and ETCD_LOCK_REV.

The lock is held by a session whose lease of --ttl seconds is kept alive:
if this process dies, the lock is released when the lease expires. The
protocol is etcd's, so cairn and etcdctl can contend for the same lock.`,
		Example: `  cairn lock mylock
  cairn lock mylock -- sh -c 'echo "holding $ETCD_LOCK_KEY"; sleep 5'
  cairn lock --ttl 30 deploy ./deploy.sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmderr.BadArgs("lock takes a lock name argument and an optional command to execute")
			}
			return g.withClient(cmd, func(c *client.Client) error {
				return runLock(cmd, g, c, args[0], args[1:], ttl)
			})
		},
	}
	cmd.Flags().Int64Var(&ttl, "ttl", 10, "timeout for session")
	return cmd
}

func runLock(cmd *cobra.Command, g *globalOptions, c *client.Client, name string, command []string, ttl int64) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := newSession(ctx, g, c, ttl)
	if err != nil {
		return err
	}
	defer closeSession(g, s)
	m := client.NewMutex(s, name)
	if err := m.Lock(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting: nothing held
		}
		return err
	}

	if len(command) > 0 {
		run := exec.Command(command[0], command[1:]...)
		run.Env = append(os.Environ(), "ETCD_LOCK_KEY="+m.Key(), fmt.Sprintf("ETCD_LOCK_REV=%d", m.Revision()))
		run.Stdin, run.Stdout, run.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		runErr := run.Run()
		unlockCtx, cancel := g.commandContext(cmd)
		defer cancel()
		unlockErr := m.Unlock(unlockCtx)
		var exitErr *exec.ExitError
		if errors.As(runErr, &exitErr) && exitErr.ExitCode() > 0 {
			return cmderr.WithCode(exitErr.ExitCode(), runErr) // the command's exit code, as etcdctl
		}
		if runErr != nil {
			return runErr
		}
		return unlockErr
	}

	getCtx, cancel := g.commandContext(cmd)
	resp, err := c.KV.Range(getCtx, &pb.RangeRequest{Key: []byte(m.Key())})
	cancel()
	if err != nil {
		return err
	}
	if len(resp.GetKvs()) == 0 {
		return errors.New("lock lost on init")
	}
	if err := g.printer(cmd).Print(&printer.GetResult{Resp: resp}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		unlockCtx, cancel := g.commandContext(cmd)
		defer cancel()
		return m.Unlock(unlockCtx)
	case <-s.Done():
		return errors.New("session expired")
	}
}

// newSession starts the session of a lock or election.
func newSession(ctx context.Context, g *globalOptions, c *client.Client, ttl int64) (*client.Session, error) {
	grantCtx, cancel := context.WithTimeout(ctx, g.commandTimeout())
	defer cancel()
	return c.NewSession(grantCtx, ttl)
}

// closeSession ends a session, revoking its lease so that what it held is
// released at once rather than when the lease expires.
func closeSession(g *globalOptions, s *client.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), g.commandTimeout())
	defer cancel()
	_ = s.Close(ctx)
}
