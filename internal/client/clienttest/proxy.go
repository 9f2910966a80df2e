package clienttest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// peerProxy forwards connections to a member's peer listener. It can cut
// all of them (the member hears nobody) or those opened by one other member
// (that member is not heard), which it recognises by the header peers send
// with each request: etcd's X-Server-From, cairn's X-Cairn-From. Cutting a member off entirely takes
// both: its own proxy blocks all, every other proxy blocks it.
type peerProxy struct {
	addr   string
	target string
	l      net.Listener

	mu          sync.Mutex
	blockAll    bool
	blockedFrom map[string]bool
	conns       map[net.Conn]string // client side of each connection → sender ID
}

func startPeerProxy(t testing.TB, target string) *peerProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peerProxy{addr: l.Addr().String(), target: target, l: l,
		blockedFrom: map[string]bool{}, conns: map[net.Conn]string{}}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *peerProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// block cuts the connections opened by the member with ID from, or all
// connections when from is "".
func (p *peerProxy) block(from string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if from == "" {
		p.blockAll = true
	} else {
		p.blockedFrom[from] = true
	}
	for c, sender := range p.conns {
		if p.isBlocked(sender) {
			c.Close()
		}
	}
}

func (p *peerProxy) isBlocked(sender string) bool {
	return p.blockAll || p.blockedFrom[sender]
}

func (p *peerProxy) forward(client net.Conn) {
	defer client.Close()
	in := bufio.NewReader(client)
	head, sender, err := readHead(in)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.isBlocked(sender) {
		p.mu.Unlock()
		return
	}
	p.conns[client] = sender
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, client)
		p.mu.Unlock()
	}()

	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	if _, err := server.Write(head); err != nil {
		return
	}
	go func() {
		_, _ = io.Copy(server, in)
		server.Close()
	}()
	_, _ = io.Copy(client, server)
}

// readHead reads an HTTP request head and returns it with the sender its
// X-Server-From or X-Cairn-From header names ("" if absent).
func readHead(r *bufio.Reader) (head []byte, sender string, err error) {
	var buf bytes.Buffer
	for buf.Len() < 1<<16 {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, "", err
		}
		buf.WriteString(line)
		if name, value, ok := strings.Cut(line, ":"); ok && isSenderHeader(strings.TrimSpace(name)) {
			sender = strings.TrimSpace(value)
		}
		if line == "\r\n" || line == "\n" {
			break
		}
	}
	return buf.Bytes(), sender, nil
}

func (p *peerProxy) close() {
	p.l.Close()
	p.block("")
}

func isSenderHeader(name string) bool {
	return strings.EqualFold(name, "X-Server-From") || strings.EqualFold(name, "X-Cairn-From")
}
