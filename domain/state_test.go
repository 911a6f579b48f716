package domain_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

// A state read back from its encoding is the state that was encoded, whatever it holds.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	est, _ := history(t,
		func(e *domain.Establishment) ([]domain.Event, error) {
			return e.StartDay(domain.LocalDate{Year: 2026, Month: 11, Day: 24})
		},
		func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMenuRedirect(false) },
	)
	data, err := domain.EncodeState(est)
	if err != nil {
		t.Fatal(err)
	}
	got, err := domain.DecodeState(demoSlug, data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(est, got, cmp.AllowUnexported(domain.ClockTime{})); diff != "" {
		t.Errorf("state after a round trip (-want +got):\n%s", diff)
	}
	again, err := domain.EncodeState(got)
	if err != nil || !bytes.Equal(again, data) {
		t.Errorf("state encoded again differs (err %v)", err)
	}
	if _, err := domain.DecodeState("other", data); err == nil {
		t.Errorf("DecodeState of another establishment's state: got no error")
	}
	if _, err := domain.DecodeState(demoSlug, []byte(strings.Replace(string(data), `"Created"`, `"Made"`, 1))); err == nil {
		t.Errorf("DecodeState with an unknown field: got no error")
	}
}

func TestStateFormatIsStable(t *testing.T) {
	t.Parallel()
	f := domain.StateFormat()
	if f != domain.StateFormat() || !strings.HasPrefix(f, "establishment/") || len(f) < 20 {
		t.Errorf("StateFormat: got %q, want a stable establishment/<revision>/<fingerprint>", f)
	}
}
