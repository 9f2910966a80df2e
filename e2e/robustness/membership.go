package robustness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// faultMembership replaces a follower under load: a new member joins as a
// learner, is promoted once it has caught up, then the follower is removed
// and stopped. It is not in "all": ask for it with -faults.
const faultMembership faultKind = "membership"

// promoteTimeout bounds the wait for a learner to catch up.
const promoteTimeout = 30 * time.Second

// replaceMember does the membership fault; it returns the names of the
// removed and the added member.
func (c *cluster) replaceMember(ctx context.Context) (removed, added *member, note string, err error) {
	leader, _ := c.leader()
	if leader == nil {
		return nil, nil, "", errors.New("no leader to change the membership through")
	}
	var old *member
	for _, m := range c.list() {
		if m != leader {
			old = m
			break
		}
	}
	cli, err := c.client(c.list()...)
	if err != nil {
		return nil, nil, "", err
	}
	defer cli.Close()

	c.mu.Lock()
	name := fmt.Sprintf("m%d", len(c.all)+1)
	c.mu.Unlock()
	nm, err := c.newMember(name)
	if err != nil {
		return nil, nil, "", err
	}
	var add *clientv3.MemberAddResponse
	err = retryUnhealthy(ctx, func(ctx context.Context) (err error) {
		add, err = cli.MemberAddAsLearner(ctx, []string{nm.peerURL})
		return err
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("add learner %s: %w", name, err)
	}
	c.net.SetNames(map[string]string{fmt.Sprintf("%x", add.Member.ID): name})
	var initial []string
	for _, pm := range add.Members {
		for _, m := range append(c.list(), nm) {
			if slices.Contains(pm.PeerURLs, m.peerURL) {
				initial = append(initial, m.name+"="+m.peerURL)
			}
		}
	}
	nm.argv = append(nm.argv, "--initial-cluster", joinComma(initial), "--initial-cluster-state", "existing")
	if err := nm.start(); err != nil {
		return nil, nil, "", err
	}

	// A learner can be promoted once it has caught up with the leader.
	deadline := time.Now().Add(promoteTimeout)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = cli.MemberPromote(pctx, add.Member.ID)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, nm, note, fmt.Errorf("promote %s: %w", name, err)
		}
		time.Sleep(200 * time.Millisecond) // polling until the learner has caught up
	}

	id, err := c.memberID(cli, old)
	if err != nil {
		return nil, nm, note, err
	}
	old.mu.Lock()
	old.stopping = true // a removed member may exit by itself
	old.mu.Unlock()
	err = retryUnhealthy(ctx, func(ctx context.Context) error {
		_, err := cli.MemberRemove(ctx, id)
		return err
	})
	if err != nil {
		// The outcome of a timeout is open: the member list says.
		if _, lerr := c.memberID(cli, old); lerr == nil || !errors.Is(lerr, errNotMember) {
			return nil, nm, note, fmt.Errorf("remove %s: %w", old.name, err)
		}
		note = fmt.Sprintf("the removal of %s was answered %v, yet it is out of the member list; ", old.name, err)
	}
	// A removed member of etcd stops by itself; give it 5 s, then stop it.
	select {
	case <-old.exitedCh():
		note += old.name + " exited by itself after its removal"
	case <-time.After(5 * time.Second):
		note += old.name + " still running 5 s after its removal"
	}
	_ = old.stopWith(syscall.SIGTERM, gracefulTimeout)
	c.mu.Lock()
	for i, m := range c.members {
		if m == old {
			c.members[i] = nm
		}
	}
	c.mu.Unlock()
	c.net.Remove(old.name)
	c.mu.Lock()
	onReplace := c.onReplace
	c.mu.Unlock()
	if onReplace != nil {
		onReplace(old, nm)
	}
	return old, nm, note, nil
}

// retryUnhealthy calls change until it is not refused with "etcdserver:
// unhealthy cluster", which etcd answers until every member has been
// connected for 5 s (a refusal, so the change is safe to ask again).
func retryUnhealthy(ctx context.Context, change func(context.Context) error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := change(cctx)
		cancel()
		if err == nil || !errors.Is(err, rpctypes.ErrUnhealthy) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond) // polling until the cluster accepts the change
	}
}

// memberID returns the ID of m from the member list.
func (c *cluster) memberID(cli *clientv3.Client, m *member) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return 0, fmt.Errorf("member list: %w", err)
	}
	for _, pm := range resp.Members {
		if slices.Contains(pm.PeerURLs, m.peerURL) {
			return pm.ID, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", m.name, errNotMember)
}

var errNotMember = errors.New("not in the member list")

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}
