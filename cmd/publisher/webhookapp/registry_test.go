package webhookapp

import (
	"errors"
	"fmt"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/webhook"
)

// TestDispatcherRefusalsHaveTheirKinds holds the kinds the admin API answers the dispatcher's
// refusals with: a 422 for what the operator must change, 503 with its reason for a resolver
// that cannot answer now, 404 and 409. An error of none of these stays a fault.
func TestDispatcherRefusalsHaveTheirKinds(t *testing.T) {
	cases := []struct {
		err  error
		want app.Kind
	}{
		{webhook.ErrInvalidEndpoint, app.KindInvalid},
		{webhook.ErrRefusedAddress, app.KindInvalid},
		{webhook.ErrInvalidSecret, app.KindInvalid},
		{webhook.ErrResolverUnavailable, app.KindDeclined},
		{webhook.ErrEndpointNotFound, app.KindNotFound},
		{webhook.ErrDeliveryNotFound, app.KindNotFound},
		{webhook.ErrDeliveryInProgress, app.KindConflict},
		{webhook.ErrEndpointDisabled, app.KindConflict},
		{errors.New("nats: timeout"), app.KindInternal},
	}
	for _, c := range cases {
		wrapped := fmt.Errorf("register endpoint: %w", c.err)
		got := app.Classify(wrapped, kinds...)
		if k := app.KindOf(got); k != c.want {
			t.Errorf("kind of %q = %v, want %v", wrapped, k, c.want)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("classified %q no longer matches its error", wrapped)
		}
		if got.Error() != wrapped.Error() {
			t.Errorf("classified text = %q, want %q", got.Error(), wrapped.Error())
		}
	}
	if app.Classify(nil, kinds...) != nil {
		t.Error("Classify(nil) is not nil")
	}
}
