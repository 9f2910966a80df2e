package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/server"
	"github.com/cairnkv/cairn/internal/testnet"
)

func TestThreeMembersInProcess(t *testing.T) {
	type m struct{ name, curl, purl string }
	var ms []m
	var initial []string
	for i := 1; i <= 3; i++ {
		x := m{fmt.Sprintf("m%d", i), testnet.FreeURL(t), testnet.FreeURL(t)}
		ms = append(ms, x)
		initial = append(initial, x.name+"="+x.purl)
	}
	var curls []string
	servers := make([]*server.Server, 3)
	for i, x := range ms {
		s, err := server.Start(server.Config{Name: x.name, DataDir: t.TempDir(), ListenClientURLs: []string{x.curl}, ListenPeerURLs: []string{x.purl},
			InitialCluster: strings.Join(initial, ","), SnapshotCount: 50, SnapshotCatchUpEntries: 10})
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
		defer s.Stop()
		a := New(s, nil)
		if err := a.Serve([]string{x.curl}); err != nil {
			t.Fatal(err)
		}
		defer a.Stop()
		curls = append(curls, x.curl)
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
