package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestMemberAddRefusesBadURLs: as etcd, a member is not added with peer
// URLs that are not http(s)/unix(s) URLs of a host and port (an addition
// would count a member that can never start in the quorum).
func TestMemberAddRefusesBadURLs(t *testing.T) {
	_, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, urls := range [][]string{{"bad"}, {"http://127.0.0.1"}, {"ftp://127.0.0.1:2380"}, {"http://127.0.0.1:2380/p"}, {"http://127.0.0.1:2380", "x"}, {}} {
		// Straight to the service: etcd's client checks the URLs first.
		_, err := pb.NewClusterClient(cli.ActiveConnection()).MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: urls})
		if !errors.Is(rpctypes.Error(err), rpctypes.ErrMemberBadURLs) {
			t.Errorf("member add %q: %v, want %v", urls, err, rpctypes.ErrMemberBadURLs)
		}
	}
	if l, err := cli.MemberList(ctx); err != nil || len(l.Members) != 1 {
		t.Errorf("members after the refusals: %v %v", l, err)
	}
}
