package e2e

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestUnixSocketURLs: client and peer URLs may be unix:// sockets, as in
// etcd (the socket is the URL's host, a file in the working directory).
func TestUnixSocketURLs(t *testing.T) {
	t.Chdir(t.TempDir())
	ms := newCluster(t, 3, clusterOptions{unix: true})
	cli := client(t, ms[0])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	put, err := cli.Put(ctx, "k", "over a socket")
	if err != nil {
		t.Fatal(err)
	}
	other := client(t, ms[2])
	waitFor(t, 10*time.Second, "the put on another member", func() bool {
		resp, err := other.Get(ctx, "k", clientv3.WithSerializable())
		return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].ModRevision == put.Header.Revision
	})
}
