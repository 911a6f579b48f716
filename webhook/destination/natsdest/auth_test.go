package natsdest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
	"github.com/opencarte/publisher/webhook/destination/natsdest"
)

// publishOne publishes an event through a sink opened with sp and sec, and fails unless a
// consumer connected with opts receives it.
func publishOne(t *testing.T, sp destination.Spec, sec destination.Secrets, opts ...nats.Option) {
	t.Helper()
	sub := subscribe(t, sp.URL, sp.SubjectPrefix, opts...)
	sink := open(t, sp, sec)
	ev := brokertest.Events("chez-marcel", 5)
	if err := sink.Publish(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Header.Get("ce-id") != ev[0].ID {
		t.Errorf("received %v, want the event %s", msg.Header, ev[0].ID)
	}
}

func natsSpec(url string) destination.Spec {
	return destination.Spec{Type: destination.TypeNATS, URL: url, SubjectPrefix: "menus.changes", ContentMode: destination.ModeBinary}
}

func TestNKeySeed(t *testing.T) {
	t.Parallel()
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	opts := natstest.Options(t.TempDir())
	opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	s := natstest.StartWith(t, opts)
	publishOne(t, natsSpec(s.ClientURL()), destination.Secrets{NKeySeed: string(seed)}, nats.Nkey(pub, user.Sign))
}

// The content of a .creds file, on a server that trusts the operator that signed its account.
func TestCredsContent(t *testing.T) {
	t.Parallel()
	creds, resolver, operator := operatorCreds(t)
	opts := natstest.Options(t.TempDir())
	opts.JetStream = false
	opts.TrustedOperators = []*jwt.OperatorClaims{operator}
	opts.AccountResolver = resolver
	s := natstest.StartWith(t, opts)
	file := t.TempDir() + "/menus.creds"
	if err := os.WriteFile(file, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	publishOne(t, natsSpec(s.ClientURL()), destination.Secrets{Creds: creds}, nats.UserCredentials(file))
}

// operatorCreds returns the .creds content of a user of an account that an operator signed, the
// resolver that holds the account, and the operator.
func operatorCreds(t *testing.T) (string, *server.MemAccResolver, *jwt.OperatorClaims) {
	t.Helper()
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	operator := jwt.NewOperatorClaims(opPub)
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	accJWT, err := jwt.NewAccountClaims(accPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	userJWT, err := jwt.NewUserClaims(userPub).Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	return string(creds), resolver, operator
}

// A server with a certificate of its own CA that asks for a client certificate: trusted with
// the CA and the client certificate given, refused without either.
func TestTLSWithItsCAAndAClientCertificate(t *testing.T) {
	t.Parallel()
	caFile, certFile, keyFile := natstest.WriteCertificate(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	opts := natstest.Options(t.TempDir())
	opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, ClientAuth: tls.RequireAnyClientCert}
	opts.TLS, opts.TLSTimeout = true, 2
	s := natstest.StartWith(t, opts)
	ca, certPEM, keyPEM := readFile(t, caFile), readFile(t, certFile), readFile(t, keyFile)
	url := "tls://127.0.0.1:" + strings.Split(s.ClientURL(), ":")[2]
	sp := natsSpec(url)
	sp.TLS = &destination.TLS{CA: ca, Cert: certPEM}
	publishOne(t, sp, destination.Secrets{TLSKey: keyPEM}, nats.RootCAs(caFile), nats.ClientCert(certFile, keyFile))

	for _, tc := range []struct {
		tls  *destination.TLS
		key  string
		says string
	}{
		{&destination.TLS{Cert: certPEM}, keyPEM, "certificate signed by unknown authority"},
		// TLS 1.3 tells the refusal during the handshake or right after it, in other words.
		{&destination.TLS{CA: ca}, "", "tls"},
	} {
		sp.TLS = tc.tls
		sink, err := natsdest.Open(t.Context(), sp, destination.Secrets{TLSKey: tc.key})
		if err == nil {
			sink.Close()
			t.Errorf("Open with TLS %+v: no error, want %q", tc.tls, tc.says)
		} else if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Open: %v, want it to say %q", err, tc.says)
		}
	}
	sp.TLS = &destination.TLS{CA: "not a certificate"}
	if _, err := natsdest.Open(t.Context(), sp, destination.Secrets{}); err == nil || !strings.Contains(err.Error(), "tls.ca_pem") {
		t.Errorf("Open with a CA that is not one: %v, want the field named", err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Credentials the server refuses, or that are not credentials, give an error that says so and
// never shows them.
func TestRefusedCredentialsAreClearAndNotShown(t *testing.T) {
	t.Parallel()
	known, _ := nkeys.CreateUser()
	knownPub, _ := known.PublicKey()
	opts := natstest.Options(t.TempDir())
	opts.Users = []*server.User{{Username: "menus", Password: "right-pw"}}
	opts.Nkeys = []*server.NkeyUser{{Nkey: knownPub}}
	withUsers := natstest.StartWith(t, opts).ClientURL()
	opts = natstest.Options(t.TempDir())
	opts.Authorization = "right-token"
	withToken := natstest.StartWith(t, opts).ClientURL()
	stranger, _ := nkeys.CreateUser()
	strangerSeed, _ := stranger.Seed()
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	creds, _, _ := operatorCreds(t)
	credsKey, err := jwt.ParseDecoratedNKey([]byte(creds))
	if err != nil {
		t.Fatal(err)
	}
	credsSeed, _ := credsKey.Seed()
	for _, tc := range []struct {
		spec   destination.Spec
		sec    destination.Secrets
		secret string
		says   string
	}{
		{spec(withUsers, destination.ModeBinary, false), destination.Secrets{Password: "wrong-pw-4"}, "wrong-pw-4", "authorization violation"},
		{natsSpec(withToken), destination.Secrets{Token: "token-secret-5"}, "token-secret-5", "authorization violation"},
		{natsSpec(withUsers), destination.Secrets{NKeySeed: string(strangerSeed)}, string(strangerSeed), "authorization violation"},
		{natsSpec(withToken), destination.Secrets{Creds: creds}, string(credsSeed), "authorization violation"},
		{natsSpec(withUsers), destination.Secrets{NKeySeed: "SUnot-a-seed-6"}, "SUnot-a-seed-6", "nkey_seed: not an nkey seed"},
		{natsSpec(withUsers), destination.Secrets{NKeySeed: string(accountSeed)}, string(accountSeed), "nkey_seed: not a user's seed"},
		{natsSpec(withUsers), destination.Secrets{Creds: "garbage-creds-7"}, "garbage-creds-7", "creds: no user JWT"},
	} {
		sink, err := natsdest.Open(t.Context(), tc.spec, tc.sec)
		if err == nil {
			sink.Close()
			t.Errorf("Open with %s: no error", tc.says)
			continue
		}
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.says)) {
			t.Errorf("Open: %v, want it to say %q", err, tc.says)
		}
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("the error shows the credential: %v", err)
		}
	}
}

// A server that accepts the connection and never answers: Open returns when its context ends.
func TestOpenEndsWithItsContext(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		if c, err := l.Accept(); err == nil {
			cancel()
			defer c.Close()
			_, _ = c.Read(make([]byte, 1)) // silent until the client gives up
		}
	}()
	_, err = natsdest.Open(ctx, natsSpec("nats://"+l.Addr().String()), destination.Secrets{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Open on a silent server, its context cancelled: %v, want context.Canceled", err)
	}
}
