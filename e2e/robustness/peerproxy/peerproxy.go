// Package peerproxy puts a TCP proxy in front of each member's peer
// listener, so that a test can partition, delay and cut the traffic between
// members: the robustness suite's network faults.
package peerproxy

import (
	"bufio"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnkv/cairn/internal/testnet"
)

// Network owns one proxy in front of each member's peer listener and the
// state of every link. A link is an unordered pair of members: blocking it
// stalls the traffic both ways on every connection either member opened to
// the other, as a partition does (nothing arrives, nothing is refused; the
// senders' buffers fill up and their own timeouts decide). Delaying a member
// holds every chunk to or from it; dropping closes its connections.
type Network struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change of state
	blocked map[[2]string]bool
	delay   map[string]time.Duration
	names   map[string]string // member ID as sent in the header (hex) → name
	conns   map[*proxyConn]bool
	proxies []*Proxy
	closed  bool
}

// New returns a network with no proxies and every link open.
func New() *Network {
	return &Network{changed: make(chan struct{}), blocked: map[[2]string]bool{},
		delay: map[string]time.Duration{}, names: map[string]string{}, conns: map[*proxyConn]bool{}}
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// notify wakes every stalled pump; called with mu held.
func (n *Network) notify() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// SetNames tells the network which member ID is which member.
func (n *Network) SetNames(ids map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, name := range ids {
		n.names[strings.ToLower(id)] = name
	}
	n.notify()
}

// Block cuts or restores the link between a and b.
func (n *Network) Block(a, b string, on bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if on {
		n.blocked[pair(a, b)] = true
	} else {
		delete(n.blocked, pair(a, b))
	}
	n.notify()
}

// SetDelay holds every chunk to or from member m for d (0: none).
func (n *Network) SetDelay(m string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delay[m] = d
	n.notify()
}

// Heal restores every link and removes every delay.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.blocked)
	clear(n.delay)
	n.notify()
}

// Drop closes every open peer connection from or to member m.
func (n *Network) Drop(m string) (closed, open int) {
	n.mu.Lock()
	open = len(n.conns)
	var victims []*proxyConn
	for c := range n.conns {
		if n.senderName(c.sender) == m || c.target == m {
			victims = append(victims, c)
		}
	}
	n.mu.Unlock()
	for _, c := range victims {
		c.close()
	}
	return len(victims), open
}

// senderName maps a header value to a member name ("" if unknown); mu held.
func (n *Network) senderName(sender string) string {
	return n.names[strings.ToLower(sender)]
}

// isolated reports whether every link of member m is blocked; mu held.
func (n *Network) isolated(m string) bool {
	count := 0
	for p := range n.blocked {
		if p[0] == m || p[1] == m {
			count++
		}
	}
	return count > 0 && count == len(n.proxies)-1
}

// gate returns how long a chunk from sender to target must wait, whether it
// must stall until the state changes (and the channel that says so).
// A connection whose sender is unknown (no header: probes, version checks)
// is stalled only when its target is isolated.
func (n *Network) gate(sender, target string) (stall bool, wait time.Duration, changed <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	from := n.senderName(sender)
	if n.closed {
		return false, 0, n.changed
	}
	if from == "" {
		stall = n.isolated(target)
	} else {
		stall = n.blocked[pair(from, target)]
	}
	return stall, max(n.delay[from], n.delay[target]), n.changed
}

// Remove closes the proxy of a member that left the cluster.
func (n *Network) Remove(name string) {
	n.mu.Lock()
	var gone *Proxy
	n.proxies = slices.DeleteFunc(n.proxies, func(p *Proxy) bool {
		if p.target == name {
			gone = p
			return true
		}
		return false
	})
	n.notify()
	n.mu.Unlock()
	if gone != nil {
		gone.l.Close()
	}
	n.Drop(name)
}

// Close stops every proxy and closes every connection.
func (n *Network) Close() {
	n.mu.Lock()
	n.closed = true
	n.notify()
	var all []*proxyConn
	for c := range n.conns {
		all = append(all, c)
	}
	proxies := n.proxies
	n.mu.Unlock()
	for _, p := range proxies {
		p.l.Close()
	}
	for _, c := range all {
		c.close()
	}
}

// Proxy forwards the connections to one member's peer listener.
type Proxy struct {
	n      *Network
	target string // member name
	Addr   string // where it listens
	dest   string // the member's own peer listener
	l      net.Listener
}

// Listen starts the proxy in front of member target, whose peer listener
// is at dest, on a free loopback port.
func (n *Network) Listen(target, dest string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{n: n, target: target, Addr: l.Addr().String(), dest: dest, l: l}
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	go p.serve()
	return p, nil
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// proxyConn is one forwarded connection.
type proxyConn struct {
	sender, target string
	client         net.Conn
	done           chan struct{}

	mu     sync.Mutex
	server net.Conn
	closed bool
}

func (c *proxyConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	close(c.done)
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

// setServer records the connection to the member; false if c was closed
// meanwhile (and server with it).
func (c *proxyConn) setServer(server net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		server.Close()
		return false
	}
	c.server = server
	return true
}

func (p *Proxy) forward(client net.Conn) {
	in := bufio.NewReader(client)
	head, sender, err := testnet.ReadPeerHead(in)
	if err != nil {
		client.Close()
		return
	}
	c := &proxyConn{sender: sender, target: p.target, client: client, done: make(chan struct{})}
	p.n.mu.Lock()
	if p.n.closed {
		p.n.mu.Unlock()
		client.Close()
		return
	}
	p.n.conns[c] = true
	p.n.mu.Unlock()
	defer func() {
		c.close()
		p.n.mu.Lock()
		delete(p.n.conns, c)
		p.n.mu.Unlock()
	}()
	// A partitioned sender does not even reach the target.
	if !p.pass(c) {
		return
	}
	server, err := net.DialTimeout("tcp", p.dest, time.Second)
	if err != nil {
		return
	}
	if !c.setServer(server) { // dropped while dialing
		return
	}
	if _, err := server.Write(head); err != nil {
		return
	}
	go func() {
		p.pump(c, server, in)
		c.close()
	}()
	p.pump(c, client, server)
}

// pass waits until a chunk of c may go on, and reports false if c was closed
// meanwhile.
func (p *Proxy) pass(c *proxyConn) bool {
	for {
		stall, wait, changed := p.n.gate(c.sender, c.target)
		if !stall {
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-c.done:
					t.Stop()
					return false
				}
			}
			return true
		}
		select {
		case <-changed:
		case <-c.done:
			return false
		}
	}
}

// pump copies src to dst a chunk at a time, each chunk held by the gate.
func (p *Proxy) pump(c *proxyConn, dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if !p.pass(c) {
				return
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
