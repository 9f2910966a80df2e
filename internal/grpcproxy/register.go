package grpcproxy

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Registration is how a proxy makes itself known to clients (etcd's
// --resolver-prefix): the key Prefix/Addr, attached to a lease of TTL
// seconds that the proxy keeps alive, whose value is etcd's endpoint
// record (as go.etcd.io/etcd/client/v3/naming/endpoints writes it). The
// proxies' Cluster.MemberList then lists the proxies registered under
// Prefix instead of the members.
type Registration struct {
	Prefix string
	Addr   string
	TTL    int64
}

// endpointRecord is the value of a registration: etcd's endpoints.Update
// with Op Add, the proxy's host name as metadata.
type endpointRecord struct {
	Op       int
	Addr     string
	Metadata string
}

type registrationMetadata struct {
	Name string `json:"name"`
}

func (r Registration) key() string { return r.Prefix + "/" + r.Addr }

// register keeps the proxy registered until ctx ends: a lost lease is
// granted again and the key put again.
func (p *Proxy) register(ctx context.Context, r Registration) {
	host, _ := os.Hostname()
	meta, _ := json.Marshal(registrationMetadata{Name: host})
	value, _ := json.Marshal(endpointRecord{Op: 0, Addr: r.Addr, Metadata: string(meta)})
	for attempt := 0; ctx.Err() == nil; attempt++ {
		session, err := p.client.NewSession(ctx, r.TTL)
		if err == nil {
			_, err = p.client.KV.Put(ctx, &pb.PutRequest{Key: []byte(r.key()), Value: value, Lease: session.Lease()})
			if err == nil {
				attempt = 0
				p.log.Info("registered session with lease", "addr", r.Addr, "lease-ttl", r.TTL)
				select {
				case <-session.Done():
					p.log.Warn("lost the lease of the proxy's registration; registering again", "addr", r.Addr)
				case <-ctx.Done():
				}
			}
			// The lease is revoked, so that the registration goes at once
			// (etcd's proxy leaves it to expire).
			closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			session.Close(closeCtx)
			cancel()
		}
		if err != nil && ctx.Err() == nil {
			p.log.Warn("failed to register the proxy", "addr", r.Addr, "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Duration(attempt+1)*time.Second, 5*time.Second)):
		}
	}
}

// registeredProxies is the MemberList of a proxy that registers itself:
// the proxies registered under the prefix, as etcd's proxies list them (ID
// 0, the host name, the registered address; no header).
func (p *Proxy) registeredProxies(ctx context.Context, prefix string) (*pb.MemberListResponse, error) {
	resp, err := p.client.KV.Range(outgoing(ctx), &pb.RangeRequest{Key: []byte(prefix + "/"), RangeEnd: []byte(prefix + "0")})
	if err != nil {
		return nil, err
	}
	list := &pb.MemberListResponse{}
	for _, kv := range resp.Kvs {
		var rec endpointRecord
		if json.Unmarshal(kv.Value, &rec) != nil || rec.Op != 0 || rec.Addr == "" {
			continue
		}
		var meta registrationMetadata
		json.Unmarshal([]byte(rec.Metadata), &meta)
		list.Members = append(list.Members, &pb.Member{Name: meta.Name, ClientURLs: []string{strings.TrimSpace(rec.Addr)}})
	}
	return list, nil
}
