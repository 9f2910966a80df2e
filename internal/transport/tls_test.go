package transport

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/cairnkv/cairn/internal/servertls"
	"github.com/cairnkv/cairn/internal/tlstest"
)

func TestMessagesReachPeerOverTLS(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	certs := tlstest.NewCertificates(t)
	peerTLS := servertls.Files{Prefix: "peer-", CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CAFile, ClientCertAuth: true}
	serverConfig, err := peerTLS.ServerConfig(servertls.Versions{})
	if err != nil {
		t.Fatal(err)
	}
	to := newRecorder()
	srv := httptest.NewUnstartedServer(New(7, 2, to, nil, NewClient(nil, nil), log).Handler())
	srv.TLS = serverConfig
	srv.StartTLS()
	t.Cleanup(srv.Close) // after the senders stop (cleanups run last first)

	sender := func(id uint64, files servertls.Files) (*Transport, *recorder) {
		dialConfig, err := files.DialConfig(servertls.Versions{})
		if err != nil {
			t.Fatal(err)
		}
		from := newRecorder()
		tr := New(7, id, from, nil, NewClient(dialConfig, nil), log)
		t.Cleanup(tr.Stop)
		tr.AddPeer(2, []string{srv.URL})
		return tr, from
	}
	heartbeat := []*raftpb.Message{msg(2, raftpb.MessageType_MsgHeartbeat)}
	member, _ := sender(1, peerTLS)
	member.Send(heartbeat)
	waitArrival(t, to)

	// A member without a certificate is not heard. The sender learns that
	// the peer is unreachable when its stream breaks, which it notices on
	// writing the next message.
	stranger, from := sender(3, servertls.Files{TrustedCAFile: certs.CAFile})
	deadline := time.Now().Add(10 * time.Second)
	for from.unreachables() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sender without a certificate never found the peer unreachable")
		}
		stranger.Send(heartbeat)
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
	to.mu.Lock()
	defer to.mu.Unlock()
	if len(to.got) != 1 {
		t.Fatalf("%d messages arrived, want the one of the member with a certificate", len(to.got))
	}
}

// A member dialling a peer by IP address refuses a certificate that does
// not name that address, signed by a trusted CA or not.
func TestPeerCertificateMustNameTheAddressDialled(t *testing.T) {
	certs := tlstest.NewCertificates(t)
	dialConfig, err := servertls.Files{Prefix: "peer-", TrustedCAFile: certs.CAFile}.DialConfig(servertls.Versions{})
	if err != nil {
		t.Fatal(err)
	}
	client := NewClient(dialConfig, nil)
	for _, tc := range []struct {
		hosts []string
		ok    bool
	}{
		{[]string{"127.0.0.1"}, true},
		{[]string{"127.0.0.2", "other.example"}, false},
	} {
		cert, key := certs.IssueMemberFor(t, "peer", tc.hosts...)
		serverConfig, err := servertls.Files{Prefix: "peer-", CertFile: cert, KeyFile: key}.ServerConfig(servertls.Versions{})
		if err != nil {
			t.Fatal(err)
		}
		// Not StartTLS, which would serve httptest's own certificate.
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Listener = tls.NewListener(srv.Listener, serverConfig)
		srv.Start()
		srv.URL = strings.Replace(srv.URL, "http:", "https:", 1)
		resp, err := client.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		if tc.ok != (err == nil) || !tc.ok && !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("a certificate for %v, dialled at %s: %v", tc.hosts, srv.URL, err)
		}
		srv.Close()
	}
}
