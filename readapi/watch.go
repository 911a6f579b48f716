package readapi

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/dockey"
)

// watching is a view and the watch that fills it.
type watching struct {
	v       *view
	w       jetstream.KeyWatcher
	updates <-chan delivery // the watch's deliveries, their bundles decoded
	stop    context.CancelFunc
}

// watch starts a watch of v's bucket from revision from (1 for every value), with a context of
// its own, ended when it is replaced: the client keeps a goroutine per watch until its context
// ends. It watches every key, bundle or not, so that the revision applied follows the bucket's
// last write, which its stream's state tells at no cost, where the last write of bundle keys
// alone takes the server a walk over every key.
func watch(ctx context.Context, v *view, from uint64) (*watching, error) {
	wctx, stop := context.WithCancel(ctx)
	var opts []jetstream.WatchOpt
	if from > 1 {
		opts = append(opts, jetstream.ResumeFromRevision(from))
	}
	w, err := v.kv.WatchAll(wctx, opts...)
	if err != nil {
		stop()
		return nil, err
	}
	return &watching{v: v, w: w, updates: decodeAhead(wctx, w.Updates(), runtime.GOMAXPROCS(0)), stop: stop}, nil
}

// end stops the watch; what it still delivers is read and dropped in the background.
func (w *watching) end() {
	_ = w.w.Stop()
	w.stop()
}

// delivery is one delivery of a watch: an entry, nil at the end of the initial values, and for a
// stored bundle under a valid key, its slug and its entry decoded, or why it cannot be.
type delivery struct {
	kve   jetstream.KeyValueEntry
	slug  string // "" for a key that names no valid slug
	ahead bool   // the key is that of the slug's day ahead
	e     *served
	err   error
}

// decodeDepth bounds the deliveries a watch decodes ahead of the mirror.
const decodeDepth = 64

// decodeAhead passes on what in delivers, in the same order, with every bundle decoded by one of
// workers goroutines: decoding is nearly all of a mirror's work while it loads a bucket, and
// would otherwise use one CPU. The returned channel closes after in closes. Once ctx is done,
// what in still delivers is read and dropped, so that the watcher's goroutine never blocks.
func decodeAhead(ctx context.Context, in <-chan jetstream.KeyValueEntry, workers int) <-chan delivery {
	type job struct {
		d    delivery // without its entry yet
		done chan<- delivery
	}
	out := make(chan delivery, decodeDepth)
	jobs := make(chan job, decodeDepth)
	order := make(chan chan delivery, decodeDepth) // each delivery's result, in delivery order
	for range max(workers, 1) {
		go func() {
			var dec decoder
			for j := range jobs {
				d := j.d
				if ctx.Err() == nil { // else dropped: not worth decoding
					d.e, d.err = dec.decode(d.slug, d.kve.Value())
				}
				j.done <- d
			}
		}()
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for kve := range in {
			done := make(chan delivery, 1)
			order <- done
			d := delivery{kve: kve}
			if kve != nil {
				if slug, ok := dockey.SlugOf(kve.Key()); ok && validSlug(slug) {
					d.slug = slug
				} else if slug, ok := dockey.AheadSlugOf(kve.Key()); ok && validSlug(slug) {
					d.slug, d.ahead = slug, true
				}
			}
			if d.slug == "" || kve.Operation() != jetstream.KeyValuePut {
				done <- d
				continue
			}
			jobs <- job{d: d, done: done}
		}
	}()
	go func() {
		defer close(out)
		for done := range order {
			select {
			case out <- <-done:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// gone says whether the bucket kv no longer exists.
func (m *Mirror) gone(ctx context.Context, kv jetstream.KeyValue) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := kv.Status(ctx)
	return bucketGone(err)
}

// bucketGone says err reports a bucket that no longer exists.
func bucketGone(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, nats.ErrStreamNotFound)
}
