package destination

import (
	"crypto/tls"
	"crypto/x509"
)

// ClientConfig is the TLS of a connection to the broker: the CA to trust instead of the system's,
// the name to verify, and the client certificate with key, its private key (Secrets.TLSKey). The
// errors name the field and never show the key.
func (t *TLS) ClientConfig(key string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(t.CA)) {
			return nil, refuse("tls.ca_pem", "no certificate in it")
		}
		cfg.RootCAs = pool
	}
	if t.Cert != "" {
		cert, err := tls.X509KeyPair([]byte(t.Cert), []byte(key))
		if err != nil {
			return nil, refuse("tls.cert_pem", "the certificate and its key do not make a pair")
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
