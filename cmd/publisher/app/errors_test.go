package app

import (
	"errors"
	"fmt"
	"testing"

	"github.com/opencarte/publisher/domain"
)

// A refusal given its kind keeps its text and its chain, and its kind wins over anything else it
// holds.
func TestClassify(t *testing.T) {
	t.Parallel()
	gone := errors.New("elsewhere: gone")
	rules := []KindRule{{Target: gone, Kind: KindNotFound}}
	err := Classify(fmt.Errorf("get x: %w", gone), rules...)
	if got := KindOf(err); got != KindNotFound {
		t.Errorf("classified: got kind %d, want %d", got, KindNotFound)
	}
	if !errors.Is(err, gone) || err.Error() != "get x: elsewhere: gone" {
		t.Errorf("classified: got %q, want the error's text and chain", err)
	}
	other := errors.New("other")
	if got := Classify(other, rules...); got != other {
		t.Errorf("unmatched: got %v, want the error itself", got)
	}
	if got := Classify(nil, rules...); got != nil {
		t.Errorf("nil: got %v, want nil", got)
	}
	fields := &Refusal{Kind: KindMalformed, Err: &domain.FieldError{Field: "body", Reason: "invalid JSON"}}
	if got := KindOf(fmt.Errorf("decode: %w", fields)); got != KindMalformed {
		t.Errorf("refusal holding field errors: got kind %d, want %d", got, KindMalformed)
	}
}
