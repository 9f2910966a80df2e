package client

import (
	"crypto/tls"
	"log/slog"
	"time"
)

// Defaults used when a Config field is left at its zero value. They are
// etcdctl's defaults where etcdctl has one.
const (
	DefaultDialTimeout         = 2 * time.Second
	DefaultKeepAliveTime       = 2 * time.Second
	DefaultKeepAliveTimeout    = 6 * time.Second
	DefaultMaxCallSendMsgSize  = 2 * 1024 * 1024
	DefaultMaxCallRecvMsgSize  = 1<<31 - 1
	DefaultHealthProbeInterval = 2 * time.Second
)

// Config says how to reach a cluster and how to behave towards it.
type Config struct {
	// Endpoints are the client URLs of members: "host:port",
	// "http://host:port", "https://host:port" or "unix:///path".
	Endpoints []string
	// DialTimeout bounds each attempt to connect to one endpoint.
	DialTimeout time.Duration
	// KeepAliveTime is the interval of client-side keepalive pings;
	// KeepAliveTimeout how long to wait for their answer before the
	// connection is considered dead.
	KeepAliveTime    time.Duration
	KeepAliveTimeout time.Duration

	// Username and Password, when Username is set, are exchanged for a token
	// with the Authenticate RPC; the token is renewed when the server says it
	// is no longer valid.
	Username string
	Password string
	// Token is a token obtained elsewhere (for example a JWT); it is sent as
	// is and never renewed. It is ignored when Username is set.
	Token string

	// TLS, when not nil, secures connections to endpoints given without a
	// scheme; "https://" endpoints use TLS in any case.
	TLS *tls.Config

	// MaxCallSendMsgSize and MaxCallRecvMsgSize limit message sizes.
	MaxCallSendMsgSize int
	MaxCallRecvMsgSize int

	// HealthProbeInterval is the period of the probe that takes members
	// without a leader (or that are learners, or unreachable) out of rotation.
	// The first probe round runs as the client starts, and the first
	// requests wait for it to find a healthy member (a second at most); a
	// member that holds a request for long is probed at once. Zero means
	// DefaultHealthProbeInterval; a negative value disables all of it.
	HealthProbeInterval time.Duration
	// AutoSyncInterval, when positive, is the period at which the endpoint
	// list is replaced by the client URLs of the cluster's voting members.
	AutoSyncInterval time.Duration

	// Logger receives debug information about connections, retries and
	// failovers. Nil means no logging.
	Logger *slog.Logger
}

// withDefaults returns cfg with zero fields replaced by defaults.
func (cfg Config) withDefaults() Config {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.KeepAliveTime <= 0 {
		cfg.KeepAliveTime = DefaultKeepAliveTime
	}
	if cfg.KeepAliveTimeout <= 0 {
		cfg.KeepAliveTimeout = DefaultKeepAliveTimeout
	}
	if cfg.MaxCallSendMsgSize <= 0 {
		cfg.MaxCallSendMsgSize = DefaultMaxCallSendMsgSize
	}
	if cfg.MaxCallRecvMsgSize <= 0 {
		cfg.MaxCallRecvMsgSize = DefaultMaxCallRecvMsgSize
	}
	if cfg.HealthProbeInterval == 0 {
		cfg.HealthProbeInterval = DefaultHealthProbeInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}
