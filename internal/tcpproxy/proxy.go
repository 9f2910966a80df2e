// Package tcpproxy is the L4 proxy behind `etcd gateway start`: it accepts
// TCP connections and pipes each one, bytes unchanged, to one of the
// cluster's client endpoints. An endpoint that refuses a dial is left out
// for a retry delay; a connection that finds no endpoint is closed.
//
// It knows nothing of etcd's protocols and imports only the standard library.
package tcpproxy

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds one dial to an endpoint.
const dialTimeout = 5 * time.Second

// Proxy pipes connections to Endpoints (host:port), in turn.
type Proxy struct {
	Endpoints  []string
	RetryDelay time.Duration // how long a failed endpoint is left out
	Log        *slog.Logger

	mu       sync.Mutex
	next     int                  // the endpoint the next connection tries first
	inactive map[string]time.Time // failed endpoints, until when they are left out
}

// Serve accepts connections on l until ctx ends or l fails; it closes l
// and waits for the connections it pipes to end.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	p.Log.Info("ready to proxy client requests", "endpoints", p.Endpoints)
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		in, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.pipe(ctx, in)
		}()
	}
}

// pipe connects in to an endpoint and copies both ways until either side
// ends (or ctx does).
func (p *Proxy) pipe(ctx context.Context, in net.Conn) {
	defer in.Close()
	out := p.dial(ctx)
	if out == nil {
		return
	}
	defer out.Close()
	stop := context.AfterFunc(ctx, func() { in.Close(); out.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		copyThenCloseWrite(out, in)
		close(done)
	}()
	copyThenCloseWrite(in, out)
	<-done
}

// copyThenCloseWrite copies src to dst, then half-closes dst so that the
// other side sees the end of src.
func copyThenCloseWrite(dst, src net.Conn) {
	io.Copy(dst, src)
	if c, ok := dst.(interface{ CloseWrite() error }); ok {
		c.CloseWrite()
	} else {
		dst.Close()
	}
}

// dial connects to the first endpoint, in turn, that is not left out and
// accepts; nil if none does.
func (p *Proxy) dial(ctx context.Context) net.Conn {
	for _, ep := range p.candidates() {
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := (&net.Dialer{}).DialContext(dctx, "tcp", ep)
		cancel()
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		p.deactivate(ep, err)
	}
	p.Log.Warn("no active endpoint to proxy the connection to", "endpoints", p.Endpoints)
	return nil
}

// candidates are the endpoints not left out, starting with the next one in
// turn.
func (p *Proxy) candidates() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var out []string
	for i := range p.Endpoints {
		ep := p.Endpoints[(p.next+i)%len(p.Endpoints)]
		if until, ok := p.inactive[ep]; ok {
			if now.Before(until) {
				continue
			}
			delete(p.inactive, ep)
			p.Log.Info("activated endpoint", "address", ep)
		}
		out = append(out, ep)
	}
	p.next++
	return out
}

func (p *Proxy) deactivate(ep string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inactive == nil {
		p.inactive = map[string]time.Time{}
	}
	p.inactive[ep] = time.Now().Add(p.RetryDelay)
	p.Log.Warn("deactivated endpoint", "address", ep, "interval", p.RetryDelay.String(), "error", err.Error())
}
