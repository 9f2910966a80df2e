package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestV3Discovery: three members started at once with --discovery-token and
// --discovery-endpoints (no --initial-cluster) register with a discovery
// service (a cairn member) under etcd's keys and form one cluster of three
// voters.
func TestV3Discovery(t *testing.T) {
	ds := newCluster(t, 1, clusterOptions{})
	dcli := client(t, ds...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const token = "8A591FAB-1D72-41FA-BDF2-A27162FDA1E0"
	registry := "/_etcd/registry/" + token
	if _, err := dcli.Put(ctx, registry+"/_config/size", "3"); err != nil {
		t.Fatal(err)
	}
	opts := clusterOptions{extraArgs: func(string) []string {
		return []string{"--discovery-token", token, "--discovery-endpoints", ds[0].curl}
	}}
	ms := newMembers(t, 3, opts)
	for _, m := range ms {
		m.args = m.flags("", "new", opts)
		m.start()
	}
	waitHealthy(t, ms...)

	cli := client(t, ms...)
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint64{}
	for _, m := range list.Members {
		if m.IsLearner {
			t.Errorf("%s is a learner", m.Name)
		}
		ids[m.Name] = m.ID
	}
	if len(list.Members) != 3 || len(ids) != 3 {
		t.Fatalf("members %v, want m1, m2 and m3", list.Members)
	}
	regs, err := dcli.Get(ctx, registry+"/members/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range regs.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	for _, m := range ms {
		key := fmt.Sprintf("%s/members/%x", registry, ids[m.name])
		if got[key] != m.name+"="+m.purl {
			t.Errorf("registry %s = %q, want %q (all: %v)", key, got[key], m.name+"="+m.purl, got)
		}
	}
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
}
