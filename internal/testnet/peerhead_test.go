package testnet

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

func TestReadPeerHead(t *testing.T) {
	for _, tc := range []struct {
		name, in, head, sender, rest string
	}{
		{"etcd", "GET /raft/stream/msgapp/2 HTTP/1.1\r\nX-Server-From: 1a\r\n\r\nbody", "GET /raft/stream/msgapp/2 HTTP/1.1\r\nX-Server-From: 1a\r\n\r\n", "1a", "body"},
		{"cairn", "POST /raft HTTP/1.1\r\nx-cairn-from:  m3 \r\n\r\n", "POST /raft HTTP/1.1\r\nx-cairn-from:  m3 \r\n\r\n", "m3", ""},
		{"none", "GET / HTTP/1.1\nHost: a\n\nrest", "GET / HTTP/1.1\nHost: a\n\n", "", "rest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.in))
			head, sender, err := ReadPeerHead(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(head) != tc.head || sender != tc.sender {
				t.Fatalf("got head %q sender %q, want %q %q", head, sender, tc.head, tc.sender)
			}
			rest, _ := io.ReadAll(r)
			if string(rest) != tc.rest {
				t.Fatalf("left %q, want %q", rest, tc.rest)
			}
		})
	}
	if _, _, err := ReadPeerHead(bufio.NewReader(strings.NewReader("GET / HTTP/1.1\r\nHost"))); err == nil {
		t.Fatal("a head cut short was read without an error")
	}
}
