// Package postgres publishes change events into a PostgreSQL table that a platform's services
// read: a destination's Sink (see package destination), on watermill-sql's publisher with a
// schema adapter of its own for the table, through pgx's database/sql driver.
//
// The table is a transactional outbox, created with its index when missing:
//
//	id               text primary key   -- the event's id: a row published again is dropped
//	position         bigserial          -- the order to read the rows in
//	establishment    text               -- the slug, the event's subject
//	content_revision bigint
//	type             text               -- the event's type
//	time             timestamptz        -- when the change was stored
//	event            jsonb              -- the whole CloudEvent (structured content mode)
//	created_at       timestamptz default now()
//
// with an index on (establishment, content_revision). Each Publish is one transaction: every
// event of the page is in the table once it returns, or none is. An event already there (the
// same id, published again after a failure) is left as it is (ON CONFLICT (id) DO NOTHING), so
// each change is one row. One destination writing the table, its transactions one after
// another, gives positions in commit order: a reader polling "position > last read" misses
// nothing.
//
// The connection string is a secret: the errors say what failed and where (host, port,
// database), never the string or its password.
//
// It imports the standard library, watermill, watermill-sql, pgx and webhook/destination.
package postgres
