package domain

import (
	"errors"
	"testing"
)

func TestCommandsRefuseAKeyNotMadeByNewAPIKey(t *testing.T) {
	e := New("chez-marcel")
	e.Apply(EstablishmentCreated{Slug: "chez-marcel", TimeZone: DefaultTimeZone})
	for _, key := range []APIKey{"", "pk_short", APIKey("xx_" + string(NewAPIKey([32]byte{1}))[3:])} {
		if _, err := e.EnableAPI(key); !errors.Is(err, ErrWeakAPIKey) {
			t.Errorf("EnableAPI(%q): got %v, want ErrWeakAPIKey", key, err)
		}
	}
	good := NewAPIKey([32]byte{2})
	evs, err := e.EnableAPI(good)
	if err != nil || len(evs) != 1 {
		t.Fatalf("EnableAPI(good): got %v, %v", evs, err)
	}
	e.Apply(evs[0])
	if _, err := e.RegenerateAPIKey(""); !errors.Is(err, ErrWeakAPIKey) {
		t.Errorf("RegenerateAPIKey(\"\"): got %v, want ErrWeakAPIKey", err)
	}
}
