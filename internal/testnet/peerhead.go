package testnet

import (
	"bufio"
	"bytes"
	"strings"
)

// peerSenderHeaders are the request headers by which a member names itself
// to the peer it dials: etcd's, and cairn's.
var peerSenderHeaders = []string{"X-Server-From", "X-Cairn-From"}

// maxPeerHead bounds the head ReadPeerHead reads: a peer's request head is a
// few hundred bytes.
const maxPeerHead = 1 << 16

// ReadPeerHead reads the head of an HTTP request a member sent to a peer, up
// to and including its blank line, and returns it with the member the
// request names as its sender ("" if it names none). Test proxies between
// members use it to tell which member opened a connection before they
// forward it.
func ReadPeerHead(r *bufio.Reader) (head []byte, sender string, err error) {
	var buf bytes.Buffer
	for buf.Len() < maxPeerHead {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, "", err
		}
		buf.WriteString(line)
		if name, value, ok := strings.Cut(line, ":"); ok {
			for _, h := range peerSenderHeaders {
				if strings.EqualFold(strings.TrimSpace(name), h) {
					sender = strings.TrimSpace(value)
				}
			}
		}
		if line == "\r\n" || line == "\n" {
			break
		}
	}
	return buf.Bytes(), sender, nil
}
