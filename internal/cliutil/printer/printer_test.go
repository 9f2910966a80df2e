package printer

import (
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cairnkv/cairn/internal/cliutil/cmderr"
)

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {9, "9 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {16384, "16 kB"}, {20480, "20 kB"},
		{1500000, "1.5 MB"}, {2147483648, "2.1 GB"},
	}
	for _, tt := range tests {
		if got := HumanBytes(tt.n); got != tt.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestPermissionRangeText(t *testing.T) {
	tests := []struct {
		key, end, want string
	}{
		{"/k", "", "/k"},
		{"/a", "/c", "[/a, /c)"},
		{"/p/", "/p0", "[/p/, /p0) (prefix /p/)"},
		{"/w", "\x00", "[/w, <open ended>"},
	}
	for _, tt := range tests {
		perm := &authpb.Permission{Key: []byte(tt.key), RangeEnd: []byte(tt.end)}
		if got := permissionRangeText(perm); got != tt.want {
			t.Errorf("permissionRangeText(%q, %q) = %q, want %q", tt.key, tt.end, got, tt.want)
		}
	}
}

func TestPrinterRejectsUnsupportedFormat(t *testing.T) {
	var out strings.Builder
	p := &Printer{w: &out, format: FormatTable}
	err := p.Print(&PutResult{Resp: &pb.PutResponse{}})
	if err == nil || err.Error() != "table not supported as output format" || cmderr.ExitCode(err) != cmderr.ExitBadFeature {
		t.Fatalf("put -w table: error %v (exit %d), want the unsupported-format error (exit %d)", err, cmderr.ExitCode(err), cmderr.ExitBadFeature)
	}
}

func TestHexText(t *testing.T) {
	p := &Printer{hex: true}
	if got := p.text([]byte("k\n")); got != `\x6b\x0a` {
		t.Fatalf("hex text = %q, want %q", got, `\x6b\x0a`)
	}
}
