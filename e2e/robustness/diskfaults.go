package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/faultfs"
)

// Disk faults act on the filesystem under one member's data dir: when a
// run has any, each member's data dir is on its own faultfs mount
// (internal/faultfs, FUSE), mounted when the member is laid out and
// unmounted once every member is dead. Like membership, they are not in
// "all": ask for them with -faults, or "disk" for the four.
//
//   - fsync-stall: every fsync of the member waits 2-10 s, for as long
//     (the leader in at least half the draws). The stall is over when the
//     last fsync begun during it returns.
//   - disk-eio: the member's fsyncs fail with EIO for 1 s. A member whose
//     fsync failed must stop (it cannot know what reached the disk): one
//     still running 5 s after the fault fails the run; one that stopped is
//     restarted. A write it acknowledged without making it durable is a
//     lost write or breaks linearizability.
//   - disk-full: the member's writes fail with ENOSPC for 2-5 s. It may
//     stop, or stay up and refuse writes ("etcdserver: mvcc: database
//     space exceeded", a NOSPACE alarm): both are accepted and recorded;
//     the heal disarms a NOSPACE alarm and restarts a member that stopped.
//   - power-loss: the member (every member in a quarter of the draws) is
//     killed with SIGKILL and loses what its disk had not synced, or keeps
//     a random prefix of it, the last write possibly torn; then restarts.
const (
	faultFsyncStall faultKind = "fsync-stall"
	faultDiskEIO    faultKind = "disk-eio"
	faultDiskFull   faultKind = "disk-full"
	faultPowerLoss  faultKind = "power-loss"
)

var diskFaults = []faultKind{faultFsyncStall, faultDiskEIO, faultDiskFull, faultPowerLoss}

// eioStopWithin is how soon after a disk-eio fault a member whose fsync
// failed must have stopped; fullStopWithin is how long a disk-full fault
// waits for a member that stops on ENOSPC before it records that it kept
// running.
const (
	eioStopWithin  = 5 * time.Second
	fullStopWithin = 2 * time.Second
)

// Outcomes of a disk-eio or disk-full fault.
const (
	diskStopped     = "stopped"
	diskKeptRunning = "kept running"
	diskUntouched   = "untouched" // no fsync or write of the member met the fault
)

// diskOutcome is what a disk-eio or disk-full fault did to its member.
type diskOutcome struct {
	Kind    faultKind `json:"kind"`
	Member  string    `json:"member"`
	Failed  int       `json:"failed"` // fsyncs (disk-eio) or writes (disk-full) that the fault failed
	Outcome string    `json:"outcome"`
	// AlarmNoSpace: a NOSPACE alarm was listed after a disk-full fault.
	AlarmNoSpace bool `json:"alarm_nospace,omitempty"`
	// SpaceExceeded counts the requests of the load refused with
	// "database space exceeded" from the start of the fault to its heal.
	SpaceExceeded int `json:"space_exceeded,omitempty"`
}

// planDisk draws what a disk fault needs from the schedule's random source.
func planDisk(rnd *rand.Rand, f *fault) {
	switch f.Kind {
	case faultFsyncStall:
		f.Hold = randMS(rnd, 2000, 10000)
		f.Delay = f.Hold
	case faultDiskEIO:
		f.Hold = time.Second
	case faultDiskFull:
		f.Hold = randMS(rnd, 2000, 5000)
	case faultPowerLoss:
		f.Hold = randMS(rnd, 500, 1500)
		f.All = rnd.IntN(4) == 0
		if rnd.IntN(2) == 0 {
			f.Torn = rnd.Uint64() | 1
		}
		return
	}
	if rnd.IntN(2) == 0 {
		f.Member = -1 // the leader
	}
}

// diskExtra is what a disk fault takes beyond its hold.
func diskExtra(f fault) time.Duration {
	if f.Kind == faultFsyncStall {
		// An fsync begun just before the end of the stall waits its whole
		// delay; then the member catches up.
		return f.Hold + 2*time.Second
	}
	return 4 * time.Second // a restart, and the catching up
}

// fuseUsable tells whether faultfs can be mounted here (FUSE and root), by
// mounting one in a temporary folder.
func fuseUsable() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "robustness-fuse-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	backing, mnt := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	fs, err := faultfs.Mount(backing, mnt)
	if err != nil {
		return err
	}
	return fs.Unmount()
}

// mountDisk puts the member's data dir on a fresh faultfs mount in dir.
func (m *member) mountDisk(dir string) error {
	backing, mnt := filepath.Join(dir, m.name+".disk"), filepath.Join(dir, m.name+".mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	fs, err := faultfs.Mount(backing, mnt)
	if err != nil {
		return fmt.Errorf("faultfs for %s: %w", m.name, err)
	}
	m.disk, m.dataDir = fs, filepath.Join(mnt, "data")
	return nil
}

func injectDisk(ctx context.Context, c *cluster, h *history, m *member, f fault, rec *faultRecord) error {
	if m.disk == nil {
		return fmt.Errorf("%s's data dir is not on a faultfs mount", m.name)
	}
	switch f.Kind {
	case faultFsyncStall:
		stallFsyncs(ctx, m, f, rec)
		return nil
	case faultDiskEIO:
		return failFsyncs(ctx, m, f, rec)
	case faultDiskFull:
		return fillDisk(ctx, c, h, m, f, rec)
	default:
		return losePower(ctx, c, m, f, rec)
	}
}

func stallFsyncs(ctx context.Context, m *member, f fault, rec *faultRecord) {
	before := m.disk.Stats().DelayedFsyncs
	m.disk.Set(faultfs.Faults{FsyncDelay: f.Delay})
	hold(ctx, f.Hold)
	m.disk.Set(faultfs.Faults{})
	deadline := time.Now().Add(f.Delay + time.Second)
	for m.disk.Stats().Stalled > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling until the last delayed fsync returns
	}
	rec.Note = fmt.Sprintf("%d fsyncs delayed %v", m.disk.Stats().DelayedFsyncs-before, f.Delay)
	if f.Member < 0 {
		rec.Note = "the leader; " + rec.Note
	}
}

func failFsyncs(ctx context.Context, m *member, f fault, rec *faultRecord) error {
	before := m.disk.Stats().FailedFsyncs
	m.disk.Set(faultfs.Faults{FsyncErr: syscall.EIO})
	hold(ctx, f.Hold)
	m.disk.Set(faultfs.Faults{})
	out := &diskOutcome{Kind: f.Kind, Member: m.name, Failed: m.disk.Stats().FailedFsyncs - before, Outcome: diskUntouched}
	rec.Disk = out
	if out.Failed == 0 {
		return nil
	}
	if !exitsWithin(m, eioStopWithin) {
		out.Outcome = diskKeptRunning
		return fmt.Errorf("%d fsyncs of %s failed with EIO and it still runs %v later", out.Failed, m.name, eioStopWithin)
	}
	out.Outcome = diskStopped
	// An exit that does not name the error stays a crash, which fails the run.
	if !m.expectExit(syscall.EIO.Error()) {
		rec.Note = "it exited without naming the I/O error in its log"
	}
	return m.start()
}

func fillDisk(ctx context.Context, c *cluster, h *history, m *member, f fault, rec *faultRecord) error {
	before := m.disk.Stats().FailedWrites
	m.disk.Set(faultfs.Faults{WriteErr: syscall.ENOSPC})
	hold(ctx, f.Hold)
	m.disk.Set(faultfs.Faults{})
	out := &diskOutcome{Kind: f.Kind, Member: m.name, Failed: m.disk.Stats().FailedWrites - before, Outcome: diskUntouched}
	rec.Disk = out
	stopped := false
	if out.Failed > 0 {
		out.Outcome = diskKeptRunning
		if stopped = exitsWithin(m, fullStopWithin); stopped {
			out.Outcome = diskStopped
			if !m.expectExit(syscall.ENOSPC.Error()) {
				rec.Note = "it exited without naming the ENOSPC error in its log; "
			}
		}
	}
	var err error
	if out.AlarmNoSpace, err = disarmNoSpace(ctx, c); err != nil {
		rec.Note += fmt.Sprintf("alarms: %v", err)
	}
	for _, o := range h.all() {
		if o.Call >= rec.Start && strings.Contains(o.Out.Err, "database space exceeded") {
			out.SpaceExceeded++
		}
	}
	if stopped {
		return m.start()
	}
	return nil
}

// exitsWithin waits up to d for m's process to exit and tells whether it did.
func exitsWithin(m *member, d time.Duration) bool {
	exited := m.exitedCh()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return true
	case <-time.After(d):
		return false
	}
}

// disarmNoSpace lists the cluster's alarms and disarms the NOSPACE ones,
// as an operator does once the disk has room again; it tells whether
// there was one.
func disarmNoSpace(ctx context.Context, c *cluster) (bool, error) {
	cli, err := c.client(c.list()...)
	if err != nil {
		return false, err
	}
	defer cli.Close()
	var list *clientv3.AlarmResponse
	err = retryUnhealthy(ctx, func(ctx context.Context) (err error) {
		list, err = cli.AlarmList(ctx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("list: %w", err)
	}
	listed := false
	for _, a := range list.Alarms {
		if a.Alarm != etcdserverpb.AlarmType_NOSPACE {
			continue
		}
		listed = true
		err := retryUnhealthy(ctx, func(ctx context.Context) error {
			_, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm})
			return err
		})
		if err != nil {
			return true, fmt.Errorf("disarm NOSPACE of %x: %w", a.MemberID, err)
		}
	}
	return listed, nil
}

func losePower(ctx context.Context, c *cluster, m *member, f fault, rec *faultRecord) error {
	victims := []*member{m}
	if f.All {
		victims = c.list()
	}
	var wg sync.WaitGroup
	for _, v := range victims {
		wg.Go(v.kill)
	}
	wg.Wait()
	mode := "unsynced writes dropped"
	if f.Torn != 0 {
		mode = "a random prefix of the unsynced writes kept"
	}
	var names, unsynced []string
	var errs []error
	for i, v := range victims {
		if v.disk == nil {
			errs = append(errs, fmt.Errorf("%s's data dir is not on a faultfs mount", v.name))
			continue
		}
		var r *rand.Rand
		if f.Torn != 0 {
			r = rand.New(rand.NewPCG(f.Torn, uint64(i)))
		}
		names = append(names, v.name)
		unsynced = append(unsynced, fmt.Sprintf("%s %d", v.name, v.disk.Unsynced()))
		if err := v.disk.PowerLoss(r); err != nil {
			errs = append(errs, fmt.Errorf("power loss of %s: %w", v.name, err))
		}
	}
	rec.Target = strings.Join(names, ",")
	rec.Note = fmt.Sprintf("%s; files unsynced: %s", mode, strings.Join(unsynced, ", "))
	hold(ctx, f.Hold)
	for _, v := range victims {
		errs = append(errs, v.start())
	}
	return errors.Join(errs...)
}

// hasDiskFault tells whether kinds has a disk fault.
func hasDiskFault(kinds []faultKind) bool {
	return slices.ContainsFunc(kinds, func(k faultKind) bool { return slices.Contains(diskFaults, k) })
}

// diskSummary sums up the outcomes of the disk-eio and disk-full faults
// for the log ("" if none).
func diskSummary(outs []diskOutcome) string {
	if len(outs) == 0 {
		return ""
	}
	var parts []string
	for _, o := range outs {
		p := fmt.Sprintf("%s on %s: %s (%d failed)", o.Kind, o.Member, o.Outcome, o.Failed)
		if o.AlarmNoSpace {
			p += ", NOSPACE alarm"
		}
		if o.SpaceExceeded > 0 {
			p += fmt.Sprintf(", %d requests refused as space exceeded", o.SpaceExceeded)
		}
		parts = append(parts, p)
	}
	return "; disk faults: " + strings.Join(parts, "; ")
}
