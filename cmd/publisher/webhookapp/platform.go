package webhookapp

import (
	"context"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/webhook"
)

// Platform is the dispatcher's platform endpoints as the application layer uses them: the
// establishments' endpoints' operations, in the platform's scope.
type Platform struct {
	Deliveries
}

// NewPlatform returns d's platform endpoints as the application layer uses them.
func NewPlatform(d *webhook.Dispatcher) Platform { return Platform{Deliveries{d}} }

func (p Platform) Create(ctx context.Context, id, url, secret string, establishments []string) (string, error) {
	existing, err := p.d.Registry().CreatePlatform(ctx, id, url, secret, establishments)
	return existing, app.Classify(err, kinds...)
}

func (p Platform) Remove(ctx context.Context, id string) error {
	return app.Classify(p.d.Registry().Remove(ctx, webhook.PlatformScope, id), kinds...)
}

func (p Platform) RotateSecret(ctx context.Context, id, secret string, grace time.Duration) error {
	return app.Classify(p.d.Registry().RotateSecret(ctx, webhook.PlatformScope, id, secret, grace), kinds...)
}

func (p Platform) List(ctx context.Context) ([]app.EndpointState, error) {
	return p.Deliveries.Endpoints(ctx, webhook.PlatformScope)
}

func (p Platform) Get(ctx context.Context, id string) (app.EndpointState, error) {
	return p.Deliveries.Endpoint(ctx, webhook.PlatformScope, id)
}

func (p Platform) Turn(ctx context.Context, id string) error {
	return p.Deliveries.Enable(ctx, webhook.PlatformScope, id)
}

func (p Platform) Test(ctx context.Context, id string) (app.Attempt, error) {
	return p.Deliveries.Ping(ctx, webhook.PlatformScope, id)
}
