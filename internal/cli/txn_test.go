package cli

import (
	"bufio"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

func TestParseCompare(t *testing.T) {
	tests := []struct {
		line string
		want *pb.Compare
	}{
		{`mod("k") > "3"`, &pb.Compare{Key: []byte("k"), Target: pb.Compare_MOD, Result: pb.Compare_GREATER,
			TargetUnion: &pb.Compare_ModRevision{ModRevision: 3}}},
		{`  c("k") < "10"`, &pb.Compare{Key: []byte("k"), Target: pb.Compare_CREATE, Result: pb.Compare_LESS,
			TargetUnion: &pb.Compare_CreateRevision{CreateRevision: 10}}},
		{`version("a b") != "0"`, &pb.Compare{Key: []byte("a b"), Target: pb.Compare_VERSION, Result: pb.Compare_NOT_EQUAL,
			TargetUnion: &pb.Compare_Version{Version: 0}}},
		{`val("k") = "x\ty"`, &pb.Compare{Key: []byte("k"), Target: pb.Compare_VALUE, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_Value{Value: []byte("x\ty")}}},
		{`lease("k") = "1f"`, &pb.Compare{Key: []byte("k"), Target: pb.Compare_LEASE, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_Lease{Lease: 0x1f}}},
	}
	for _, tt := range tests {
		got, err := parseCompare(tt.line)
		if err != nil || !proto.Equal(got, tt.want) {
			t.Errorf("parseCompare(%q) = %v, %v; want %v", tt.line, got, err, tt.want)
		}
	}
}

func TestParseCompareErrorsSayWhatWasRead(t *testing.T) {
	tests := []struct{ line, want string }{
		{`mod("a") > 0`, `malformed comparison: mod("a") > 0; got mod("a") > ""`},
		{`mod(a) > "0"`, `malformed comparison: mod(a) > "0"; got mod("")  ""`},
		{`m("a")>"0"`, `malformed comparison: m("a")>"0"; got m("a")  ""`},
		{`foo("a") = "1"`, `malformed comparison: foo("a") = "1" (unknown target foo)`},
		{`mod("a") > "x"`, `invalid txn compare request: mod("a") > "x"`},
	}
	for _, tt := range tests {
		_, err := parseCompare(tt.line)
		if err == nil || err.Error() != tt.want || cmderr.ExitCode(err) != cmderr.ExitInvalidInput {
			t.Errorf("parseCompare(%q): error %v (exit %d), want %q (exit %d)", tt.line, err, cmderr.ExitCode(err), tt.want, cmderr.ExitInvalidInput)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{`put k v`, []string{"put", "k", "v"}},
		{`  put   "a b"  'c d' `, []string{"put", "a b", "c d"}},
		{`put k "x\"y\n"`, []string{"put", "k", "x\"y\n"}},
		{`put k "unterminated`, []string{"put", "k", "unterminated"}},
		{``, nil},
	}
	for _, tt := range tests {
		if got := splitArgs(tt.line); strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestReadTxn(t *testing.T) {
	input := "value(\"k\") = \"v\"\n\nput k w --prev-kv\nget k --prefix\n\ndel k\n\n"
	var prompts strings.Builder
	req, err := readTxn(bufio.NewReader(strings.NewReader(input)), &prompts)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Compare) != 1 || len(req.Success) != 2 || len(req.Failure) != 1 {
		t.Fatalf("txn has %d compares, %d successes, %d failures; want 1, 2, 1", len(req.Compare), len(req.Success), len(req.Failure))
	}
	if put := req.Success[0].GetRequestPut(); string(put.GetValue()) != "w" || !put.GetPrevKv() {
		t.Errorf("first success request = %v, want put k w with prev-kv", req.Success[0])
	}
	if get := req.Success[1].GetRequestRange(); string(get.GetRangeEnd()) != "l" {
		t.Errorf("prefix get has range end %q, want %q", get.GetRangeEnd(), "l")
	}
	wantPrompts := "compares:\nsuccess requests (get, put, del):\nfailure requests (get, put, del):\n"
	if prompts.String() != wantPrompts {
		t.Errorf("prompts %q, want %q", prompts.String(), wantPrompts)
	}

	_, err = readTxn(bufio.NewReader(strings.NewReader("value(\"k\") = \"v\"\n")), &prompts)
	if err == nil || err.Error() != "EOF" || cmderr.ExitCode(err) != cmderr.ExitInvalidInput {
		t.Errorf("unterminated txn: error %v, want EOF with exit %d", err, cmderr.ExitInvalidInput)
	}
}

func TestParseRequestOpErrors(t *testing.T) {
	tests := []struct {
		line string
		want string
		code int
	}{
		{"bogus k", "invalid txn request: bogus k", cmderr.ExitInvalidInput},
		{"get", "invalid txn compare request: get", cmderr.ExitInvalidInput},
		{"get k --bogus", "invalid txn request: get k --bogus", cmderr.ExitInvalidInput},
		{"put k", "put command needs 1 argument and input from stdin or 2 arguments", cmderr.ExitBadArgs},
	}
	for _, tt := range tests {
		_, err := parseRequestOp(tt.line)
		if err == nil || err.Error() != tt.want || cmderr.ExitCode(err) != tt.code {
			t.Errorf("parseRequestOp(%q): error %v (exit %d), want %q (exit %d)", tt.line, err, cmderr.ExitCode(err), tt.want, tt.code)
		}
	}
}
