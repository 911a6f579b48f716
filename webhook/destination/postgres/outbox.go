package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
)

// The metadata of a message that the adapter writes in the row's columns; the payload is the
// event column.
const (
	establishmentMetadata = "establishment"
	revisionMetadata      = "content_revision"
	typeMetadata          = "type"
	timeMetadata          = "time"
)

// columns are the outbox's columns and their types as PostgreSQL names them (format_type).
var columns = []struct{ name, typ string }{
	{"id", "text"},
	{"position", "bigint"},
	{"establishment", "text"},
	{"content_revision", "bigint"},
	{"type", "text"},
	{"time", "timestamp with time zone"},
	{"event", "jsonb"},
	{"created_at", "timestamp with time zone"},
}

// insertColumns are the columns an insert gives, in the order of its arguments.
var insertColumns = []string{"id", "establishment", "content_revision", "type", "time", "event"}

// outbox is the watermill schema adapter of the outbox table: it inserts, it never selects (the
// platform's services read the table themselves). Its table is the one the topic names.
type outbox struct{}

var _ wsql.SchemaAdapter = outbox{}

// quote returns the table name ("table" or "schema.table", already validated as lower-case
// letters, digits and '_') as a quoted SQL identifier, so that a name such as "order" is a table
// and not a keyword.
func quote(table string) string {
	parts := strings.Split(table, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// InsertQuery inserts the messages in order, so that their positions follow the page; an id
// already in the table is skipped.
func (outbox) InsertQuery(params wsql.InsertQueryParams) (wsql.Query, error) {
	var q strings.Builder
	fmt.Fprintf(&q, "INSERT INTO %s (%s) VALUES ", quote(params.Topic), strings.Join(insertColumns, ", "))
	args := make([]any, 0, len(params.Msgs)*len(insertColumns))
	for i, msg := range params.Msgs {
		rev, err := strconv.ParseInt(msg.Metadata.Get(revisionMetadata), 10, 64)
		if err != nil {
			return wsql.Query{}, fmt.Errorf("event %s: content_revision: %w", msg.UUID, err)
		}
		at, err := time.Parse(time.RFC3339Nano, msg.Metadata.Get(timeMetadata))
		if err != nil {
			return wsql.Query{}, fmt.Errorf("event %s: time: %w", msg.UUID, err)
		}
		if i > 0 {
			q.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&q, "($%d, $%d, $%d, $%d, $%d, $%d::jsonb)", n+1, n+2, n+3, n+4, n+5, n+6)
		args = append(args, msg.UUID, msg.Metadata.Get(establishmentMetadata), rev, msg.Metadata.Get(typeMetadata), at, string(msg.Payload))
	}
	q.WriteString(" ON CONFLICT (id) DO NOTHING")
	return wsql.Query{Query: q.String(), Args: args}, nil
}

var errReadOnly = errors.New("the outbox table is read by the platform's services, not through watermill")

func (outbox) SelectQuery(wsql.SelectQueryParams) (wsql.Query, error) {
	return wsql.Query{}, errReadOnly
}

func (outbox) UnmarshalMessage(wsql.UnmarshalMessageParams) (wsql.Row, error) {
	return wsql.Row{}, errReadOnly
}

func (outbox) SubscribeIsolationLevel() sql.IsolationLevel { return sql.LevelDefault }

// SchemaInitializingQueries create the table and its index when missing.
func (outbox) SchemaInitializingQueries(params wsql.SchemaInitializingQueriesParams) ([]wsql.Query, error) {
	table := quote(params.Topic)
	index := quote(params.Topic[strings.LastIndex(params.Topic, ".")+1:] + "_establishment_revision")
	return []wsql.Query{
		{Query: "CREATE TABLE IF NOT EXISTS " + table + ` (
	id text PRIMARY KEY,
	position bigserial NOT NULL,
	establishment text NOT NULL,
	content_revision bigint NOT NULL,
	type text NOT NULL,
	time timestamptz NOT NULL,
	event jsonb NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
)`},
		{Query: "CREATE INDEX IF NOT EXISTS " + index + " ON " + table + " (establishment, content_revision)"},
	}, nil
}

// eventMessage is one event as the adapter inserts it: its id, its columns in the metadata, the
// whole event as the payload.
func eventMessage(ctx context.Context, id, slug string, rev int64, typ string, at time.Time, event []byte) *message.Message {
	msg := message.NewMessage(id, event)
	msg.SetContext(ctx)
	msg.Metadata.Set(establishmentMetadata, slug)
	msg.Metadata.Set(revisionMetadata, strconv.FormatInt(rev, 10))
	msg.Metadata.Set(typeMetadata, typ)
	msg.Metadata.Set(timeMetadata, at.Format(time.RFC3339Nano))
	return msg
}

// prepare creates the table when missing, then checks that it has the outbox's shape and that
// the connection's user may insert into it. A table that is already there is not created again,
// so that a user allowed to insert only is enough.
func prepare(ctx context.Context, db *sql.DB, table string) error {
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", quote(table)).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		queries, _ := outbox{}.SchemaInitializingQueries(wsql.SchemaInitializingQueriesParams{Topic: table})
		if err := inTx(ctx, db, queries); err != nil {
			return err
		}
	}
	return checkShape(ctx, db, table)
}

// inTx runs queries in one transaction.
func inTx(ctx context.Context, db *sql.DB, queries []wsql.Query) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range queries {
		if _, err := tx.ExecContext(ctx, q.Query, q.Args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// shapeError says how an existing table differs from the outbox.
type shapeError struct{ table, reason string }

func (e *shapeError) Error() string { return "table " + e.table + " " + e.reason }

// checkShape checks that table is a table with the outbox's columns, its id unique, and that
// the user may insert into it.
func checkShape(ctx context.Context, db *sql.DB, table string) error {
	var kind string
	var insert, uniqueID bool
	err := db.QueryRowContext(ctx, `SELECT c.relkind::text, has_table_privilege(c.oid, 'INSERT'),
	EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = c.oid AND i.indisunique AND i.indnkeyatts = 1 AND i.indpred IS NULL AND a.attname = 'id')
FROM pg_class c WHERE c.oid = to_regclass($1)`, quote(table)).Scan(&kind, &insert, &uniqueID)
	if err != nil {
		return err
	}
	if kind != "r" && kind != "p" {
		return &shapeError{table, "is not a table"}
	}
	have := map[string]string{}
	rows, err := db.QueryContext(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, quote(table))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return err
		}
		have[name] = typ
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var wrong []string
	for _, c := range columns {
		switch typ, ok := have[c.name]; {
		case !ok:
			wrong = append(wrong, c.name+" "+c.typ+" is missing")
		case typ != c.typ:
			wrong = append(wrong, c.name+" is "+typ+", not "+c.typ)
		}
	}
	switch {
	case len(wrong) > 0:
		return &shapeError{table, "exists without the outbox's columns: " + strings.Join(wrong, "; ")}
	case !uniqueID:
		return &shapeError{table, "has no primary key or unique index on id alone"}
	case !insert:
		return &shapeError{table, "is there, but the user may not insert into it"}
	}
	return nil
}
