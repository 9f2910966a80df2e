package listen

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"sync"
	"time"
)

// http2Preface starts every HTTP/2 connection, hence every gRPC one.
var http2Preface = []byte("PRI * HTTP/2.0")

// SplitHTTP2 hands the connections of ln that start with the HTTP/2
// preface (gRPC in clear text, served by grpc.Server.Serve, much faster
// than through net/http) to one listener and the others to a second one.
func SplitHTTP2(ln net.Listener) (h2, rest net.Listener) {
	return SplitConns(ln, len(http2Preface), func(head []byte) bool { return bytes.Equal(head, http2Preface) })
}

// SplitConns sends the connections of ln whose first n bytes match to
// one listener, the others to the other. Closing them does not close ln.
func SplitConns(ln net.Listener, n int, match func(head []byte) bool) (matched, rest net.Listener) {
	g, h := NewChanListener(ln.Addr()), NewChanListener(ln.Addr())
	go func() {
		defer g.Close()
		defer h.Close()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReader(c)
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				head, err := br.Peek(n)
				c.SetReadDeadline(time.Time{})
				if err != nil && len(head) == 0 {
					c.Close()
					return
				}
				pc := &peekedConn{Conn: c, r: br}
				target := h
				if len(head) == n && match(head) {
					target = g
				}
				if target.Deliver(context.Background(), pc) != nil {
					c.Close()
				}
			}()
		}
	}()
	return g, h
}

type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// ChanListener accepts the connections given to Deliver.
type ChanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func NewChanListener(addr net.Addr) *ChanListener {
	return &ChanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// Deliver hands c to Accept; it fails once the listener is closed or ctx
// ends first.
func (l *ChanListener) Deliver(ctx context.Context, c net.Conn) error {
	select {
	case l.conns <- c:
		return nil
	case <-l.done:
		return net.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *ChanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *ChanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *ChanListener) Addr() net.Addr { return l.addr }
