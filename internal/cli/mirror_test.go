package cli_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/client/clienttest"
)

func TestMakeMirror(t *testing.T) {
	cairn := clienttest.CairnBinary(t)
	source := clienttest.StartCluster(t, clienttest.Options{})
	dest := clienttest.StartCluster(t, clienttest.Options{})
	src, dst := clusterClient(t, source), clusterClient(t, dest)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	put := func(k, v string) int64 {
		t.Helper()
		resp, err := src.KV.Put(ctx, &pb.PutRequest{Key: []byte(k), Value: []byte(v)})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	opsPut := func(k, v string) *pb.RequestOp {
		return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(k), Value: []byte(v)}}}
	}
	for batch := range 25 { // more than one page of the initial copy
		txn := &pb.TxnRequest{}
		for i := range 100 {
			txn.Success = append(txn.Success, opsPut(fmt.Sprintf("/app/k%04d", batch*100+i), "v"))
		}
		if _, err := src.KV.Txn(ctx, txn); err != nil {
			t.Fatal(err)
		}
	}
	put("/other", "not mirrored")
	endpoints := endpointsFlag(source)
	destination := dest.Endpoints()[0]

	waitFor := func(what string, want []string) {
		t.Helper()
		var got []string
		clienttest.Poll(t, 30*time.Second, what, func() bool {
			got = keyValues(t, dst)
			return slices.Equal(got, want)
		})
	}

	// Copy with the prefix replaced, then follow changes, transactions
	// and range deletions included.
	var out syncBuffer
	mirror := startCommand(t, cairn, &out, endpoints, "make-mirror", "--prefix", "/app/", "--dest-prefix", "/copy/",
		"--max-txn-ops", "2", "--progress-interval", "50ms", destination)
	var want []string
	for i := range 2500 {
		want = append(want, fmt.Sprintf("/copy/k%04d=v", i))
	}
	waitFor("the initial copy", want)
	if _, err := src.KV.Txn(ctx, &pb.TxnRequest{Success: []*pb.RequestOp{
		opsPut("/app/t1", "a"), opsPut("/app/t2", "b"), opsPut("/app/t3", "c"), opsPut("/other2", "x"),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.KV.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte("/app/k"), RangeEnd: []byte("/app/k2")}); err != nil {
		t.Fatal(err)
	}
	put("/app/k2000", "changed")
	want = []string{"/copy/k2000=changed"}
	for i := 2001; i < 2500; i++ {
		want = append(want, fmt.Sprintf("/copy/k%04d=v", i))
	}
	want = append(want, "/copy/t1=a", "/copy/t2=b", "/copy/t3=c")
	waitFor("the changes", want)
	// 2500 copied, 3 transaction puts, 2000 deletions, 1 put.
	clienttest.Poll(t, 10*time.Second, "the progress count", func() bool {
		return strings.HasSuffix(out.String(), "\n4504\n")
	})
	stop(t, mirror)

	// From a revision on, without the initial copy, to the root.
	if _, err := dst.KV.DeleteRange(ctx, &pb.DeleteRangeRequest{Key: []byte{0}, RangeEnd: []byte{0}}); err != nil {
		t.Fatal(err)
	}
	from := put("/app/late", "1")
	mirror = startCommand(t, cairn, &out, endpoints, "make-mirror", "--prefix", "/app/", "--no-dest-prefix",
		"--rev", fmt.Sprint(from), destination)
	put("/app/later", "2")
	waitFor("the changes from a revision", []string{"late=1", "later=2"})
	stop(t, mirror)
}
