//go:build brokers

package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
	"github.com/opencarte/publisher/webhook/destination"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
	"github.com/opencarte/publisher/webhook/destination/postgres"
)

func open(t *testing.T, pg *brokertest.PostgreSQL, table string) destination.Sink {
	t.Helper()
	spec := destination.Spec{Type: destination.TypePostgres, Table: table}
	sec := destination.Secrets{DSN: pg.DSN()}
	if err := spec.Validate(sec); err != nil {
		t.Fatal(err)
	}
	sink, err := postgres.Open(t.Context(), spec, sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return sink
}

func connect(t *testing.T, pg *brokertest.PostgreSQL) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// row is a row of the outbox, as a platform's service reads it.
type row struct {
	ID, Establishment, Type string
	Position, Revision      int64
	Time, CreatedAt         time.Time
	Event                   []byte
}

// readRows reads the table in position order with a client of its own.
func readRows(t *testing.T, pg *brokertest.PostgreSQL, table string) []row {
	t.Helper()
	rows, err := connect(t, pg).Query(t.Context(),
		"SELECT id, position, establishment, content_revision, type, time, event, created_at FROM "+table+" ORDER BY position")
	if err != nil {
		t.Fatal(err)
	}
	var out []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.ID, &r.Position, &r.Establishment, &r.Revision, &r.Type, &r.Time, &r.Event, &r.CreatedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func ids(rows []row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func eventIDs(evs []destination.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// cloudEvent is a row's event column.
type cloudEvent struct {
	SpecVersion, ID, Source, Type, Subject, Time, DataContentType string
	Data                                                          events.Change
}

func TestPostgreSQLRowsInPositionOrder(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	sink := open(t, pg, "menu_events")
	evs := brokertest.Interleaved(5, "chez-marcel", "other")
	if err := sink.Publish(t.Context(), evs[:4]); err != nil {
		t.Fatal(err)
	}
	if err := sink.Publish(t.Context(), evs[4:]); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, pg, "menu_events")
	if got, want := ids(rows), eventIDs(evs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("rows in position order %v, want the events in the order published %v", got, want)
	}
	last := map[string]int64{}
	for i, r := range rows {
		e := evs[i]
		if r.Establishment != e.Subject || r.Revision != e.Data.Revision || r.Type != destination.EventType ||
			!r.Time.Equal(e.Time) || r.CreatedAt.IsZero() {
			t.Errorf("row %+v, want the columns of %+v", r, e)
		}
		var ce cloudEvent
		if err := json.Unmarshal(r.Event, &ce); err != nil {
			t.Fatalf("event column %s: %v", r.Event, err)
		}
		if ce.SpecVersion != "1.0" || ce.ID != e.ID || ce.Source != "https://menus.example" || ce.Type != destination.EventType ||
			ce.Subject != e.Subject || ce.DataContentType != "application/json" || ce.Data.Revision != e.Data.Revision ||
			ce.Data.Establishment != e.Subject || !ce.Data.Served || len(ce.Data.Resources) != 1 {
			t.Errorf("event column %s, want the CloudEvent of %+v", r.Event, e)
		}
		if at, err := time.Parse(time.RFC3339Nano, ce.Time); err != nil || !at.Equal(e.Time) {
			t.Errorf("event time %q, want %s", ce.Time, e.Time)
		}
		if r.Revision <= last[r.Establishment] {
			t.Errorf("%s: revision %d after %d", r.Establishment, r.Revision, last[r.Establishment])
		}
		last[r.Establishment] = r.Revision
	}
}

func TestPostgreSQLPagePublishedTwiceInsertsOnce(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	sink := open(t, pg, "menu_events")
	page := brokertest.Interleaved(3, "a", "b")
	if err := sink.Publish(t.Context(), page); err != nil {
		t.Fatal(err)
	}
	before := readRows(t, pg, "menu_events")
	again := append(append([]destination.Event(nil), page...), brokertest.Events("a", 4)...)
	if err := sink.Publish(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, pg, "menu_events")
	if got, want := ids(rows), eventIDs(again); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("rows %v, want each event once: %v", got, want)
	}
	for i, r := range before {
		if rows[i].Position != r.Position {
			t.Errorf("row %s moved from position %d to %d", r.ID, r.Position, rows[i].Position)
		}
	}
}

// A page is one transaction: a row the table refuses leaves none of the page.
func TestPostgreSQLPageAllOrNothing(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	sink := open(t, pg, "menu_events")
	if _, err := connect(t, pg).Exec(t.Context(), "ALTER TABLE menu_events ADD CONSTRAINT no_refused CHECK (establishment <> 'refused')"); err != nil {
		t.Fatal(err)
	}
	page := append(brokertest.Interleaved(2, "a"), brokertest.Events("refused", 1)...)
	err := sink.Publish(t.Context(), page)
	if err == nil || !strings.Contains(err.Error(), "no_refused") {
		t.Fatalf("Publish of a page with a refused row: %v, want the constraint's error", err)
	}
	if rows := readRows(t, pg, "menu_events"); len(rows) != 0 {
		t.Errorf("rows %v after a failed page, want none", ids(rows))
	}
	if err := sink.Publish(t.Context(), page[:2]); err != nil {
		t.Fatalf("Publish after a failed one: %v", err)
	}
	if rows := readRows(t, pg, "menu_events"); len(rows) != 2 {
		t.Errorf("rows %v, want the page's 2", ids(rows))
	}
}

// A page larger than one statement's arguments is still one transaction, in order.
func TestPostgreSQLLargePage(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	sink := open(t, pg, "menu_events")
	var revs []int64
	for rev := int64(1); rev <= 2500; rev++ {
		revs = append(revs, rev)
	}
	page := brokertest.Events("big", revs...)
	if err := sink.Publish(t.Context(), page); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, pg, "menu_events")
	if got, want := ids(rows), eventIDs(page); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%d rows, want the page's %d in order", len(got), len(want))
	}
}

func TestPostgreSQLStoppedThenStartedLosesNothing(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	sink := open(t, pg, "menu_events")
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	err := sink.Publish(t.Context(), brokertest.Events("a", 2, 3))
	if err == nil {
		t.Fatal("Publish with the server stopped: no error")
	}
	t.Log(err)
	if msg := err.Error(); !strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, brokertest.PostgreSQLPassword) {
		t.Errorf("Publish with the server stopped: %q, want an error naming the server, not the password", msg)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err = sink.Publish(t.Context(), brokertest.Events("a", 2, 3)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Publish once the server is back: %v", err)
		}
	}
	if got, want := ids(readRows(t, pg, "menu_events")), eventIDs(brokertest.Events("a", 1, 2, 3)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want %v", got, want)
	}
}

func TestPostgreSQLPublishHonoursContext(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	sink := open(t, pg, "menu_events")
	// A lock on the table holds the insert until the context ends.
	tx, err := connect(t, pg).Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "LOCK TABLE menu_events IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := sink.Publish(ctx, brokertest.Events("a", 1)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish held by a lock past its deadline: %v, want the context's error", err)
	}
	tx.Rollback(t.Context())
	if err := sink.Publish(t.Context(), brokertest.Events("a", 1)); err != nil {
		t.Fatalf("Publish after the lock: %v", err)
	}
}

func TestPostgreSQLWrongPasswordSaysWhyWithoutIt(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	spec := destination.Spec{Type: destination.TypePostgres, Table: "menu_events", ContentMode: destination.ModeStructured}
	sink, err := postgres.Open(t.Context(), spec, destination.Secrets{DSN: pg.DSNWithPassword("wrong-secret-pw")})
	if err == nil {
		sink.Close()
		t.Fatal("Open with a wrong password: no error")
	}
	t.Log(err)
	if msg := err.Error(); !strings.Contains(msg, "password authentication failed") || strings.Contains(msg, "wrong-secret-pw") {
		t.Errorf("Open with a wrong password: %q, want an error saying so, without the password", msg)
	}
}

func TestPostgreSQLTableOfAnotherShapeRefused(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	conn := connect(t, pg)
	for _, q := range []string{
		"CREATE TABLE menus (id integer PRIMARY KEY, establishment text)",
		"CREATE VIEW menu_view AS SELECT 1 AS id",
	} {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	sec := destination.Secrets{DSN: pg.DSN()}
	for table, want := range map[string][]string{
		"menus":     {"menus", "id is integer, not text", "event jsonb is missing"},
		"menu_view": {"menu_view", "is not a table"},
	} {
		_, err := postgres.Open(t.Context(), destination.Spec{Type: destination.TypePostgres, Table: table}, sec)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Open of table %s: %v, want an error saying %q", table, err, w)
			}
		}
	}
	spec := destination.Spec{Type: destination.TypePostgres, Table: "menus; DROP TABLE menus"}
	var fe *destination.FieldError
	if err := spec.Validate(sec); !errors.As(err, &fe) || fe.Field != "table" {
		t.Errorf("Validate of a bad table name: %v, want a refusal of table", err)
	}
}

// A table in a schema, and one whose name is a keyword; opening an existing outbox again keeps
// its rows.
func TestPostgreSQLSchemaTableAndKeyword(t *testing.T) {
	t.Parallel()
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	if _, err := connect(t, pg).Exec(t.Context(), "CREATE SCHEMA outbox"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"outbox.menu_events", "order"} {
		if err := open(t, pg, table).Publish(t.Context(), brokertest.Events("a", 1)); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if err := open(t, pg, table).Publish(t.Context(), brokertest.Events("a", 2)); err != nil {
			t.Fatalf("%s opened again: %v", table, err)
		}
		quoted := `"` + strings.ReplaceAll(table, ".", `"."`) + `"`
		if got := ids(readRows(t, pg, quoted)); len(got) != 2 {
			t.Errorf("%s: rows %v, want 2", table, got)
		}
	}
	var indexed bool
	err := connect(t, pg).QueryRow(t.Context(),
		"SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = 'outbox' AND tablename = 'menu_events' AND indexdef LIKE '%(establishment, content_revision)%')").Scan(&indexed)
	if err != nil || !indexed {
		t.Errorf("index on (establishment, content_revision): %v, %v", indexed, err)
	}
}

// spec.TLS requires TLS verified with its CA, over the connection string's sslmode; without it,
// the sslmode decides.
func TestPostgreSQLTLS(t *testing.T) {
	t.Parallel()
	ca, cert, key := natstest.WriteCertificate(t)
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{TLSCert: cert, TLSKey: key})
	caPEM, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, _ := natstest.WriteCertificate(t)
	otherPEM, err := os.ReadFile(otherCA)
	if err != nil {
		t.Fatal(err)
	}
	clear := strings.Replace(pg.DSN(), "sslmode=require", "sslmode=disable", 1)
	for _, tc := range []struct {
		name, dsn string
		tls       *destination.TLS
		want      string // in the error, or "" for none
	}{
		{"the CA", pg.DSN(), &destination.TLS{CA: string(caPEM)}, ""},
		{"the sslmode alone", pg.DSN(), nil, ""},
		{"another CA", pg.DSN(), &destination.TLS{CA: string(otherPEM)}, "certificate signed by unknown authority"},
		{"another name", pg.DSN(), &destination.TLS{CA: string(caPEM), ServerName: "db.example"}, "db.example"},
		{"TLS and sslmode=disable", clear, &destination.TLS{CA: string(caPEM)}, "tls: the dsn's sslmode turns TLS off"},
		{"no TLS", clear, nil, "no encryption"},
	} {
		spec := destination.Spec{Type: destination.TypePostgres, Table: "menu_events", TLS: tc.tls}
		sec := destination.Secrets{DSN: tc.dsn}
		if err := spec.Validate(sec); err != nil {
			t.Fatal(err)
		}
		sink, err := postgres.Open(t.Context(), spec, sec)
		if err == nil {
			err = sink.Publish(t.Context(), brokertest.Events("a", 1))
			sink.Close()
		}
		t.Logf("%s: %v", tc.name, err)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), brokertest.PostgreSQLPassword):
			t.Errorf("%s: the error shows the password: %v", tc.name, err)
		}
	}
}
