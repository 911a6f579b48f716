package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/webhook"
)

// receiver is an HTTPS webhook receiver on loopback, with a certificate of its own that the
// service is told to trust, counting the deliveries of each endpoint by the path of its URL.
type receiver struct {
	url    string // base URL; an endpoint's is url + "/" + slug
	caFile string // the certificate, PEM, for the service's SSL_CERT_FILE
	srv    *http.Server

	// platform receives the deliveries of the platform endpoint, on /platform.
	platform http.Handler

	mu         sync.Mutex
	deliveries map[string]int // by slug
	first      time.Time
	last       time.Time
	unsigned   int
}

// newReceiver starts a receiver and writes its certificate into dir.
func newReceiver(dir string) (*receiver, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "scalebench receiver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	r := &receiver{caFile: dir + "/receiver-ca.pem", deliveries: make(map[string]int)}
	if err := os.WriteFile(r.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.url = "https://" + l.Addr().String() + "/hook"
	r.srv = &http.Server{
		Handler:           r,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
	}
	go func() {
		if err := r.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "webhook receiver:", err)
		}
	}()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/platform" && r.platform != nil {
		r.platform.ServeHTTP(w, req)
		return
	}
	_, _ = io.Copy(io.Discard, req.Body)
	slug := strings.TrimPrefix(req.URL.Path, "/hook/")
	now := time.Now()
	r.mu.Lock()
	r.deliveries[slug]++
	if r.first.IsZero() {
		r.first = now
	}
	r.last = now
	if req.Header.Get(webhook.HeaderWebhookSignature) == "" {
		r.unsigned++
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) close() { _ = r.srv.Close() }

// reset forgets every delivery received.
func (r *receiver) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.deliveries)
	r.first, r.last, r.unsigned = time.Time{}, time.Time{}, 0
}

// sinceText is t - since, or "never" for a zero t.
func sinceText(t, since time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(since).Round(time.Millisecond).String()
}

// hookCounts is what the receiver saw of the endpoints registered.
type hookCounts struct {
	once, none, more, total, unsigned int
	first, last                       time.Time
}

func (r *receiver) counts(slugs []string) hookCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := hookCounts{first: r.first, last: r.last, unsigned: r.unsigned}
	for _, slug := range slugs {
		switch n := r.deliveries[slug]; {
		case n == 0:
			c.none++
		case n == 1:
			c.once++
		default:
			c.more++
		}
	}
	for _, n := range r.deliveries {
		c.total += n
	}
	return c
}

// registerHooks registers one endpoint of the receiver on each establishment of slugs, 16 at a
// time, through the admin API, over as many kept-alive connections.
func (s *service) registerHooks(ctx context.Context, r *receiver, slugs []string) error {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	return parallelN(16, len(slugs), func(i int) error {
		body := fmt.Sprintf(`{"url": %q}`, r.url+"/"+slugs[i])
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.adminURL+"/admin/v1/establishments/"+slugs[i]+"/webhooks", bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // read whole, so that the connection is used again
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("register a webhook of %s: %s: %s", slugs[i], resp.Status, b)
		}
		return nil
	})
}

// waitHooks waits until every endpoint of slugs received a delivery, or until deadline, then a
// quiet period more, in which a second delivery would show.
func (r *receiver) waitHooks(ctx context.Context, slugs []string, deadline time.Time, quiet time.Duration) hookCounts {
	for time.Now().Before(deadline) && r.counts(slugs).none > 0 {
		select {
		case <-ctx.Done():
			return r.counts(slugs)
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
	case <-time.After(quiet):
	}
	return r.counts(slugs)
}

// movedByTheDay returns, in the file's order, up to n establishments whose documents differ from
// day to next: those a day change moves, each of whose endpoints it must signal once.
func movedByTheDay(file string, day, next domain.LocalDate, n int) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var moved []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for len(moved) < n && sc.Scan() {
		snap, err := domain.ParseInput(bytes.NewReader(sc.Bytes()))
		if err != nil {
			return nil, err
		}
		e := domain.New(domain.Slug(snap.Slug))
		res, err := e.Import(snap, domain.NewAPIKey([32]byte{}))
		if err != nil {
			return nil, err
		}
		var docs [2][]byte
		for i, d := range []domain.LocalDate{day, next} {
			for _, ev := range append(res.Events, domain.DayStarted{Date: d}) {
				e.Apply(ev)
			}
			res.Events = nil
			b := projections.Render(e, 1)
			// The documents only: a change of access fields alone raises no revision.
			docBundle := dockey.Bundle{Establishment: b.Establishment, Hours: b.Hours, Menus: b.Menus, MenuDetails: b.MenuDetails, JSONLD: b.JSONLD}
			if docs[i], err = dockey.EncodeBundle(&docBundle); err != nil {
				return nil, err
			}
		}
		if !bytes.Equal(docs[0], docs[1]) {
			moved = append(moved, snap.Slug)
		}
	}
	return moved, sc.Err()
}
