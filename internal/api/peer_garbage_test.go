package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/testnet"
	"github.com/cairnkv/cairn/internal/transport"
)

// Raft messages that do not come from a member of the cluster, or are not
// for this member, are refused before they reach raft: a forged heartbeat
// with a commit index beyond the log would otherwise make raft panic.
func TestForgedPeerMessagesAreRefused(t *testing.T) {
	purl := testnet.FreeURL(t)
	_, s, cli := startMember(t, memberconfig.Config{ListenPeerURLs: []string{purl}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	heartbeat := func(from, to uint64) *raftpb.Message {
		return &raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), From: proto.Uint64(from), To: proto.Uint64(to),
			Term: proto.Uint64(1 << 40), Commit: proto.Uint64(1 << 40)}
	}
	for name, m := range map[string]*raftpb.Message{
		"from a stranger":    heartbeat(0xbad, s.ID()),
		"for another member": heartbeat(s.ID(), 0xbad),
	} {
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		body := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		req, err := http.NewRequest(http.MethodPost, purl+transport.PathMessages, bytes.NewReader(append(body, data...)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(transport.HeaderClusterID, strconv.FormatUint(s.ClusterID(), 16))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNoContent {
			t.Errorf("%s: accepted with status %d", name, resp.StatusCode)
		}
	}
	// The member still serves, at the term it had.
	if _, err := cli.Put(ctx, "k", "v2"); err != nil {
		t.Fatalf("after the forged messages: %v", err)
	}
	if st, err := cli.Status(ctx, cli.Endpoints()[0]); err != nil || st.RaftTerm >= 1<<40 {
		t.Fatalf("status after the forged messages: %v %v", st, err)
	}
}
