package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/opencarte/publisher/webhook/destination"
)

// maxRows bounds the rows of one INSERT statement: PostgreSQL takes at most 65,535 arguments a
// statement, six a row. A larger page is several statements in its one transaction.
const maxRows = 1000

// connectTimeout bounds a connection's establishment when the connection string sets none.
const connectTimeout = 10 * time.Second

// Open connects to the destination's database, creates its table when missing and checks that
// an existing one has the outbox's shape. The connections are a pool that dials again as needed:
// a Publish while the server is down fails, and a later one succeeds once it is back.
//
// The connection string's sslmode decides TLS; spec.TLS, when given, requires it, verified with
// its CA and name (the host's unless it names another), with its client certificate.
func Open(ctx context.Context, spec destination.Spec, sec destination.Secrets) (destination.Sink, error) {
	cfg, err := connConfig(spec, sec)
	if err != nil {
		return nil, err
	}
	s := &sink{db: stdlib.OpenDB(*cfg), table: spec.Table, where: where(cfg), secrets: []string{sec.DSN, cfg.Password}}
	s.db.SetMaxOpenConns(2)
	s.db.SetMaxIdleConns(1)
	s.db.SetConnMaxIdleTime(5 * time.Minute)
	if err := prepare(ctx, s.db, spec.Table); err != nil {
		s.db.Close()
		return nil, s.fail("open table "+spec.Table, err)
	}
	return s, nil
}

// Check refuses, naming the field, a registration that Open would refuse before connecting: a
// connection string that is not one, or TLS asked for over a connection string that turns it off.
func Check(spec destination.Spec, sec destination.Secrets) error {
	_, err := connConfig(spec, sec)
	return err
}

// connConfig returns the configuration of the destination's connections.
func connConfig(spec destination.Spec, sec destination.Secrets) (*pgx.ConnConfig, error) {
	if spec.ContentMode == destination.ModeBinary {
		return nil, &destination.FieldError{Field: "content_mode", Reason: "a PostgreSQL table holds the whole event, in the structured mode"}
	}
	if spec.Table == "" {
		return nil, &destination.FieldError{Field: "table", Reason: "is required"}
	}
	cfg, err := pgx.ParseConfig(sec.DSN)
	if err != nil {
		// The parser's message quotes the string, whose password it may not recognise.
		return nil, &destination.FieldError{Field: "dsn", Reason: "not a PostgreSQL connection string (a postgres:// URL or key=value pairs)"}
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	if spec.TLS != nil {
		if err := requireTLS(cfg, spec.TLS, sec.TLSKey); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// requireTLS makes the connection use TLS as t says, to every host the string names, with no
// fallback to a connection in clear.
func requireTLS(cfg *pgx.ConnConfig, t *destination.TLS, key string) error {
	if cfg.TLSConfig == nil {
		return &destination.FieldError{Field: "tls", Reason: "the dsn's sslmode turns TLS off"}
	}
	tlsCfg, err := t.ClientConfig(key)
	if err != nil {
		return err
	}
	hostTLS := func(host string) *pgconn.FallbackConfig {
		c := tlsCfg.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		return &pgconn.FallbackConfig{TLSConfig: c}
	}
	cfg.TLSConfig = hostTLS(cfg.Host).TLSConfig
	var fallbacks []*pgconn.FallbackConfig
	for _, f := range cfg.Fallbacks {
		if f.TLSConfig != nil {
			tf := hostTLS(f.Host)
			tf.Host, tf.Port = f.Host, f.Port
			fallbacks = append(fallbacks, tf)
		}
	}
	cfg.Fallbacks = fallbacks
	return nil
}

// where names the server in errors: its host, port and database, no credential.
func where(cfg *pgx.ConnConfig) string {
	return "postgres " + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))) + "/" + cfg.Database
}

// sink inserts each page in one transaction, through a watermill publisher on that transaction.
type sink struct {
	db      *sql.DB
	table   string
	where   string
	secrets []string // never in an error
}

// Publish inserts the events in order in one transaction; the events already in the table are
// left as they are.
func (s *sink) Publish(ctx context.Context, evs []destination.Event) error {
	if len(evs) == 0 {
		return nil
	}
	if err := s.insert(ctx, evs); err != nil {
		return s.fail("insert into "+s.table, err)
	}
	return nil
}

func (s *sink) insert(ctx context.Context, evs []destination.Event) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	pub, err := wsql.NewPublisher(wsql.TxFromStdSQL(tx), wsql.PublisherConfig{SchemaAdapter: outbox{}}, nil)
	if err != nil {
		return err
	}
	for len(evs) > 0 {
		n := min(len(evs), maxRows)
		msgs := make([]*message.Message, n)
		for i, e := range evs[:n] {
			msgs[i] = eventMessage(ctx, e.ID, e.Subject, e.Data.Revision, destination.EventType, e.Time, e.StructuredJSON())
		}
		if err := pub.Publish(s.table, msgs...); err != nil {
			return err
		}
		evs = evs[n:]
	}
	return tx.Commit()
}

func (s *sink) Close() error { return s.db.Close() }

// fail is err as the sink reports it: what it was doing and where, and why in words that hold no
// credential; a context's end stays recognisable (errors.Is).
func (s *sink) fail(doing string, err error) error {
	for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("%s: %s: %w", s.where, doing, ctxErr)
		}
	}
	reason := reasonOf(err)
	for _, secret := range s.secrets {
		if secret != "" {
			reason = strings.ReplaceAll(reason, secret, "[redacted]")
		}
	}
	return fmt.Errorf("%s: %s: %s", s.where, doing, reason)
}

// reasonOf says why err happened without the text of pgx's wrappers, which may quote the
// connection's settings: the server's own message and code, the table's shape, or the innermost
// error (the network's, TLS's).
func reasonOf(err error) string {
	var pgErr *pgconn.PgError
	var shape *shapeError
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
	case errors.As(err, &shape):
		return shape.reason
	case errors.Is(err, driver.ErrBadConn):
		return "the connection broke"
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}
