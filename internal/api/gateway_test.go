package api

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protojson"
)

// postJSON posts body to the JSON gateway at url and returns the answer.
func postJSON(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// streamJSON posts body to a streaming path of the JSON gateway and
// returns the lines of its answer as they come; the stream ends with ctx.
func streamJSON(t *testing.T, ctx context.Context, url, body string) <-chan string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer resp.Body.Close()
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// nextLine is the next line of a stream, or fails the test after 10 s.
func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the stream ended")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10 s")
	}
	return ""
}

// TestGatewayWatchOutlivesRequestBody: a JSON watch (curl, etcd3gw) sends
// its create request as the whole request body; the watch stays open after
// the body ends and streams the events that follow, as etcd's.
func TestGatewayWatchOutlivesRequestBody(t *testing.T) {
	curl, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lines := streamJSON(t, ctx, curl+"/v3/watch", `{"create_request":{"key":"Zm9v"}}`) // foo
	if l := nextLine(t, lines); !strings.Contains(l, `"created":true`) {
		t.Fatalf("first answer: %s", l)
	}
	if _, err := cli.Put(ctx, "foo", "bar"); err != nil {
		t.Fatal(err)
	}
	if l := nextLine(t, lines); !strings.Contains(l, `"events":[{"kv":{"key":"Zm9v"`) || !strings.Contains(l, `"value":"YmFy"`) {
		t.Fatalf("after a put: %s", l)
	}
}

// TestWatchAfterCloseSend: a gRPC watch whose client has closed its send
// side still delivers events, as etcd's.
func TestWatchAfterCloseSend(t *testing.T) {
	_, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wc, err := pb.NewWatchClient(cli.ActiveConnection()).Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := wc.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: &pb.WatchCreateRequest{Key: []byte("foo")}}}); err != nil {
		t.Fatal(err)
	}
	if err := wc.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if resp, err := wc.Recv(); err != nil || !resp.Created {
		t.Fatalf("created: %v %v", resp, err)
	}
	if _, err := cli.Put(ctx, "foo", "bar"); err != nil {
		t.Fatal(err)
	}
	resp, err := wc.Recv()
	if err != nil || len(resp.Events) != 1 || string(resp.Events[0].Kv.Value) != "bar" {
		t.Fatalf("after a put: %v %v", resp, err)
	}
}

// TestGatewayMaintenanceAnswersAsEtcds: defragment answers {} and the
// snapshot stream's messages carry no header and count down the bytes that
// remain, as etcd's.
func TestGatewayMaintenanceAnswersAsEtcds(t *testing.T) {
	curl, _, cli := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if got := postJSON(t, curl+"/v3/maintenance/defragment", "{}"); got != "{}" {
		t.Errorf("defragment: %s", got)
	}
	for i := range 4 {
		if _, err := cli.Put(ctx, fmt.Sprint("k", i), strings.Repeat("v", 30000)); err != nil {
			t.Fatal(err)
		}
	}
	type message struct {
		Result struct {
			Header    json.RawMessage `json:"header"`
			Remaining string          `json:"remaining_bytes"`
			Blob      []byte          `json:"blob"`
		} `json:"result"`
	}
	var msgs []message
	dec := json.NewDecoder(strings.NewReader(postJSON(t, curl+"/v3/maintenance/snapshot", "{}")))
	for dec.More() {
		var m message
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) < 3 {
		t.Fatalf("%d messages, want the db in several and its sha256", len(msgs))
	}
	var db []byte
	for _, m := range msgs[:len(msgs)-1] {
		db = append(db, m.Result.Blob...)
	}
	sent := 0
	for i, m := range msgs {
		if m.Result.Header != nil {
			t.Errorf("message %d has a header: %s", i, m.Result.Header)
		}
		remaining := 0
		if m.Result.Remaining != "" {
			remaining, _ = strconv.Atoi(m.Result.Remaining)
		}
		if i < len(msgs)-1 {
			sent += len(m.Result.Blob)
		}
		if remaining != len(db)-sent {
			t.Errorf("message %d: %d bytes remaining, want %d", i, remaining, len(db)-sent)
		}
	}
	if sum := sha256.Sum256(db); !bytes.Equal(msgs[len(msgs)-1].Result.Blob, sum[:]) {
		t.Errorf("last message is not the sha256 of the db")
	}
}

// TestGatewayElectionAndLock: the JSON paths of etcd's Election and Lock
// services, with its answers (etcd's TestCurlV3Campaign, ...ElectionLeader,
// ...LockOperations).
func TestGatewayElectionAndLock(t *testing.T) {
	curl, _, _ := startMember(t, memberconfig.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for path, want := range map[string]string{
		"/v3/election/leader":   `"message":"election: no leader"`,
		"/v3/election/proclaim": `"message":"\"leader\" field must be provided"`,
		"/v3/election/resign":   `"message":"\"leader\" field must be provided"`,
		"/v3/lock/unlock":       `"message":"etcdserver: key is not provided"`,
	} {
		if got := postJSON(t, curl+path, `{"name":"aGVsbG8="}`); !strings.Contains(got, `"code":2`) || !strings.Contains(got, want) {
			t.Errorf("%s: %s, want code 2 and %s", path, got, want)
		}
	}

	var campaign struct {
		Leader struct {
			Name, Key, Rev, Lease string
		} `json:"leader"`
	}
	got := postJSON(t, curl+"/v3/election/campaign", `{"name":"L2VsZWN0aW9u","value":"djE="}`) // /election, v1
	if err := json.Unmarshal([]byte(got), &campaign); err != nil || campaign.Leader.Name != "L2VsZWN0aW9u" || campaign.Leader.Key == "" {
		t.Fatalf("campaign: %s %v", got, err)
	}
	lines := streamJSON(t, ctx, curl+"/v3/election/observe", `{"name":"L2VsZWN0aW9u"}`)
	if l := nextLine(t, lines); !strings.HasPrefix(l, `{"result":{"header":`) || !strings.Contains(l, `"key":"`+campaign.Leader.Key+`"`) {
		t.Fatalf("observe: %s", l)
	}
	proclaim := fmt.Sprintf(`{"leader":{"name":%q,"key":%q,"rev":%s,"lease":%s},"value":"djI="}`, campaign.Leader.Name, campaign.Leader.Key, campaign.Leader.Rev, campaign.Leader.Lease)
	if got := postJSON(t, curl+"/v3/election/proclaim", proclaim); !strings.Contains(got, `"revision":`) {
		t.Fatalf("proclaim: %s", got)
	}
	if l := nextLine(t, lines); !strings.Contains(l, `"value":"djI="`) {
		t.Fatalf("observe after the proclamation: %s", l)
	}

	var lock struct{ Key string }
	got = postJSON(t, curl+"/v3/lock/lock", `{"name":"bG9jazE="}`) // lock1
	if err := json.Unmarshal([]byte(got), &lock); err != nil || lock.Key == "" {
		t.Fatalf("lock: %s %v", got, err)
	}
	if got := postJSON(t, curl+"/v3/lock/unlock", fmt.Sprintf(`{"key":%q}`, lock.Key)); !strings.Contains(got, `"revision":`) {
		t.Fatalf("unlock: %s", got)
	}
}

// TestGatewayV3betaPaths: etcd serves the JSON API under /v3beta/ too.
func TestGatewayV3betaPaths(t *testing.T) {
	curl, _, _ := startMember(t, memberconfig.Config{})
	postJSON(t, curl+"/v3beta/kv/put", `{"key":"Zm9v","value":"YmFy"}`)
	if got := postJSON(t, curl+"/v3beta/kv/range", `{"key":"Zm9v"}`); !strings.Contains(got, `"value":"YmFy"`) {
		t.Errorf("range under /v3beta/: %s", got)
	}
	if got := postJSON(t, curl+"/v3beta/election/leader", `{"name":"Zm9v"}`); !strings.Contains(got, "election: no leader") {
		t.Errorf("election leader under /v3beta/: %s", got)
	}
	if got := postJSON(t, curl+"/v3beta/x", `{}`); !strings.Contains(got, `"message":"Not Found"`) {
		t.Errorf("unknown path under /v3beta/: %s", got)
	}
}

// TestGatewayJSONIsCompact: the gateway's answers carry no spaces between
// fields from any build. protojson adds some at random, varied by build:
// a multiline marshaler stands in for a build that adds them.
func TestGatewayJSONIsCompact(t *testing.T) {
	c := &compactJSON{runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}}}
	resp := &pb.PutResponse{Header: &pb.ResponseHeader{ClusterId: 1, MemberId: 2, Revision: 3, RaftTerm: 4}}
	want := `{"header":{"cluster_id":"1","member_id":"2","revision":"3","raft_term":"4"}}`
	if b, err := c.Marshal(resp); err != nil || string(b) != want {
		t.Errorf("Marshal: %s, %v; want %s", b, err, want)
	}
	var out bytes.Buffer
	if err := c.NewEncoder(&out).Encode(resp); err != nil || out.String() != want+"\n" {
		t.Errorf("Encode: %q, %v; want %q", out.String(), err, want+"\n")
	}
}
