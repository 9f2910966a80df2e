package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cairnkv/cairn/internal/tlstest"
)

// rotatedKinds are the certificates of a member in TestCertRotation: of
// its client listener, of its peer listener, and the one it presents to
// the peers it dials (--peer-client-cert-file).
var rotatedKinds = []string{"server", "peer", "peer-client"}

// TestCertRotation replaces every TLS file of a 3-member cluster on disk,
// as cert-manager does (a new file renamed into place), while a client
// writes and reads: first both CAs in the bundles, then certificates of
// the new CA, then the new CA alone. No request fails; new connections get
// the new certificates; old-CA certificates are refused at the end; the
// members still replicate, also to a member restarted after it all (the
// others dial it anew with their new certificate and CA bundle).
func TestCertRotation(t *testing.T) {
	oldCA, newCA := tlstest.NewCertificates(t), tlstest.NewCertificates(t)
	dirs := map[string]string{}
	for _, name := range []string{"m1", "m2", "m3"} {
		dirs[name] = t.TempDir()
		installMemberCerts(t, oldCA, name, dirs[name])
		for _, bundle := range []string{"ca.pem", "peer-ca.pem"} {
			replaceFile(t, filepath.Join(dirs[name], bundle), readPEM(t, oldCA.CAFile))
		}
	}
	// The options' certificates make the URLs https; the member's own
	// files, given after them, win.
	ms := newCluster(t, 3, clusterOptions{certs: &oldCA, extraArgs: func(name string) []string {
		d := dirs[name]
		return []string{"--cert-file", filepath.Join(d, "server.pem"), "--key-file", filepath.Join(d, "server-key.pem"),
			"--trusted-ca-file", filepath.Join(d, "ca.pem"),
			"--peer-cert-file", filepath.Join(d, "peer.pem"), "--peer-key-file", filepath.Join(d, "peer-key.pem"),
			"--peer-client-cert-file", filepath.Join(d, "peer-client.pem"), "--peer-client-key-file", filepath.Join(d, "peer-client-key.pem"),
			"--peer-trusted-ca-file", filepath.Join(d, "peer-ca.pem")}
	}})

	// The client trusts both CAs from the start and changes its own
	// certificate once the members trust the new CA, as a client whose
	// files are rotated too.
	bothCAs := x509.NewCertPool()
	bothCAs.AppendCertsFromPEM(append(readPEM(t, oldCA.CAFile), readPEM(t, newCA.CAFile)...))
	var clientCert atomic.Pointer[tls.Certificate]
	clientCert.Store(loadPair(t, oldCA.ClientCert, oldCA.ClientKey))
	rotating := &tls.Config{RootCAs: bothCAs, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return clientCert.Load(), nil
	}}
	load := startLoad(t, ms, rotating)

	// accepts reports whether each member's client and peer ports take
	// (or, !want, refuse in the handshake) a new connection presenting
	// certFile.
	accepts := func(certFile, keyFile string, want bool) func() bool {
		cfg := &tls.Config{RootCAs: bothCAs, Certificates: []tls.Certificate{*loadPair(t, certFile, keyFile)}}
		return func() bool {
			for _, m := range ms {
				for _, u := range []string{m.curl + "/health", m.purl + "/raft/probing"} {
					err := probeTLS(u, cfg)
					if want && err != nil || !want && (err == nil || !strings.Contains(err.Error(), "remote error: tls:")) {
						return false
					}
				}
			}
			return true
		}
	}
	newPeer, newPeerKey := newCA.IssueMember(t, "probe")
	oldPeer, oldPeerKey := oldCA.IssueMember(t, "probe")

	for _, m := range ms {
		both := append(readPEM(t, oldCA.CAFile), readPEM(t, newCA.CAFile)...)
		for _, bundle := range []string{"ca.pem", "peer-ca.pem"} {
			replaceFile(t, filepath.Join(dirs[m.name], bundle), both)
		}
	}
	waitFor(t, 20*time.Second, "members take certificates of the new CA", accepts(newPeer, newPeerKey, true))
	clientCert.Store(loadPair(t, newCA.ClientCert, newCA.ClientKey))

	for _, m := range ms {
		installMemberCerts(t, newCA, m.name, dirs[m.name])
	}
	waitFor(t, 20*time.Second, "members serve certificates of the new CA", func() bool {
		for _, m := range ms {
			for i, u := range []string{m.curl, m.purl} {
				want := readPEM(t, filepath.Join(dirs[m.name], rotatedKinds[i]+".pem"))
				if served, err := servedCert(u, rotating); err != nil || !bytes.Equal(served, want) {
					return false
				}
			}
		}
		return true
	})

	for _, m := range ms {
		for _, bundle := range []string{"ca.pem", "peer-ca.pem"} {
			replaceFile(t, filepath.Join(dirs[m.name], bundle), readPEM(t, newCA.CAFile))
		}
	}
	waitFor(t, 20*time.Second, "members refuse certificates of the old CA", accepts(oldPeer, oldPeerKey, false))
	if ok := accepts(newPeer, newPeerKey, true)(); !ok {
		t.Fatal("a certificate of the new CA is refused")
	}
	done, failed := load.stop()
	if failed != 0 || done < 10 {
		t.Fatalf("load during the rotation: %d requests, %d failed; first failure: %v", done, failed, load.firstErr.Load())
	}
	t.Logf("%d requests during the rotation", done)

	// A client that knows only the new CA; a write on one member is read
	// on the others, serializable, from their own stores.
	newOnly := newCA.ClientConfig(t)
	for _, m := range ms {
		m.clientTLS = newOnly
	}
	replicated := func(key string, on ...*member) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := client(t, ms[0]).Put(ctx, key, "v"); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		for _, m := range on {
			cli := client(t, m)
			waitFor(t, 20*time.Second, key+" replicated to "+m.name, func() bool {
				g, err := cli.Get(ctx, key, clientv3.WithSerializable())
				return err == nil && len(g.Kvs) == 1
			})
		}
	}
	replicated("after-rotation", ms[1], ms[2])

	ms[2].stop()
	ms[2].start()
	waitHealthy(t, ms[2])
	replicated("after-restart", ms[2])
}

// installMemberCerts issues the certificates of member name with ca and
// renames them into dir.
func installMemberCerts(t *testing.T, ca tlstest.Certificates, name, dir string) {
	t.Helper()
	for _, kind := range rotatedKinds {
		cert, key := ca.IssueMember(t, name+"-"+kind)
		// The key first, as the certificate's new key must be there when
		// it is read; the other order is also taken, once both are in.
		replaceFile(t, filepath.Join(dir, kind+"-key.pem"), readPEM(t, key))
		replaceFile(t, filepath.Join(dir, kind+".pem"), readPEM(t, cert))
	}
}

// replaceFile writes data into a new file and renames it to path.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func readPEM(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func loadPair(t *testing.T, certFile, keyFile string) *tls.Certificate {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &cert
}

// probeTLS makes one request to u on a new connection.
func probeTLS(u string, cfg *tls.Config) error {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	resp, err := hc.Get(u)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// servedCert is the certificate, as PEM, the listener of URL u presents
// to a new connection.
func servedCert(u string, cfg *tls.Config) ([]byte, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	c, err := tls.Dial("tcp", pu.Host, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.ConnectionState().PeerCertificates[0].Raw}), nil
}

// rotationLoad is a client's puts and linearizable gets on all the
// members, from a few goroutines, until stopped (or for 60 s at most).
type rotationLoad struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	done     atomic.Int64
	failed   atomic.Int64
	firstErr atomic.Value
}

func startLoad(t *testing.T, ms []*member, cfg *tls.Config) *rotationLoad {
	t.Helper()
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.curl)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	l := &rotationLoad{cancel: cancel}
	t.Cleanup(func() { l.stop(); cli.Close() })
	for w := range 4 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("load/%d/%d", w, i)
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := cli.Put(rctx, key, "v")
				if err == nil {
					_, err = cli.Get(rctx, key)
				}
				rcancel()
				if ctx.Err() != nil { // stopped during the request: not a failure
					return
				}
				l.done.Add(1)
				if err != nil {
					l.failed.Add(1)
					l.firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	return l
}

// stop ends the load and returns the number of requests (a put and a get)
// and of those that failed.
func (l *rotationLoad) stop() (done, failed int64) {
	l.cancel()
	l.wg.Wait()
	return l.done.Load(), l.failed.Load()
}
