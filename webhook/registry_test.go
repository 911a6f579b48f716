package webhook_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook"
)

func TestRegisterValidates(t *testing.T) {
	nc := natstest.Connect(t, natstest.Start(t))
	strict := openDispatcher(t, nc, webhook.Config{}).Registry()
	tests := []struct {
		name, slug, id, url, secret string
		want                        error
	}{
		{"public address", "chez-marcel", "wh_1", "https://93.184.215.14/hook", secretA, nil},
		{"public address with port and query", "chez-marcel", "wh_2", "https://93.184.215.14:8443/hook?t=1", secretA, nil},
		{"http refused", "chez-marcel", "wh_3", "http://93.184.215.14/hook", secretA, webhook.ErrInvalidEndpoint},
		{"no scheme", "chez-marcel", "wh_3", "93.184.215.14/hook", secretA, webhook.ErrInvalidEndpoint},
		{"user information", "chez-marcel", "wh_3", "https://u:p@93.184.215.14/", secretA, webhook.ErrInvalidEndpoint},
		{"fragment", "chez-marcel", "wh_3", "https://93.184.215.14/#x", secretA, webhook.ErrInvalidEndpoint},
		{"no host", "chez-marcel", "wh_3", "https:///hook", secretA, webhook.ErrInvalidEndpoint},
		{"bad port", "chez-marcel", "wh_3", "https://93.184.215.14:0/", secretA, webhook.ErrInvalidEndpoint},
		{"too long", "chez-marcel", "wh_3", "https://93.184.215.14/" + strings.Repeat("a", 2048), secretA, webhook.ErrInvalidEndpoint},
		{"loopback", "chez-marcel", "wh_3", "https://127.0.0.1/", secretA, webhook.ErrRefusedAddress},
		{"localhost", "chez-marcel", "wh_3", "https://localhost:8443/", secretA, webhook.ErrRefusedAddress},
		{"ipv6 loopback", "chez-marcel", "wh_3", "https://[::1]/", secretA, webhook.ErrRefusedAddress},
		{"mapped loopback", "chez-marcel", "wh_3", "https://[::ffff:127.0.0.1]/", secretA, webhook.ErrRefusedAddress},
		{"private", "chez-marcel", "wh_3", "https://10.1.2.3/", secretA, webhook.ErrRefusedAddress},
		{"private 192.168", "chez-marcel", "wh_3", "https://192.168.0.10/", secretA, webhook.ErrRefusedAddress},
		{"link-local metadata", "chez-marcel", "wh_3", "https://169.254.169.254/latest/meta-data/", secretA, webhook.ErrRefusedAddress},
		{"aws ipv6 metadata", "chez-marcel", "wh_3", "https://[fd00:ec2::254]/", secretA, webhook.ErrRefusedAddress},
		{"alibaba metadata", "chez-marcel", "wh_3", "https://100.100.100.200/", secretA, webhook.ErrRefusedAddress},
		{"unspecified", "chez-marcel", "wh_3", "https://0.0.0.0/", secretA, webhook.ErrRefusedAddress},
		{"nat64 of private", "chez-marcel", "wh_3", "https://[64:ff9b::a00:1]/", secretA, webhook.ErrRefusedAddress},
		{"bad secret prefix", "chez-marcel", "wh_3", "https://93.184.215.14/", "secret", webhook.ErrInvalidSecret},
		{"short secret", "chez-marcel", "wh_3", "https://93.184.215.14/", "whsec_c2hvcnQ=", webhook.ErrInvalidSecret},
		{"bad slug", "chez.marcel", "wh_3", "https://93.184.215.14/", secretA, webhook.ErrInvalidEndpoint},
		{"bad id", "chez-marcel", "wh 3", "https://93.184.215.14/", secretA, webhook.ErrInvalidEndpoint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := strict.Register(t.Context(), tt.slug, tt.id, tt.url, tt.secret)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Register(%s): got %v, want %v", tt.url, err, tt.want)
			}
		})
	}
	if err := strict.Register(t.Context(), "la-cave", "wh_1", "https://93.184.215.14/", secretA); !errors.Is(err, webhook.ErrInvalidEndpoint) {
		t.Errorf("id of another establishment: got %v, want ErrInvalidEndpoint", err)
	}
	eps, err := strict.Endpoints(t.Context(), "chez-marcel")
	if err != nil {
		t.Fatalf("Endpoints: %v", err)
	}
	if len(eps) != 2 || eps[0].ID != "wh_1" || eps[1].ID != "wh_2" {
		t.Errorf("got endpoints %+v, want wh_1 and wh_2 only", eps)
	}

	// What configuration allows.
	allowAll := openDispatcher(t, nc, webhook.Config{AllowPrivate: true}).Registry()
	if err := allowAll.Register(t.Context(), "chez-marcel", "wh_local", "https://127.0.0.1:8443/", secretA); err != nil {
		t.Errorf("AllowPrivate: %v", err)
	}
	someNets := openDispatcher(t, nc, webhook.Config{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}).Registry()
	if err := someNets.Register(t.Context(), "chez-marcel", "wh_partner", "https://10.1.2.3/", secretA); err != nil {
		t.Errorf("AllowedNetworks: %v", err)
	}
	if err := someNets.Register(t.Context(), "chez-marcel", "wh_other", "https://10.2.2.3/", secretA); !errors.Is(err, webhook.ErrRefusedAddress) {
		t.Errorf("outside AllowedNetworks: got %v, want ErrRefusedAddress", err)
	}
}

func TestRegistryLifecycle(t *testing.T) {
	nc := natstest.Connect(t, natstest.Start(t))
	d := openDispatcher(t, nc, webhook.Config{})
	reg := d.Registry()
	ctx := t.Context()
	if err := reg.Register(ctx, "chez-marcel", "wh_1", "https://93.184.215.14/a", secretA); err != nil {
		t.Fatalf("Register: %v", err)
	}
	first, err := reg.Endpoint(ctx, "chez-marcel", "wh_1")
	if err != nil {
		t.Fatalf("Endpoint: %v", err)
	}
	if err := reg.Register(ctx, "chez-marcel", "wh_1", "https://93.184.215.14/b", secretB); err != nil {
		t.Fatalf("Register again: %v", err)
	}
	again, err := reg.Endpoint(ctx, "chez-marcel", "wh_1")
	if err != nil {
		t.Fatalf("Endpoint: %v", err)
	}
	if again.URL != "https://93.184.215.14/b" || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("registering again: got %+v, want the new URL and the first creation time", again)
	}
	for _, tt := range []struct {
		name  string
		grace time.Duration
		err   error
	}{
		{"negative grace", -time.Second, webhook.ErrInvalidSecret},
		{"grace too long", webhook.MaxRotationGrace + time.Second, webhook.ErrInvalidSecret},
	} {
		if err := reg.RotateSecret(ctx, "chez-marcel", "wh_1", secretA, tt.grace); !errors.Is(err, tt.err) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.err)
		}
	}
	if err := reg.RotateSecret(ctx, "chez-marcel", "wh_9", secretA, 0); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("RotateSecret unknown: got %v, want ErrEndpointNotFound", err)
	}
	if err := reg.Enable(ctx, "chez-marcel", "wh_1"); err != nil {
		t.Errorf("Enable an enabled endpoint: %v", err)
	}
	if err := reg.Remove(ctx, "chez-marcel", "wh_1"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := reg.Remove(ctx, "chez-marcel", "wh_1"); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("Remove twice: got %v, want ErrEndpointNotFound", err)
	}
	if _, err := reg.Endpoint(ctx, "chez-marcel", "wh_1"); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("Endpoint after Remove: got %v, want ErrEndpointNotFound", err)
	}
	if eps, err := reg.Endpoints(ctx, "chez-marcel"); err != nil || len(eps) != 0 {
		t.Errorf("Endpoints after Remove: got %v, %v", eps, err)
	}
	if log, err := d.DeliveryLog(ctx, "wh_none", 0); err != nil || len(log) != 0 {
		t.Errorf("DeliveryLog of an endpoint without deliveries: got %v, %v", log, err)
	}
	if _, err := d.Delivery(ctx, "msg_none"); !errors.Is(err, webhook.ErrDeliveryNotFound) {
		t.Errorf("Delivery unknown: got %v, want ErrDeliveryNotFound", err)
	}
	stats, err := d.Stats(ctx)
	if err != nil || stats != (webhook.Stats{}) {
		t.Errorf("Stats: got %+v, %v; want zeros", stats, err)
	}
}

// TestAddressCheckedAtConnect registers a receiver on 127.0.0.1 with a configuration that allows
// it, then delivers with one that does not, as if the host had been re-pointed to a loopback
// address after registration: the connection is refused before a byte is sent.
func TestAddressCheckedAtConnect(t *testing.T) {
	rcv := newReceiver(t, nil)
	nc := natstest.Connect(t, natstest.Start(t))
	lenient := openDispatcher(t, nc, testConfig(t, rcv))
	register(t, lenient, "chez-marcel", "wh_a", rcv.url("/"), secretA)

	cfg := testConfig(t, rcv)
	cfg.AllowedNetworks = nil
	strict := openDispatcher(t, nc, cfg)
	a, err := strict.Ping(t.Context(), "chez-marcel", "wh_a")
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if a.OK() || !strings.Contains(a.Error, "refused address") {
		t.Errorf("got attempt %+v, want a refused address", a)
	}
	if n := rcv.count(); n != 0 {
		t.Errorf("receiver got %d requests, want 0", n)
	}
	if a, err := lenient.Ping(t.Context(), "chez-marcel", "wh_a"); err != nil || !a.OK() {
		t.Errorf("allowed ping: got %+v, %v", a, err)
	}
}

// TestDeliveryRefusesPlainHTTP stores an http:// endpoint behind the registry's back: the
// dispatcher still refuses to send to it.
func TestDeliveryRefusesPlainHTTP(t *testing.T) {
	var hits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(plain.Close)
	nc := natstest.Connect(t, natstest.Start(t))
	d := openDispatcher(t, nc, webhook.Config{AllowPrivate: true})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), webhook.EndpointsBucket)
	if err != nil {
		t.Fatalf("bucket: %v", err)
	}
	rec := `{"id":"wh_h","establishment":"chez-marcel","url":"` + plain.URL + `/","secrets":[{"value":"` + secretA + `"}]}`
	if _, err := kv.Put(t.Context(), "chez-marcel.wh_h", []byte(rec)); err != nil {
		t.Fatalf("put: %v", err)
	}
	a, err := d.Ping(t.Context(), "chez-marcel", "wh_h")
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if a.OK() || !strings.Contains(a.Error, "https") || hits.Load() != 0 {
		t.Errorf("got attempt %+v and %d requests, want a refusal before any request", a, hits.Load())
	}
}

// TestAttemptTimeoutAndRedirect runs on the real clock: an attempt ends at the timeout, and a
// redirect is an unsuccessful answer, not followed.
func TestAttemptTimeoutAndRedirect(t *testing.T) {
	release := make(chan struct{})
	slow := newReceiver(t, func(int, http.ResponseWriter) { <-release })
	t.Cleanup(func() { close(release) }) // runs before the server closes
	target := newReceiver(t, nil)
	redirect := newReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", target.url("/"))
		w.WriteHeader(http.StatusFound)
	})
	nc := natstest.Connect(t, natstest.Start(t))
	cfg := testConfig(t, slow)
	cfg.Timeout = 300 * time.Millisecond
	d := openDispatcher(t, nc, cfg)
	register(t, d, "chez-marcel", "wh_slow", slow.url("/"), secretA)
	register(t, d, "chez-marcel", "wh_redirect", redirect.url("/"), secretA)

	began := time.Now()
	a, err := d.Ping(t.Context(), "chez-marcel", "wh_slow")
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if took := time.Since(began); a.OK() || a.StatusCode != 0 || took > 5*time.Second {
		t.Errorf("slow receiver: got %+v after %s, want a timeout after 300ms", a, took)
	}
	// The client's deadline or the transport's header timeout, whichever fires first.
	if e := strings.ToLower(a.Error); !strings.Contains(e, "timeout") && !strings.Contains(e, "deadline") {
		t.Errorf("slow receiver: error %q does not say timeout", a.Error)
	}

	a, err = d.Ping(t.Context(), "chez-marcel", "wh_redirect")
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if a.OK() || a.StatusCode != http.StatusFound || !strings.Contains(a.Error, "redirect") {
		t.Errorf("redirect: got %+v, want an unsuccessful 302", a)
	}
	if n := target.count(); n != 0 {
		t.Errorf("redirect target got %d requests, want 0", n)
	}
}

// Create stores an endpoint once: created again, by itself or by another writer at once, it stores
// nothing and names the URL registered, read from the bucket; an id of another establishment is
// refused.
func TestCreateStoresOnce(t *testing.T) {
	srv := natstest.Start(t)
	d := openDispatcher(t, natstest.Connect(t, srv), webhook.Config{})
	other := openDispatcher(t, natstest.Connect(t, srv), webhook.Config{}) // another process
	ctx := t.Context()
	existing := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, reg := range []*webhook.Registry{d.Registry(), other.Registry()} {
		wg.Go(func() {
			existing[i], errs[i] = reg.Create(ctx, "chez-marcel", "wh_1", "https://93.184.215.14/a", secretA)
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || (existing[0] == "") == (existing[1] == "") {
		t.Fatalf("two creations at once: got %q %v and %q %v, want one created and one naming its URL", existing[0], errs[0], existing[1], errs[1])
	}
	if got := existing[0] + existing[1]; got != "https://93.184.215.14/a" {
		t.Errorf("the creation that stored nothing named %q", got)
	}
	before, err := d.Registry().Endpoint(ctx, "chez-marcel", "wh_1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := d.Registry().Create(ctx, "chez-marcel", "wh_1", "https://93.184.215.14/b", secretB); err != nil || got != "https://93.184.215.14/a" {
		t.Errorf("created again with another URL: got %q %v, want the first URL", got, err)
	}
	if after, err := d.Registry().Endpoint(ctx, "chez-marcel", "wh_1"); err != nil || after.URL != before.URL || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("created again: the endpoint became %+v (%v), want it unchanged: %+v", after, err, before)
	}
	if _, err := d.Registry().Create(ctx, "le-bistrot", "wh_1", "https://93.184.215.14/a", secretA); !errors.Is(err, webhook.ErrInvalidEndpoint) {
		t.Errorf("the id of another establishment's endpoint: got %v, want ErrInvalidEndpoint", err)
	}

	// Removed, the endpoint is absent to every reader, and a creation under its id still finds
	// it, storing nothing; Register makes it again.
	reg := d.Registry()
	if err := reg.Remove(ctx, "chez-marcel", "wh_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Endpoint(ctx, "chez-marcel", "wh_1"); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("removed endpoint: got %v, want ErrEndpointNotFound", err)
	}
	if eps, err := reg.Endpoints(ctx, "chez-marcel"); err != nil || len(eps) != 0 {
		t.Errorf("endpoints after the removal: got %v %v, want none", eps, err)
	}
	if err := reg.Remove(ctx, "chez-marcel", "wh_1"); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("removed again: got %v, want ErrEndpointNotFound", err)
	}
	if err := reg.RotateSecret(ctx, "chez-marcel", "wh_1", secretB, 0); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("rotating a removed endpoint's secret: got %v, want ErrEndpointNotFound", err)
	}
	if got, err := reg.Create(ctx, "chez-marcel", "wh_1", "https://93.184.215.14/a", secretA); err != nil || got != "https://93.184.215.14/a" {
		t.Errorf("created after its removal: got %q %v, want the removed endpoint's URL and nothing stored", got, err)
	}
	if _, err := reg.Endpoint(ctx, "chez-marcel", "wh_1"); !errors.Is(err, webhook.ErrEndpointNotFound) {
		t.Errorf("a creation after the removal stored the endpoint again: %v", err)
	}
	if err := reg.Register(ctx, "chez-marcel", "wh_1", "https://93.184.215.14/c", secretB); err != nil {
		t.Fatal(err)
	}
	if ep, err := reg.Endpoint(ctx, "chez-marcel", "wh_1"); err != nil || ep.URL != "https://93.184.215.14/c" || ep.Disabled {
		t.Errorf("registered again after its removal: got %+v %v", ep, err)
	}
}
