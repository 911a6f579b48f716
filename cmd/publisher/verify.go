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

// verify replays the event log in memory and compares it with the live documents bucket.
func verify(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("nats-url", "nats://127.0.0.1:4222", "NATS to read from (a running serve's embedded server listens there)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	fs.Usage = usageWithEnv(fs, "publisher verify [flags]")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := nats.Connect(*url, nats.Name("publisher-verify"))
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
	p, err := projections.New(projections.Config{Store: store, KV: kv})
	if err != nil {
		return err
	}
	rep, err := p.Verify(ctx)
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
