package webhook

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
)

// A request of a step whose reply never comes (taken by a server that stopped before answering)
// fails on its own timeout, while the step goes on and can be tried again: the step's bound is
// no deadline, which would replace the request's timeout.
func TestStepRequestsKeepTheirOwnTimeout(t *testing.T) {
	opts := natstest.Options(t.TempDir())
	opts.JetStream = false // the only responder is the one below
	srv := natstest.StartWith(t, opts)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// Takes the request and never answers.
	if _, err := nc.Subscribe("$JS.API.STREAM.INFO.LOST", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := stepContext(t.Context(), 10*time.Second)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("a step's context has a deadline")
	}
	_, err = js.Stream(ctx, "LOST")
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("request: %v, step: %v; want the request's own timeout, the step going on", err, ctx.Err())
	}
}

// A step is cancelled at its bound, saying so, or when it ends.
func TestStepContextBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := stepContext(t.Context(), time.Minute)
		defer cancel()
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if ctx.Err() != nil {
			t.Fatalf("cancelled before its bound: %v", context.Cause(ctx))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			t.Fatalf("at its bound: %v, want %v", context.Cause(ctx), context.DeadlineExceeded)
		}

		ended, end := stepContext(t.Context(), time.Minute)
		end()
		if !errors.Is(context.Cause(ended), context.Canceled) {
			t.Fatalf("ended: %v, want %v", context.Cause(ended), context.Canceled)
		}
	})
}
