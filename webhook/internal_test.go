package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/events"
)

// The Standard Webhooks specification's published test vector.
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorBody      = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestStandardSignatureMatchesSpecVector(t *testing.T) {
	t.Parallel()
	key, err := parseSecret(vectorSecret)
	if err != nil {
		t.Fatalf("parseSecret: %v", err)
	}
	if got := standardSignature([][]byte{key}, vectorID, vectorTimestamp, []byte(vectorBody)); got != vectorSignature {
		t.Errorf("got %s, want %s", got, vectorSignature)
	}
	other := make([]byte, 32)
	got := standardSignature([][]byte{key, other}, vectorID, vectorTimestamp, []byte(vectorBody))
	if first, _, ok := strings.Cut(got, " "); !ok || first != vectorSignature {
		t.Errorf("two keys: got %s, want the vector's signature first, then a space", got)
	}
}

func TestServiceSignature(t *testing.T) {
	t.Parallel()
	key, _ := parseSecret(vectorSecret)
	// Computed independently with:
	//   printf '1614265330.{"test": 2432232314}' | openssl dgst -sha256 -mac HMAC -macopt hexkey:<key in hex>
	got := serviceSignature([][]byte{key}, vectorTimestamp, []byte(vectorBody))
	if want := "t=1614265330,v1=e96203c6de850e7dc1fde7489ef6140b402d3a5a64fe250cd2eef9830fac1cef"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	two := serviceSignature([][]byte{key, key}, vectorTimestamp, []byte(vectorBody))
	if want := got + ",v1=" + strings.TrimPrefix(got, "t=1614265330,v1="); two != want {
		t.Errorf("two keys: got %s, want %s", two, want)
	}
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, secret string
		ok           bool
	}{
		{"spec vector, 24 bytes", vectorSecret, true},
		{"32 bytes padded", "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=", true},
		{"32 bytes unpadded", "whsec_QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE", true},
		{"no prefix", "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=", false},
		{"too short", "whsec_c2hvcnQ=", false},
		{"too long", "whsec_" + strings.Repeat("QUFB", 22), false},
		{"not base64", "whsec_not base64!", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseSecret(tt.secret)
			if (err == nil) != tt.ok {
				t.Fatalf("got %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidSecret) {
				t.Errorf("got %v, want ErrInvalidSecret", err)
			}
		})
	}
}

func TestNonPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		{"93.184.215.14", true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true},
		{"8.8.8.8", true},
		{"127.0.0.1", false},
		{"127.255.0.9", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"::127.0.0.1", false},         // ipv4-compatible
		{"::8.8.8.8", false},           // ipv4-compatible, deprecated
		{"::ffff:0:7f00:1", false},     // ipv4-translated
		{"2001:4860:4860::8888", true}, // public
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"172.32.0.1", true},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"fe80::1", false},
		{"fd00:ec2::254", false},
		{"fc00::1", false},
		{"100.64.0.1", false},
		{"100.100.100.200", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"::", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"192.0.2.1", false},
		{"198.18.0.1", false},
		{"2001:db8::1", false},
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", true},    // NAT64 of 8.8.8.8
		{"2002:c0a8:0101::1", false},  // 6to4 of 192.168.1.1
		{"2002:0808:0808::1", true},   // 6to4 of 8.8.8.8
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			reason := nonPublic(netip.MustParseAddr(tt.addr))
			if (reason == "") != tt.public {
				t.Errorf("nonPublic(%s) = %q, want public %v", tt.addr, reason, tt.public)
			}
		})
	}
	p := addressPolicy{allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	if err := p.check(netip.MustParseAddr("::ffff:127.0.0.1")); err != nil {
		t.Errorf("mapped address in an allowed network: %v", err)
	}
	if err := p.control("tcp", "127.0.0.2:443", nil); !errors.Is(err, ErrRefusedAddress) {
		t.Errorf("control 127.0.0.2: got %v, want ErrRefusedAddress", err)
	}
	if err := p.control("tcp", "[fe80::1%eth0]:443", nil); !errors.Is(err, ErrRefusedAddress) {
		t.Errorf("control link-local with zone: got %v, want ErrRefusedAddress", err)
	}
	if err := p.control("tcp", "93.184.215.14:443", nil); err != nil {
		t.Errorf("control public: %v", err)
	}
}

// A refused address says why and how the operator allows one: the configuration's hint, or the
// fields of Config that allow it.
func TestRefusalSaysHowToAllowTheAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		policy addressPolicy
		want   string
	}{
		{addressPolicy{}, "webhook: refused address: 127.0.0.1 is loopback: Config.AllowPrivate or Config.AllowedNetworks allow it"},
		{addressPolicy{hint: "start with --allow-them"}, "webhook: refused address: 127.0.0.1 is loopback: start with --allow-them"},
	}
	for _, c := range cases {
		if err := c.policy.check(netip.MustParseAddr("127.0.0.1")); err == nil || err.Error() != c.want {
			t.Errorf("check: got %v, want %q", err, c.want)
		}
		if err := c.policy.control("tcp", "127.0.0.1:443", nil); err == nil || err.Error() != c.want {
			t.Errorf("control: got %v, want %q", err, c.want)
		}
	}
}

// A host that does not exist is an invalid endpoint; a resolver that fails is a temporary
// condition, and neither error repeats the DNS server's address.
func TestReceiverHostResolution(t *testing.T) {
	t.Parallel()
	p := addressPolicy{}
	failing := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("dial udp 10.255.255.53:53: connect: network is unreachable")
	}}
	err := p.checkReceiverURL(t.Context(), failing, "https://hooks.example.com/in")
	if !errors.Is(err, ErrResolverUnavailable) || strings.Contains(err.Error(), "10.255.255.53") {
		t.Errorf("failing resolver: got %v, want ErrResolverUnavailable without the server's address", err)
	}
	notFound := &net.DNSError{Err: "no such host", Name: "nowhere.example", Server: "10.255.255.53:53", IsNotFound: true}
	err = resolveError("nowhere.example", fmt.Errorf("lookup: %w", notFound))
	if !errors.Is(err, ErrInvalidEndpoint) || !strings.Contains(err.Error(), "does not resolve") || strings.Contains(err.Error(), "10.255.255.53") {
		t.Errorf("unknown host: got %v, want ErrInvalidEndpoint saying it does not resolve", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"", 0},
		{"120", 2 * time.Minute},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"soon", 0},
		{"99999999999", maxBackoff},
		{"Sat, 14 Mar 2026 09:10:00 GMT", 10 * time.Minute},
		{"Sat, 14 Mar 2026 08:00:00 GMT", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.value, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tt.value, got, tt.want)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	d := &Dispatcher{cfg: Config{MaxRetryAfter: 20 * time.Minute}.withDefaults()}
	for range 1000 {
		for n, base := range []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
			got := d.retryDelay(n+1, 0)
			if lo, hi := base*8/10, base*12/10; got < lo || got > hi {
				t.Fatalf("retryDelay(%d) = %s, want %s to %s", n+1, got, lo, hi)
			}
		}
		if got := d.retryDelay(1, time.Hour); got != 20*time.Minute {
			t.Fatalf("retry-after above the bound: got %s, want 20m", got)
		}
		if got := d.retryDelay(3, time.Second); got < 96*time.Second {
			t.Fatalf("retry-after below the backoff: got %s, want the backoff", got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"short window", Config{Window: 2 * time.Second}, true},
		{"window too short", Config{Window: time.Millisecond}, false},
		{"too many attempts", Config{MaxAttempts: 21}, false},
		{"negative attempts", Config{MaxAttempts: -1}, false},
		{"decreasing backoff", Config{Backoff: []time.Duration{time.Minute, time.Second}}, false},
		{"zero backoff", Config{Backoff: []time.Duration{0}}, false},
		{"jitter too large", Config{Jitter: 0.6}, false},
		{"no jitter", Config{Jitter: -1}, true},
		{"timeout too short", Config{Timeout: time.Millisecond}, false},
		{"negative retry-after", Config{MaxRetryAfter: -time.Second}, false},
		{"invalid network", Config{AllowedNetworks: []netip.Prefix{{}}}, false},
		{"concurrency too high", Config{Concurrency: 5000}, false},
		{"short retention", Config{LogRetention: time.Minute}, false},
		{"replicas", Config{Replicas: 3}, true},
		{"too many replicas", Config{Replicas: 7}, false},
		{"no master key", Config{}, false},
	}
	mk, err := ParseMasterKeys([]byte(NewMasterKey()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		if tt.name != "no master key" {
			tt.cfg.MasterKeys = mk
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
	c := Config{}.withDefaults()
	if c.Window != 30*time.Second || c.MaxAttempts != 5 || c.Timeout != 10*time.Second || c.Jitter != 0.2 || len(c.Backoff) != 4 {
		t.Errorf("defaults: got %+v", c)
	}
	if c.backoff(1) != 10*time.Second || c.backoff(4) != 10*time.Minute || c.backoff(9) != 10*time.Minute {
		t.Errorf("backoff schedule: got %s %s %s", c.backoff(1), c.backoff(4), c.backoff(9))
	}
}

func TestDeliveryIDsSortByCreation(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 100 {
		ids = append(ids, newDeliveryID(base.Add(time.Duration(i)*time.Microsecond)))
	}
	if !slices.IsSorted(ids) {
		t.Errorf("ids are not in creation order: %v", ids[:3])
	}
	for _, id := range ids {
		if err := checkKeyPart(id); err != nil || len(id) != len("msg_")+32 {
			t.Fatalf("id %q: %v", id, err)
		}
	}
}

func TestPayloadEncoding(t *testing.T) {
	t.Parallel()
	body, err := encodeBody(Payload{
		ID:        "msg_0123",
		Type:      EventContentUpdated,
		Timestamp: time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC),
		Data:      PayloadData{Establishment: "chez-marcel", Revision: 42, Resources: []string{"hours", "menus/plat-du-jour"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_0123","type":"establishment.content_updated","timestamp":"2026-03-14T09:30:00Z",` +
		`"data":{"establishment":"chez-marcel","content_revision":42,"resources":["hours","menus/plat-du-jour"]}}`
	if string(body) != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
}

func FuzzParseReceiverURL(f *testing.F) {
	for _, s := range []string{"https://93.184.215.14/hook", "http://x/", "https://u:p@h/", "https://[::1]:8443/a?b#c", "https://h:0/", "https:///", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseReceiverURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidEndpoint) {
				t.Fatalf("error %v does not match ErrInvalidEndpoint", err)
			}
			return
		}
		if u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("accepted %q as %+v", raw, u)
		}
		if _, err := parseReceiverURL(u.String()); err != nil {
			t.Fatalf("accepted %q but not its normal form %q: %v", raw, u.String(), err)
		}
	})
}

func FuzzParseSecret(f *testing.F) {
	for _, s := range []string{vectorSecret, "whsec_", "whsec_====", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := parseSecret(s)
		if err != nil {
			return
		}
		if len(key) < minKeyLen || len(key) > maxKeyLen {
			t.Fatalf("accepted a key of %d bytes", len(key))
		}
	})
}

// TestPayloadMatchesSchema checks payload.schema.json against encoded payloads: the same
// properties, required as written, and the patterns accept real ids and resources.
func TestPayloadMatchesSchema(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("payload.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var schema struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	def := func(name string) (object, object) {
		var top object
		if err := json.Unmarshal(schema.Defs[name], &top); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var data object
		if err := json.Unmarshal(top.Properties["data"], &data); err != nil {
			t.Fatalf("%s.data: %v", name, err)
		}
		return top, data
	}
	keys := func(data []byte) []string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(m))
	}
	now := time.Date(2026, 3, 14, 9, 30, 30, 0, time.UTC)
	for _, tt := range []struct {
		def      string
		p        any
		optional []string // data keys present here, and not required
	}{
		{"contentUpdated", Payload{ID: newDeliveryID(now), Type: EventContentUpdated, Timestamp: now,
			Data: PayloadData{Establishment: "chez-marcel", Revision: 42, Resources: []string{"hours", "menus/plat-du-jour"}}}, nil},
		{"ping", Payload{ID: newDeliveryID(now), Type: EventPing, Timestamp: now,
			Data: PayloadData{Establishment: "chez-marcel", EndpointID: "wh_0123"}}, []string{"establishment"}},
		{"ping", Payload{ID: newDeliveryID(now), Type: EventPing, Timestamp: now,
			Data: PayloadData{EndpointID: "wh_0123"}}, nil},
		{"establishmentsUpdated", PlatformPayload{ID: newDeliveryID(now), Type: EventEstablishmentsUpdated, Timestamp: now,
			Data: PlatformData{Changes: []events.Change{{Establishment: "a", Revision: 1, Resources: []string{"hours"}, Served: true}}, Cursor: "x", Gap: true}},
			[]string{"gap"}},
	} {
		body, err := encodeBody(tt.p)
		if err != nil {
			t.Fatal(err)
		}
		top, data := def(tt.def)
		var decoded struct{ Data json.RawMessage }
		_ = json.Unmarshal(body, &decoded)
		if got, want := keys(body), slices.Sorted(slices.Values(top.Required)); !slices.Equal(got, want) {
			t.Errorf("%s: payload keys %v, schema requires %v", tt.def, got, want)
		}
		if got, want := keys(decoded.Data), slices.Sorted(slices.Values(slices.Concat(data.Required, tt.optional))); !slices.Equal(got, want) {
			t.Errorf("%s: data keys %v, schema requires %v and has %v", tt.def, got, data.Required, tt.optional)
		}
		for _, k := range tt.optional {
			if _, ok := data.Properties[k]; !ok {
				t.Errorf("%s: data key %s is not in the schema", tt.def, k)
			}
		}
	}
	var id struct{ Pattern string }
	_ = json.Unmarshal(schema.Defs["id"], &id)
	if !regexp.MustCompile(id.Pattern).MatchString(newDeliveryID(now)) {
		t.Errorf("id pattern %s refuses %s", id.Pattern, newDeliveryID(now))
	}
}
