package destination

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// The broker types a destination publishes to.
const (
	TypeKafka    = "kafka"
	TypeAMQP     = "amqp"
	TypeNATS     = "nats"
	TypePostgres = "postgres"
)

// Types lists the broker types, in the order the documentation gives them.
var Types = []string{TypeKafka, TypeAMQP, TypeNATS, TypePostgres}

// Where a new destination starts.
const (
	StartNow = "now" // with the changes after its registration
	StartAll = "all" // with every establishment's current state, then its changes
)

// The content modes of the CloudEvents bindings.
const (
	ModeBinary     = "binary"     // the attributes in the broker's headers, the body the data
	ModeStructured = "structured" // the whole event as JSON in the body
)

// Spec is a destination's registration: its broker, where to publish in it, and its options. The
// fields of the other brokers' types are empty. Secrets are apart (Secrets): they are sealed at
// rest and never shown back.
type Spec struct {
	Type string `json:"type"`
	// Establishments, unless empty, are the only establishments whose changes are published.
	Establishments []string `json:"establishments,omitempty"`
	// Start is StartNow (the default) or StartAll.
	Start string `json:"start,omitempty"`
	// ContentMode is ModeBinary (the default) or ModeStructured; PostgreSQL takes ModeStructured
	// only (its rows hold the whole event), and it is its default.
	ContentMode string `json:"content_mode,omitempty"`

	// Kafka: the bootstrap brokers ("host:port") and the topic; the message key is the slug.
	Brokers []string `json:"brokers,omitempty"`
	Topic   string   `json:"topic,omitempty"`
	SASL    *SASL    `json:"sasl,omitempty"`
	// AMQP 0-9-1: the exchange (declared durable, of ExchangeType, "topic" by default) and the
	// routing key, in which "{establishment}" stands for the slug ("establishment.{establishment}"
	// by default). The URL is a secret: it holds the credentials.
	Exchange     string `json:"exchange,omitempty"`
	ExchangeType string `json:"exchange_type,omitempty"`
	RoutingKey   string `json:"routing_key,omitempty"`
	// NATS: messages on "<subject_prefix>.<slug>"; JetStream, when true, publishes with the
	// acknowledgement of a stream that must hold those subjects. The URL holds no credentials:
	// they are in Secrets.
	URL           string `json:"url,omitempty"`
	SubjectPrefix string `json:"subject_prefix,omitempty"`
	JetStream     bool   `json:"jetstream,omitempty"`
	User          string `json:"user,omitempty"`
	// PostgreSQL: the table, created when missing, "schema.table" or "table". The DSN is a
	// secret.
	Table string `json:"table,omitempty"`

	// TLS, unless nil, configures TLS to the broker.
	TLS *TLS `json:"tls,omitempty"`
}

// SASL is Kafka's authentication: Mechanism "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"; the
// password is in Secrets.
type SASL struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
}

// TLS configures a connection to a broker: the CA certificates to trust instead of the system's
// (PEM), the name to verify instead of the host's, and a client certificate (its key in Secrets).
type TLS struct {
	CA         string `json:"ca_pem,omitempty"`
	ServerName string `json:"server_name,omitempty"`
	Cert       string `json:"cert_pem,omitempty"`
}

// Secrets are the credentials of a destination: sealed at rest, never shown back, never logged.
type Secrets struct {
	// URL is AMQP's URL ("amqp://user:password@host:5672/vhost" or amqps://).
	URL string `json:"url,omitempty"`
	// DSN is PostgreSQL's connection string (a URL or key=value pairs).
	DSN string `json:"dsn,omitempty"`
	// Password is Kafka's SASL password, or the password of NATS's user.
	Password string `json:"password,omitempty"`
	// Token, Creds (a .creds file's content) and NKeySeed authenticate to NATS.
	Token    string `json:"token,omitempty"`
	Creds    string `json:"creds,omitempty"`
	NKeySeed string `json:"nkey_seed,omitempty"`
	// TLSKey is the key of TLS.Cert (PEM).
	TLSKey string `json:"tls_key_pem,omitempty"`
}

// Sink publishes events to one broker, in order. Publish returns once the broker has taken
// every event (its acknowledgement, where it gives one), or fails: the caller publishes the same
// events again, so a sink may deliver an event more than once but never drops one silently.
type Sink interface {
	Publish(ctx context.Context, evs []Event) error
	Close() error
}

// Opener connects to a destination's broker.
type Opener func(ctx context.Context, spec Spec, secrets Secrets) (Sink, error)

// Checker refuses, with a *FieldError, a valid registration that its broker's Opener would still
// refuse before connecting (a connection string its client cannot read, say), so that the
// registration is refused instead of failing at every attempt to connect.
type Checker func(spec Spec, secrets Secrets) error

// FieldError names the field of a registration that is refused, and why.
type FieldError struct{ Field, Reason string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func refuse(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Bounds of a registration.
const (
	maxNameLen        = 249 // Kafka's limit on a topic's name
	maxEstablishments = 10_000
)

var (
	topicName    = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	subjectToken = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	tableName    = regexp.MustCompile(`^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,62}$`)
)

// Validate checks a registration and fills its defaults; the error is a *FieldError naming the
// first field refused.
func (s *Spec) Validate(sec Secrets) error {
	if s.Start == "" {
		s.Start = StartNow
	}
	if s.Start != StartNow && s.Start != StartAll {
		return refuse("start", "must be %q or %q", StartNow, StartAll)
	}
	if err := checkEstablishments(s.Establishments); err != nil {
		return err
	}
	switch s.ContentMode {
	case "":
		s.ContentMode = ModeBinary
		if s.Type == TypePostgres {
			s.ContentMode = ModeStructured
		}
	case ModeBinary, ModeStructured:
	default:
		return refuse("content_mode", "must be %q or %q", ModeBinary, ModeStructured)
	}
	var err error
	switch s.Type {
	case TypeKafka:
		err = s.validateKafka(sec)
	case TypeAMQP:
		err = s.validateAMQP(sec)
	case TypeNATS:
		err = s.validateNATS(sec)
	case TypePostgres:
		err = s.validatePostgres(sec)
	default:
		return refuse("type", "must be one of %s", strings.Join(Types, ", "))
	}
	if err != nil {
		return err
	}
	if s.TLS != nil && (s.TLS.Cert == "") != (sec.TLSKey == "") {
		return refuse("tls.cert_pem", "a client certificate needs its key (tls.key_pem), and the key its certificate")
	}
	if s.TLS != nil {
		if _, err := s.TLS.ClientConfig(sec.TLSKey); err != nil {
			return err
		}
	}
	return nil
}

// slugForm is an establishment's slug: what the read API's paths and the change signals name.
var slugForm = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// checkEstablishments refuses a filter of too many slugs, of one that is not a slug, or of one
// twice. An empty list, as no list, keeps every establishment.
func checkEstablishments(slugs []string) error {
	if len(slugs) > maxEstablishments {
		return refuse("establishments", "at most %d", maxEstablishments)
	}
	seen := make(map[string]bool, len(slugs))
	for i, slug := range slugs {
		field := fmt.Sprintf("establishments[%d]", i)
		if !slugForm.MatchString(slug) {
			return refuse(field, "%q is not a slug: 1 to 64 of a-z, 0-9 and inner hyphens", slug)
		}
		if seen[slug] {
			return refuse(field, "%q is listed twice", slug)
		}
		seen[slug] = true
	}
	return nil
}

func (s *Spec) validateKafka(sec Secrets) error {
	if len(s.Brokers) == 0 || len(s.Brokers) > 100 {
		return refuse("brokers", "give 1 to 100 addresses host:port")
	}
	for _, b := range s.Brokers {
		if u, err := url.Parse("kafka://" + b); err != nil || u.Hostname() == "" || u.Port() == "" || u.Host != b {
			return refuse("brokers", "%q is not host:port", b)
		}
	}
	if len(s.Topic) > maxNameLen || !topicName.MatchString(s.Topic) || s.Topic == "." || s.Topic == ".." {
		return refuse("topic", "1 to %d letters, digits, '.', '_' or '-'", maxNameLen)
	}
	if s.SASL != nil {
		if !slices.Contains([]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, s.SASL.Mechanism) {
			return refuse("sasl.mechanism", "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
		if s.SASL.Username == "" || sec.Password == "" {
			return refuse("sasl", "needs a username and a password")
		}
	}
	return nil
}

func (s *Spec) validateAMQP(sec Secrets) error {
	u, err := url.Parse(sec.URL)
	if err != nil || u.Scheme != "amqp" && u.Scheme != "amqps" || u.Host == "" {
		return refuse("url", "must be an amqp:// or amqps:// URL")
	}
	if s.TLS != nil && u.Scheme != "amqps" {
		return refuse("tls", "TLS needs an amqps:// URL")
	}
	if s.Exchange == "" || len(s.Exchange) > 255 || !topicName.MatchString(s.Exchange) || strings.HasPrefix(s.Exchange, "amq.") {
		return refuse("exchange", "1 to 255 letters, digits, '.', '_' or '-', not starting with \"amq.\"")
	}
	if s.ExchangeType == "" {
		s.ExchangeType = "topic"
	}
	if !slices.Contains([]string{"topic", "direct", "fanout", "headers"}, s.ExchangeType) {
		return refuse("exchange_type", "must be topic, direct, fanout or headers")
	}
	if s.RoutingKey == "" {
		s.RoutingKey = "establishment.{establishment}"
	}
	// AMQP's routing keys are at most 255 bytes, with the longest slug in place of each
	// "{establishment}".
	const placeholder, longestSlug = "{establishment}", 64
	if n := strings.Count(s.RoutingKey, placeholder); len(s.RoutingKey)+n*(longestSlug-len(placeholder)) > 255 {
		return refuse("routing_key", "at most 255 bytes once each {establishment} is a slug of up to %d bytes", longestSlug)
	}
	return nil
}

func (s *Spec) validateNATS(sec Secrets) error {
	u, err := url.Parse(s.URL)
	if err != nil || u.Scheme != "nats" && u.Scheme != "tls" || u.Host == "" {
		return refuse("url", "must be a nats:// or tls:// URL")
	}
	if u.User != nil {
		return refuse("url", "give the credentials as user and password, token, creds or nkey_seed, not in the URL")
	}
	if len(s.SubjectPrefix) > maxNameLen || !subjectToken.MatchString(s.SubjectPrefix) {
		return refuse("subject_prefix", "dot-separated tokens of letters, digits, '_' or '-', no wildcard")
	}
	auths := 0
	for _, set := range []bool{s.User != "" || sec.Password != "", sec.Token != "", sec.Creds != "", sec.NKeySeed != ""} {
		if set {
			auths++
		}
	}
	if auths > 1 {
		return refuse("credentials", "give one of user and password, token, creds or nkey_seed")
	}
	if (s.User == "") != (sec.Password == "") {
		return refuse("user", "a user needs its password, and a password its user")
	}
	return nil
}

func (s *Spec) validatePostgres(sec Secrets) error {
	if strings.TrimSpace(sec.DSN) == "" {
		return refuse("dsn", "is required")
	}
	if !tableName.MatchString(s.Table) {
		return refuse("table", "a lower-case name, or schema.name, of letters, digits and '_'")
	}
	if s.ContentMode != ModeStructured {
		return refuse("content_mode", "a PostgreSQL table holds the whole event: %q only", ModeStructured)
	}
	return nil
}
