//go:build brokers

package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// A PostgreSQL destination, on a private server of Debian's package, its tables read with pgx:
// the end-to-end checks of testDestinationsThroughServe.
func TestPostgreSQLDestinationThroughServe(t *testing.T) {
	pg := brokertest.StartPostgreSQL(t, brokertest.PostgreSQLOptions{})
	testDestinationsThroughServe(t, brokerUnderTest{
		fields: func(name string) map[string]any {
			return map[string]any{"type": "postgres", "dsn": pg.DSN(), "table": "menus_" + name}
		},
		secret: brokertest.PostgreSQLPassword,
		received: func(t *testing.T, name string) []brokerEvent {
			return tableEvents(t, pg.DSN(), "menus_"+name)
		},
		stop: func(t *testing.T) {
			if err := pg.Stop(); err != nil {
				t.Fatal(err)
			}
		},
		start: func(t *testing.T) {
			if err := pg.Start(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// tableEvents reads the outbox table in position order, each row's event a CloudEvent in the
// structured mode whose columns repeat its id, subject and revision; none while the
// destination has not created the table yet.
func tableEvents(t *testing.T, dsn, table string) []brokerEvent {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), "SELECT id, establishment, content_revision, event FROM "+table+" ORDER BY position")
	if undefinedTable(err) {
		return nil // the destination has not opened it yet
	} else if err != nil {
		t.Fatal(err)
	}
	var out []brokerEvent
	for rows.Next() {
		var id, slug string
		var rev int64
		var event []byte
		if err := rows.Scan(&id, &slug, &rev, &event); err != nil {
			t.Fatal(err)
		}
		var e brokerEvent
		var ce struct {
			SpecVersion, ID, Source, Type, Subject, Time, DataContentType string
		}
		if err := json.Unmarshal(event, &ce); err != nil {
			t.Fatalf("row %s of %s: %v", id, table, err)
		}
		if err := json.Unmarshal(event, &struct{ Data any }{&e.Data}); err != nil {
			t.Fatalf("row %s of %s: %v", id, table, err)
		}
		e.ID, e.Source, e.Type, e.Subject, e.SpecVersion, e.Time = ce.ID, ce.Source, ce.Type, ce.Subject, ce.SpecVersion, ce.Time
		if id != e.ID || slug != e.Subject || rev != e.Data.Revision || ce.DataContentType != "application/json" {
			t.Errorf("row %s (%s, revision %d) holds the event %s", id, slug, rev, event)
		}
		out = append(out, e)
	}
	if err := rows.Err(); undefinedTable(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return out
}

// undefinedTable tells whether err is PostgreSQL's undefined_table.
func undefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
