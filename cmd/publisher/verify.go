package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
)

// verify rebuilds every establishment's documents from the event log and compares them with the
// live documents bucket, one establishment at a time per worker.
func verify(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("nats-url", "nats://127.0.0.1:4222", "NATS to read from (a running serve's embedded server listens there)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	workers := fs.Int("workers", projections.DefaultVerifyWorkers, "establishments checked at once")
	fs.Usage = usageWithEnv(fs, "publisher verify [flags]")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := nats.Connect(*url, nats.Name("publisher-verify"), syncQueue)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *url, err)
	}
	defer nc.Close()
	store, err := events.Open(ctx, nc, events.Config{})
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, dockey.Bucket)
	if err != nil {
		return fmt.Errorf("documents bucket: %w", err)
	}
	rep, err := projections.Verify(ctx, projections.VerifyConfig{
		Log: store, KV: kv, Workers: *workers,
		Progress: func(done, total int) { fmt.Fprintf(stderr, "verified %d of %d establishments\n", done, total) },
	})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	if len(rep.Differences) > 0 {
		return fmt.Errorf("verify: %d of %d establishments differ from the log", len(rep.Differences), rep.Checked)
	}
	return nil
}
