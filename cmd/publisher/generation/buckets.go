package generation

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections/runner"
)

// OpenBuckets opens the buckets of generation n of the documents for its projector: the bundles
// and the projector's state, created or updated to their configuration.
func OpenBuckets(ctx context.Context, js jetstream.JetStream, n, replicas int) (docs *runner.Bundles, state jetstream.KeyValue, err error) {
	if n <= 1 {
		if docs, err = runner.OpenBucket(ctx, js, replicas); err != nil {
			return nil, nil, err
		}
		state, err = runner.OpenStateBucket(ctx, js, replicas)
		return docs, state, err
	}
	return runner.OpenGeneration(ctx, js, n, replicas)
}
