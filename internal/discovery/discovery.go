// Package discovery bootstraps a new cluster through etcd's v3 discovery
// service: an etcd (or cairn) cluster where each new member registers itself
// under a discovery token and waits until the expected number of members
// have. The keys and values are etcd's, so etcd and cairn members can share
// one token:
//
//	/_etcd/registry/<token>/_config/size       the cluster size, in decimal
//	/_etcd/registry/<token>/members/<id in hex> the member's name=peerURL,...
//
// The first size members by creation revision form the cluster.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/internal/client"
	"github.com/cairnkv/cairn/internal/cliutil/keyrange"
)

// etcd's errors.
var (
	ErrSizeNotFound = errors.New("discovery: size key not found")
	ErrBadSizeKey   = errors.New("discovery: size key is bad")
	ErrFullCluster  = errors.New("discovery: cluster is full")
)

// Config is the discovery client's configuration: etcd's --discovery-*
// flags.
type Config struct {
	Token     string
	Endpoints []string

	DialTimeout      time.Duration
	RequestTimeout   time.Duration
	KeepAliveTime    time.Duration
	KeepAliveTimeout time.Duration

	// InsecureTransport, when no TLS file is given, connects without TLS;
	// otherwise TLS is used (TLS.InsecureSkipVerify as given).
	InsecureTransport bool
	TLS               client.TLSFiles

	// User is "name" or "name:password"; Password, when set, wins.
	User     string
	Password string

	Logger *slog.Logger
}

// Join is JoinCluster with the configuration of etcd's --discovery-* flags,
// which get reads (in their text form).
func Join(ctx context.Context, get func(flag string) string, logger *slog.Logger, id uint64, self string) (string, error) {
	cfg := Config{
		Token: get("discovery-token"), Endpoints: strings.Split(get("discovery-endpoints"), ","),
		TLS:  client.TLSFiles{CAFile: get("discovery-cacert"), CertFile: get("discovery-cert"), KeyFile: get("discovery-key")},
		User: get("discovery-user"), Password: get("discovery-password"), Logger: logger,
	}
	for _, d := range []struct {
		flag string
		to   *time.Duration
	}{
		{"discovery-dial-timeout", &cfg.DialTimeout}, {"discovery-request-timeout", &cfg.RequestTimeout},
		{"discovery-keepalive-time", &cfg.KeepAliveTime}, {"discovery-keepalive-timeout", &cfg.KeepAliveTimeout},
	} {
		v, err := time.ParseDuration(get(d.flag))
		if err != nil {
			return "", fmt.Errorf("--%s: %w", d.flag, err)
		}
		*d.to = v
	}
	for _, b := range []struct {
		flag string
		to   *bool
	}{
		{"discovery-insecure-transport", &cfg.InsecureTransport}, {"discovery-insecure-skip-tls-verify", &cfg.TLS.InsecureSkipVerify},
	} {
		v, err := strconv.ParseBool(get(b.flag))
		if err != nil {
			return "", fmt.Errorf("--%s: %w", b.flag, err)
		}
		*b.to = v
	}
	return JoinCluster(ctx, cfg, id, self)
}

// member is one registered member: its key and its name=peerURL list.
type member struct{ key, value string }

// JoinCluster registers the member of ID id and name=peerURL list self under
// cfg.Token, waits until the cluster's size of members have registered, and
// returns the initial cluster (name=peerURL,...) in registration order.
func JoinCluster(ctx context.Context, cfg Config, id uint64, self string) (string, error) {
	d, err := newDiscovery(cfg)
	if err != nil {
		return "", err
	}
	defer d.c.Close()
	cluster, err := d.join(ctx, fmt.Sprintf("%s/members/%x", d.prefix, id), self)
	if err != nil {
		d.log.Error("discovery failed to join cluster", "cluster", cluster, "error", err.Error())
		return "", err
	}
	d.log.Info("discovery joined cluster successfully", "cluster", cluster)
	return cluster, nil
}

type discovery struct {
	cfg    Config
	c      *client.Client
	log    *slog.Logger
	prefix string // /_etcd/registry/<token>
}

func newDiscovery(cfg Config) (*discovery, error) {
	ccfg := client.Config{
		Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout,
		KeepAliveTime: cfg.KeepAliveTime, KeepAliveTimeout: cfg.KeepAliveTimeout,
	}
	if cfg.User != "" {
		ccfg.Username, ccfg.Password, _ = strings.Cut(cfg.User, ":")
		if cfg.Password != "" {
			ccfg.Password = cfg.Password
		}
	}
	if !cfg.InsecureTransport || cfg.TLS.CAFile != "" || cfg.TLS.CertFile != "" {
		t, err := cfg.TLS.Config()
		if err != nil {
			return nil, err
		}
		ccfg.TLS = t
	}
	c, err := client.New(ccfg)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &discovery{
		cfg: cfg, c: c, prefix: "/_etcd/registry/" + cfg.Token,
		log: logger.With("discovery-token", cfg.Token, "discovery-endpoints", strings.Join(cfg.Endpoints, ",")),
	}, nil
}

func (d *discovery) join(ctx context.Context, key, self string) (string, error) {
	size, members, rev, err := d.check(ctx)
	if err != nil {
		return "", err
	}
	if !registered(members, key) {
		if len(members) >= size {
			return "", ErrFullCluster
		}
		rctx, cancel := d.requestContext(ctx)
		_, err := d.c.KV.Put(rctx, &pb.PutRequest{Key: []byte(key), Value: []byte(self)})
		cancel()
		if err != nil {
			return "", err
		}
		d.log.Info("register member itself successfully", "memberKey", key, "memberInfo", self)
		// Read again: others may have registered since, before this member.
		if size, members, rev, err = d.check(ctx); err != nil {
			return "", err
		}
	}
	for _, m := range members {
		d.log.Info("found peer from discovery service", "memberKey", m.key, "memberInfo", m.value)
	}
	if members, err = d.wait(ctx, size, members, rev); err != nil {
		return "", err
	}
	if !registered(members[:size], key) {
		return "", ErrFullCluster
	}
	values := make([]string, size)
	for i, m := range members[:size] {
		values[i] = m.value
	}
	return strings.Join(values, ","), nil
}

// check reads the cluster size and the members registered so far, in
// registration order, and the revision it read them at.
func (d *discovery) check(ctx context.Context) (size int, members []member, rev int64, err error) {
	rctx, cancel := d.requestContext(ctx)
	defer cancel()
	resp, err := d.c.KV.Range(rctx, &pb.RangeRequest{Key: []byte(d.prefix + "/_config/size")})
	if err != nil {
		return 0, nil, 0, err
	}
	if len(resp.Kvs) == 0 {
		return 0, nil, 0, ErrSizeNotFound
	}
	if size, err = strconv.Atoi(string(resp.Kvs[0].Value)); err != nil || size <= 0 {
		return 0, nil, 0, ErrBadSizeKey
	}
	start := d.prefix + "/members/"
	resp, err = d.c.KV.Range(rctx, &pb.RangeRequest{
		Key: []byte(start), RangeEnd: keyrange.PrefixEnd([]byte(start)),
		SortOrder: pb.RangeRequest_ASCEND, SortTarget: pb.RangeRequest_CREATE,
	})
	if err != nil {
		return 0, nil, 0, err
	}
	for _, kv := range resp.Kvs {
		members = append(members, member{string(kv.Key), string(kv.Value)})
	}
	return size, members, resp.Header.Revision, nil
}

// wait watches the members' keys after revision rev until size members
// have registered, and returns them all in registration order.
func (d *discovery) wait(ctx context.Context, size int, members []member, rev int64) ([]member, error) {
	if len(members) >= size {
		d.log.Info("found all needed peers from discovery service", "clusterSize", size, "found-peers", len(members))
		return members, nil
	}
	d.log.Info("waiting for peers from discovery service", "clusterSize", size, "found-peers", len(members))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := d.prefix + "/members/"
	w := d.c.Watch(wctx, &pb.WatchCreateRequest{Key: []byte(start), RangeEnd: keyrange.PrefixEnd([]byte(start)), StartRevision: rev + 1})
	for resp := range w.Responses {
		if resp.Err != nil {
			return nil, resp.Err
		}
		for _, ev := range resp.Events {
			if ev.Type != mvccpb.PUT || ev.Kv.CreateRevision != ev.Kv.ModRevision {
				continue
			}
			m := member{string(ev.Kv.Key), string(ev.Kv.Value)}
			members = append(members, m)
			d.log.Info("found peer from discovery service", "memberKey", m.key, "memberInfo", m.value)
		}
		if len(members) >= size {
			d.log.Info("found all needed peers from discovery service", "clusterSize", size, "found-peers", len(members))
			return members, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("discovery: watch of the members ended")
}

func (d *discovery) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.cfg.RequestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d.cfg.RequestTimeout)
}

func registered(members []member, key string) bool {
	return slices.ContainsFunc(members, func(m member) bool { return m.key == key })
}
