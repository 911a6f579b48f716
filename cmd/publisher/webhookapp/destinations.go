package webhookapp

import (
	"context"
	"errors"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/webhook/destination"
)

// Destinations is the store of broker destinations as the admin API uses it: registrations read
// from their JSON bodies and checked by their broker's Checker, errors with their kinds.
type Destinations struct {
	Store  *destination.Store
	Checks map[string]destination.Checker // by destination type; a type without one is not checked further
}

var destinationKinds = []app.KindRule{
	{Target: destination.ErrNotFound, Kind: app.KindNotFound},
	{Target: destination.ErrTooMany, Kind: app.KindConflict},
}

// classify gives err its kind: a refused field is invalid, naming the field.
func classifyDestination(err error) error {
	if fe, ok := errors.AsType[*destination.FieldError](err); ok {
		return &app.Refusal{Kind: app.KindInvalid, Err: &domain.FieldError{Field: fe.Field, Reason: fe.Reason}}
	}
	return app.Classify(err, destinationKinds...)
}

func (d Destinations) Create(ctx context.Context, body []byte) (any, error) {
	spec, sec, err := destination.ParseRegistration(body)
	if err != nil {
		return nil, classifyDestination(err)
	}
	if check := d.Checks[spec.Type]; check != nil {
		if err := check(spec, sec); err != nil {
			return nil, classifyDestination(err)
		}
	}
	st, err := d.Store.Create(ctx, spec, sec)
	if err != nil {
		return nil, classifyDestination(err)
	}
	return st, nil
}

func (d Destinations) List(ctx context.Context) (any, error) {
	sts, err := d.Store.List(ctx)
	if err != nil {
		return nil, classifyDestination(err)
	}
	return map[string]any{"destinations": sts}, nil
}

func (d Destinations) Get(ctx context.Context, id string) (any, error) {
	st, err := d.Store.Get(ctx, id)
	if err != nil {
		return nil, classifyDestination(err)
	}
	return st, nil
}

func (d Destinations) Remove(ctx context.Context, id string) error {
	return classifyDestination(d.Store.Delete(ctx, id))
}

func (d Destinations) Pause(ctx context.Context, id string, paused bool) (any, error) {
	st, err := d.Store.SetPaused(ctx, id, paused)
	if err != nil {
		return nil, classifyDestination(err)
	}
	return st, nil
}
