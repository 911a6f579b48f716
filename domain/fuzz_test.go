package domain_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

func FuzzParseSlug(f *testing.F) {
	for _, tc := range slugCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := domain.ParseSlug(in)
		if want := isSlug(in); (err == nil) != want {
			t.Fatalf("ParseSlug(%q): got error %v, want ok %v", in, err, want)
		}
		if err != nil {
			return
		}
		if got.String() != in {
			t.Fatalf("ParseSlug(%q): got %q, want the input", in, got)
		}
		if again, err := domain.ParseSlug(got.String()); err != nil || again != got {
			t.Fatalf("ParseSlug(%q) again: got %q, %v", got, again, err)
		}
	})
}

// isSlug is the slug rule written without a regular expression.
func isSlug(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func FuzzParseLocalDate(f *testing.F) {
	for _, tc := range dateCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := domain.ParseLocalDate(in)
		if err != nil {
			if !got.IsZero() {
				t.Fatalf("ParseLocalDate(%q): got %v with an error, want the zero date", in, got)
			}
			return
		}
		if got.String() != in {
			t.Fatalf("ParseLocalDate(%q).String(): got %q, want the input", in, got.String())
		}
		if tm := got.Time(); domain.DateOf(tm) != got {
			t.Fatalf("ParseLocalDate(%q): got %#v, which is not a calendar date", in, got)
		}
		b, err := got.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var again domain.LocalDate
		if err := again.UnmarshalText(b); err != nil || again != got {
			t.Fatalf("UnmarshalText(%q): got %v, %v, want %v", b, again, err, got)
		}
	})
}

func FuzzParseClockTime(f *testing.F) {
	for _, tc := range clockCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := domain.ParseClockTime(in)
		if err != nil {
			return
		}
		if m := got.Minutes(); m < 0 || m >= 24*60 {
			t.Fatalf("ParseClockTime(%q).Minutes(): got %d, want 0 to 1439", in, m)
		}
		if got.String() != in {
			t.Fatalf("ParseClockTime(%q).String(): got %q, want the input", in, got.String())
		}
		b, _ := got.MarshalText()
		var again domain.ClockTime
		if err := again.UnmarshalText(b); err != nil || again != got {
			t.Fatalf("UnmarshalText(%q): got %v, %v, want %v", b, again, err, got)
		}
	})
}

func FuzzParsePrice(f *testing.F) {
	for _, tc := range priceCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := domain.ParsePrice(in)
		if err != nil {
			return
		}
		if string(got) != in {
			t.Fatalf("ParsePrice(%q): got %q, want the input", in, got)
		}
		whole, cents, ok := strings.Cut(in, ".")
		if !ok || len(cents) != 2 || whole == "" || len(whole) > 1 && whole[0] == '0' || strings.Trim(whole+cents, "0123456789") != "" {
			t.Fatalf("ParsePrice(%q): accepted, want a non-negative amount with two decimals", in)
		}
	})
}

func FuzzParseLocale(f *testing.F) {
	for _, tc := range localeCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want := domain.LocaleFR
		if in == "en" {
			want = domain.LocaleEN
		}
		if got := domain.ParseLocale(in); got != want {
			t.Fatalf("ParseLocale(%q): got %q, want %q", in, got, want)
		}
	})
}

func FuzzParseSnapshot(f *testing.F) {
	base := readFile(f, basePath)
	f.Add(readFile(f, demoPath))
	f.Add(base)
	for _, tc := range badInputCases() {
		if tc.mut == nil {
			f.Add([]byte(tc.raw))
		} else {
			f.Add(mutate(f, base, tc.mut))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := domain.ParseInput(bytes.NewReader(body))
		if err != nil {
			if len(domain.FieldErrors(err)) == 0 {
				t.Fatalf("ParseSnapshot: got %v, want field errors", err)
			}
			return
		}
		// An accepted document encodes to one that is accepted as the same snapshot.
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := domain.ParseInput(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("ParseSnapshot of the encoded snapshot %s: %v", again, err)
		}
		if diff := cmp.Diff(s, s2); diff != "" {
			t.Fatalf("snapshot round trip mismatch (-first +second):\n%s", diff)
		}

		slug := domain.Slug(s.Slug)
		key := testKey(1)
		res, err := domain.New(slug).Import(s, key)
		if err != nil {
			t.Fatalf("Import of a parsed snapshot into a new establishment: %v", err)
		}
		var decoded []domain.Event
		for _, ev := range res.Events {
			b, err := domain.EncodeEvent(ev)
			if err != nil {
				t.Fatalf("EncodeEvent(%s): %v", ev.EventType(), err)
			}
			d, err := domain.DecodeEvent(ev.EventType(), domain.SchemaVersion, b)
			if err != nil {
				t.Fatalf("DecodeEvent(%s, %s): %v", ev.EventType(), b, err)
			}
			decoded = append(decoded, d)
		}
		est := domain.Rebuild(slug, decoded)
		res, err = est.Import(s, testKey(2))
		if err != nil {
			t.Fatalf("Import again: %v", err)
		}
		if len(res.Events) != 0 {
			t.Fatalf("Import again: got events %v, want none", eventTypes(res.Events))
		}
		est.SpecialHoursComing()
		est.DateDependent()
		est.LocalDate(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
		for _, mt := range est.MenuTypes {
			mt.Current(domain.LocalDate{})
			mt.Current(mustDate(t, "2026-11-22"))
		}
	})
}

func FuzzDecodeEvent(f *testing.F) {
	samples := sampleEvents(f)
	types := make([]string, len(samples))
	for i, s := range samples {
		types[i] = s.wire
		b, err := domain.EncodeEvent(s.event)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	for i := range types {
		f.Add(uint8(i), []byte(`{}`))
		f.Add(uint8(i), []byte(`null`))
	}
	f.Add(uint8(4), []byte(`{"special_hours":[{"start_date":"","end_date":""}]}`))
	f.Add(uint8(13), []byte(`{"menu_type":"x","version":{"sections":[{"items":[{"price":"abc","description":null}]}]}}`))

	f.Fuzz(func(t *testing.T, typ uint8, payload []byte) {
		wire := types[int(typ)%len(types)]
		ev, err := domain.DecodeEvent(wire, domain.SchemaVersion, payload)
		// The log's readers decode with events.Unmarshal: the same events, the same refusals.
		fast, fastErr := domain.DecodeEventWith(wire, domain.SchemaVersion, payload, events.Unmarshal)
		if (err == nil) != (fastErr == nil) {
			t.Fatalf("DecodeEvent(%s, %q): error %v; with events.Unmarshal: error %v", wire, payload, err, fastErr)
		}
		if !reflect.DeepEqual(ev, fast) {
			t.Fatalf("DecodeEvent(%s, %q): got %#v; with events.Unmarshal: %#v", wire, payload, ev, fast)
		}
		if err != nil {
			if ev != nil {
				t.Fatalf("DecodeEvent(%s, %s): got %#v with an error", wire, payload, ev)
			}
			return
		}
		if ev.EventType() != wire {
			t.Fatalf("DecodeEvent(%s): got an event of type %q", wire, ev.EventType())
		}
		b, err := domain.EncodeEvent(ev)
		if err != nil {
			t.Fatalf("EncodeEvent of %#v: %v", ev, err)
		}
		again, err := domain.DecodeEvent(wire, domain.SchemaVersion, b)
		if err != nil {
			t.Fatalf("DecodeEvent(%s, %s) of a re-encoded event: %v", wire, b, err)
		}
		if diff := cmp.Diff(ev, again, cmpOpts); diff != "" {
			t.Fatalf("re-encoded event mismatch (-decoded +again):\n%s", diff)
		}
		// Apply never fails, whatever the event says.
		est := domain.New("fuzz")
		est.Apply(domain.EstablishmentCreated{Slug: "fuzz"})
		est.Apply(domain.MenuTypeDefined{MenuType: domain.MenuTypeAttrs{Slug: "x", Rotation: domain.RotationDaily, WebDelivery: true}})
		est.Apply(domain.MenuVersionPublished{MenuType: "x", Version: domain.MenuVersion{ID: "v"}})
		est.Apply(ev)
		est.SpecialHoursComing()
		for _, mt := range est.MenuTypes {
			mt.Current(est.Today)
		}
	})
}
