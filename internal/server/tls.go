package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"

	"github.com/cairnkv/cairn/internal/memberconfig"
	"github.com/cairnkv/cairn/internal/servertls"
)

// memberTLS are the TLS configurations of a running member.
type memberTLS struct {
	client   *tls.Config // of the https client listeners; nil without one
	peer     *tls.Config // of the https peer listeners; nil without one
	peerDial *tls.Config // to dial https peers with
}

// setUpTLS generates the certificates --auto-tls asks for under
// <data-dir>/fixtures, as etcd does, records them in s.cfg, and loads the
// member's TLS configurations.
func (s *Server) setUpTLS() (memberTLS, error) {
	var out memberTLS
	var err error
	fixtures := filepath.Join(s.cfg.DataDir, "fixtures")
	if s.cfg.ClientTLS, err = s.cfg.ClientTLS.WithAutoTLS(filepath.Join(fixtures, "client"), urlHosts(s.cfg.ListenClientURLs), s.cfg.SelfSignedCertValidity, s.log); err != nil {
		return out, err
	}
	if s.cfg.PeerTLS, err = s.cfg.PeerTLS.WithAutoTLS(filepath.Join(fixtures, "peer"), urlHosts(s.cfg.ListenPeerURLs), s.cfg.SelfSignedCertValidity, s.log); err != nil {
		return out, err
	}
	if out.client, err = serverTLS(s.cfg.ClientTLS, s.cfg.TLS, s.cfg.ListenClientURLs, s.log); err != nil {
		return out, err
	}
	if out.peer, err = serverTLS(s.cfg.PeerTLS, s.cfg.TLS, s.cfg.ListenPeerURLs, s.log); err != nil {
		return out, err
	}
	peer := s.cfg.PeerTLS
	peer.Log = s.log
	out.peerDial, err = peer.DialConfig(s.cfg.TLS)
	return out, err
}

// serverTLS is the configuration of the https listeners among urls; the
// http ones ignore the certificate, as etcd warns.
func serverTLS(files servertls.Files, v servertls.Versions, urls []string, log *slog.Logger) (*tls.Config, error) {
	var https bool
	for _, u := range urls {
		switch {
		case memberconfig.IsHTTPS(u):
			https = true
		case files.HasCert():
			log.Warn("scheme is http while key and cert files are present; ignoring key and cert files", "url", u)
			if files.ClientCertAuth {
				log.Warn(fmt.Sprintf("scheme is http while --%sclient-cert-auth is enabled; ignoring client cert auth for this URL", files.Prefix), "url", u)
			}
		}
	}
	if !https {
		return nil, nil
	}
	files.Log = log // changed files that cannot be used are logged
	return files.ServerConfig(v)
}

// urlHosts are the host names of urls, without ports.
func urlHosts(urls []string) []string {
	var hosts []string
	for _, u := range urls {
		if pu, err := url.Parse(u); err == nil {
			hosts = append(hosts, pu.Hostname())
		}
	}
	return hosts
}
