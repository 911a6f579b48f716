package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
)

// printHeader is the header of a stored bundle that holds the fingerprint of its summary, in
// hexadecimal: what projections.SummarizeStored(value).Fingerprint() gives.
const printHeader = "Summary-Print"

// errNoPrints says that the fingerprints of a bucket's bundles cannot all be read from their
// headers: the bundles are to be read.
var errNoPrints = errors.New("stored bundles without fingerprints")

// subject returns the subject of key in the bucket's stream.
func (b *Bundles) subject(key string) string { return "$KV." + b.Bucket() + "." + key }

// putPrinted stores value under key, as Put does, with print in its header.
func (b *Bundles) putPrinted(ctx context.Context, key string, value []byte, print uint64) (uint64, error) {
	if !b.printing {
		return b.Put(ctx, key, value)
	}
	msg := nats.NewMsg(b.subject(key))
	msg.Data = value
	msg.Header.Set(printHeader, strconv.FormatUint(print, 16))
	ack, err := b.js.PublishMsg(ctx, msg)
	if errors.Is(err, jetstream.ErrNoStreamResponse) {
		// No stream takes the bucket's own subjects: a mirror, written through its origin.
		return b.Put(ctx, key, value)
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// prints calls fn with the key of every bundle the bucket holds as it reads, in the bucket's
// order, the fingerprint in its header and the sequence of its write in the bucket's stream:
// known is false for a bundle stored without a fingerprint, and a deleted bundle comes with 0,
// known. It reads the headers alone, and stops at the first error
// of fn. It returns errNoPrints for a bucket whose headers it cannot read.
func (b *Bundles) prints(ctx context.Context, fn func(key string, print, seq uint64, known bool) error) error {
	if !b.printing {
		return errNoPrints
	}
	stream, err := b.stream(ctx)
	if err != nil {
		return fmt.Errorf("read the fingerprints of the stored bundles: %w", err)
	}
	if cfg := stream.CachedInfo().Config; cfg.Mirror != nil || len(cfg.Sources) > 0 {
		return errNoPrints
	}
	prefix := b.subject("")
	err = events.ReadStream(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + dockey.Watch},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	}, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) error {
		h := msg.Headers()
		key, seq := strings.TrimPrefix(msg.Subject(), prefix), meta.Sequence.Stream
		if op := h.Get("KV-Operation"); op != "" {
			return fn(key, 0, seq, true) // deleted or purged
		}
		print, err := strconv.ParseUint(h.Get(printHeader), 16, 64)
		if err != nil {
			return fn(key, 0, seq, false)
		}
		if print == 0 {
			print = unknownPrint // a summary without a fingerprint: the bundle is to be read
		}
		return fn(key, print, seq, true)
	})
	if errors.Is(err, errNoPrints) {
		return err
	}
	if err != nil {
		return fmt.Errorf("read the fingerprints of the stored bundles: %w", err)
	}
	return nil
}
