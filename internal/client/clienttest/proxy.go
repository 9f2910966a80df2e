package clienttest

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/cairnkv/cairn/internal/testnet"
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
	head, sender, err := testnet.ReadPeerHead(in)
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

func (p *peerProxy) close() {
	p.l.Close()
	p.block("")
}
