package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestNoSpaceAlarm fills a member past its quota: writes are refused with
// NOSPACE and the alarm is raised; reads and deletes keep working; after a
// compaction, a defragmentation and disarming the alarm, writes work again.
func TestNoSpaceAlarm(t *testing.T) {
	curl, _, cli := startMember(t, memberconfig.Config{QuotaBackendBytes: 2 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	value := strings.Repeat("x", 8192)
	var putErr error
	for i := 0; i < 2000 && putErr == nil; i++ {
		_, putErr = cli.Put(ctx, fmt.Sprintf("k%d", i%50), value)
	}
	if !errors.Is(putErr, rpctypes.ErrNoSpace) {
		t.Fatalf("filling the db: %v, want %v", putErr, rpctypes.ErrNoSpace)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil || len(alarms.Alarms) != 1 {
		t.Fatalf("alarms: %v %v", alarms, err)
	}
	if _, err := cli.Get(ctx, "k1"); err != nil {
		t.Errorf("read under NOSPACE: %v", err)
	}
	if _, err := cli.Delete(ctx, "k1"); err != nil {
		t.Errorf("delete under NOSPACE: %v", err)
	}
	rev, _ := cli.Get(ctx, "k2")
	if _, err := cli.Compact(ctx, rev.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Defragment(ctx, curl); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: alarms.Alarms[0].MemberID, Alarm: alarms.Alarms[0].Alarm}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "after", "disarm"); err != nil {
		t.Fatalf("write after compact, defrag and disarm: %v", err)
	}
}
