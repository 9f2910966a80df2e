package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/server"
)

func TestThreeMembersInProcess(t *testing.T) {
	ms := startInProcess(t, 3, func(cfg *memberconfig.Config) { cfg.SnapshotCount, cfg.SnapshotCatchUpEntries = 50, 10 })
	var curls []string
	servers := make([]*server.Server, 3)
	for i, m := range ms {
		curls = append(curls, m.curl)
		servers[i] = m.s
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: curls[1:2], DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 200; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("k%03d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := cli.Get(ctx, "k", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 200 {
		t.Fatalf("count %v %v", resp, err)
	}
	ml, err := cli.MemberList(ctx)
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("members %v %v", ml, err)
	}
	for _, mm := range ml.Members {
		if mm.Name == "" || len(mm.ClientURLs) != 1 {
			t.Errorf("member without attributes: %v", mm)
		}
	}
	lg, err := cli.Grant(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.KeepAliveOnce(ctx, lg.ID); err != nil {
		t.Fatalf("keepalive through a follower: %v", err)
	}
	for i, s := range servers {
		h, err := s.Store().HashKV(0)
		t.Logf("member %d: rev %d hash %d applied %d %v", i, h.HashRevision, h.Hash, s.AppliedIndex(), err)
	}
}
