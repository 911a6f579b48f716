package domain_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

// more returns the count of err's field errors left out, nil when none were.
func more(err error) *domain.MoreFieldErrors {
	var m *domain.MoreFieldErrors
	if errors.As(err, &m) {
		return m
	}
	return nil
}

// A list keeps the first MaxFieldErrors errors, counts the others up to 10,000 found in all, and
// is full there.
func TestFieldErrorListBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		add       int
		wantNamed int
		wantMore  *domain.MoreFieldErrors
		wantFull  bool
	}{
		{add: 0},
		{add: 1, wantNamed: 1},
		{add: 100, wantNamed: 100},
		{add: 101, wantNamed: 100, wantMore: &domain.MoreFieldErrors{Count: 1}},
		{add: 250, wantNamed: 100, wantMore: &domain.MoreFieldErrors{Count: 150}},
		{add: 9_999, wantNamed: 100, wantMore: &domain.MoreFieldErrors{Count: 9_899}},
		{add: 10_000, wantNamed: 100, wantMore: &domain.MoreFieldErrors{Count: 9_900, AtLeast: true}, wantFull: true},
		{add: 25_000, wantNamed: 100, wantMore: &domain.MoreFieldErrors{Count: 24_900, AtLeast: true}, wantFull: true},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.add), func(t *testing.T) {
			t.Parallel()
			var fe domain.FieldErrorList
			fe.Add(nil) // nothing
			for i := range tc.add {
				fe.Add(&domain.FieldError{Field: fmt.Sprintf("f[%d]", i), Reason: "bad"})
			}
			err := fe.Err()
			if (err == nil) != (tc.add == 0) {
				t.Fatalf("Err() = %v after %d errors", err, tc.add)
			}
			named := domain.FieldErrors(err)
			if len(named) != tc.wantNamed {
				t.Errorf("got %d field errors named, want %d", len(named), tc.wantNamed)
			}
			if len(named) > 0 && named[len(named)-1].Field != fmt.Sprintf("f[%d]", tc.wantNamed-1) {
				t.Errorf("got %q named last, want the first errors added", named[len(named)-1].Field)
			}
			if diff := cmp.Diff(tc.wantMore, more(err)); diff != "" {
				t.Errorf("count of the rest mismatch (-want +got):\n%s", diff)
			}
			if got := fe.Full(); got != tc.wantFull {
				t.Errorf("Full() = %v, want %v", got, tc.wantFull)
			}
			if got, want := fe.Naming(), tc.add < domain.MaxFieldErrors; got != want {
				t.Errorf("Naming() = %v, want %v", got, want)
			}
		})
	}
}

func TestMoreFieldErrorsText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *domain.MoreFieldErrors
		want string
	}{
		{&domain.MoreFieldErrors{Count: 50}, "and 50 more field errors"},
		{&domain.MoreFieldErrors{Count: 9900, AtLeast: true}, "and at least 9900 more field errors"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// hoursOfNumbers is the base document with business_hours an array of n numbers, where objects
// belong: each element is a wrong type.
func hoursOfNumbers(tb testing.TB, n int) []byte {
	tb.Helper()
	doc := mutate(tb, readFile(tb, basePath), set("business_hours", []any{}))
	return bytes.Replace(doc, []byte(`"business_hours":[]`), []byte(`"business_hours":[`+string(bytes.Repeat([]byte("1,"), n-1))+`1]`), 1)
}

// unknownMembers is the base document with n unknown members in its location.
func unknownMembers(tb testing.TB, n int) []byte {
	tb.Helper()
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `"x%d":1,`, i)
	}
	return bytes.Replace(readFile(tb, basePath), []byte(`"location": {`), append([]byte(`"location": {`), b.Bytes()...), 1)
}

// The strict decoder names the first MaxFieldErrors problems and counts the others, exactly up
// to 10,000 problems found, then stops.
func TestDecodeStrictBoundsItsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      []byte
		wantNamed int
		wantFirst string
		wantMore  *domain.MoreFieldErrors
	}{
		{"5 wrong elements", hoursOfNumbers(t, 5), 5, "business_hours[0]", nil},
		{"100 wrong elements", hoursOfNumbers(t, 100), 100, "business_hours[0]", nil},
		{"101 wrong elements", hoursOfNumbers(t, 101), 100, "business_hours[0]", &domain.MoreFieldErrors{Count: 1}},
		{"150 wrong elements", hoursOfNumbers(t, 150), 100, "business_hours[0]", &domain.MoreFieldErrors{Count: 50}},
		{"9,999 wrong elements", hoursOfNumbers(t, 9_999), 100, "business_hours[0]", &domain.MoreFieldErrors{Count: 9_899}},
		{"1.9 million wrong elements", hoursOfNumbers(t, 1_900_000), 100, "business_hours[0]", &domain.MoreFieldErrors{Count: 9_900, AtLeast: true}},
		{"300 unknown members", unknownMembers(t, 300), 100, "location.x0", &domain.MoreFieldErrors{Count: 200}},
		{"50,000 unknown members", unknownMembers(t, 50_000), 100, "location.x0", &domain.MoreFieldErrors{Count: 9_900, AtLeast: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s domain.EstablishmentInput
			err := domain.DecodeStrict(bytes.NewReader(tc.body), &s)
			named := domain.FieldErrors(err)
			if len(named) != tc.wantNamed {
				t.Fatalf("got %d field errors named, want %d: %v", len(named), tc.wantNamed, err)
			}
			if named[0].Field != tc.wantFirst {
				t.Errorf("got %q named first, want %q", named[0].Field, tc.wantFirst)
			}
			if last, want := named[len(named)-1].Field, fmt.Sprintf("business_hours[%d]", tc.wantNamed-1); tc.wantFirst == "business_hours[0]" && last != want {
				t.Errorf("got %q named last, want %q", last, want)
			}
			if diff := cmp.Diff(tc.wantMore, more(err)); diff != "" {
				t.Errorf("count of the rest mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A long array of elements of the wrong type is refused for the cost of its first elements: no
// decoder fills the whole array before the first error is found.
func TestDecodeStrictRefusesLongArraysCheaply(t *testing.T) {
	// Many arrays each a little shorter than one might bound an array by fill as much as one.
	var split bytes.Buffer
	split.WriteString(`{"slug":"a","menu_types":[`)
	for i := range 200 {
		if i > 0 {
			split.WriteByte(',')
		}
		split.WriteString(`{"versions":[0` + strings.Repeat(`,0`, 9_998) + `]}`)
	}
	split.WriteString(`]}`)
	for name, body := range map[string][]byte{"one long array": hoursOfNumbers(t, 1_900_000), "many arrays": split.Bytes()} {
		t.Run(name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var s domain.EstablishmentInput
			err := domain.DecodeStrictWith(body, &s, nil)
			runtime.ReadMemStats(&after)
			if len(domain.FieldErrors(err)) == 0 {
				t.Fatalf("DecodeStrictWith: got %v, want field errors", err)
			}
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(len(body)); got > limit {
				t.Errorf("got %d bytes allocated to refuse a body of %d bytes, want at most its size", got, limit)
			}
		})
	}
}

// badPriceItems is an import document with n items whose only fault is their price, 500 to a
// section and 100 sections to a version, as many as a version holds.
func badPriceItems(n int) domain.EstablishmentInput {
	yes, price, fr := true, "1", "x"
	mt := domain.MenuTypeInput{Slug: "carte", Name: "La carte", Kind: "card", Source: "generated", WebDelivery: &yes, Rotation: "none"}
	for i := range n {
		if i%50_000 == 0 {
			mt.Versions = append(mt.Versions, domain.VersionInput{ID: fmt.Sprintf("v%d", len(mt.Versions)+1)})
		}
		v := &mt.Versions[len(mt.Versions)-1]
		if i%500 == 0 {
			v.Sections = append(v.Sections, domain.SectionInput{Name: &domain.TextInput{FR: &fr}})
		}
		id := int64(i + 1)
		s := &v.Sections[len(v.Sections)-1]
		s.Items = append(s.Items, domain.ItemInput{ID: &id, Name: &domain.TextInput{FR: &fr}, Price: &price, ALaCarte: &yes})
	}
	return domain.EstablishmentInput{
		Slug: "le-petit-zinc", Name: "Le Petit Zinc", BusinessType: "restaurant",
		MenuTypes: []domain.MenuTypeInput{mt},
	}
}

// Validation names the first MaxFieldErrors bad fields and counts the others, exactly up to
// 10,000, then stops looking.
func TestImportBoundsItsErrors(t *testing.T) {
	t.Parallel()
	const item0 = "menu_types[0].versions[0].sections[0].items[0].price"
	tests := []struct {
		items    int
		wantMore *domain.MoreFieldErrors
	}{
		{items: 1},
		{items: 100},
		{items: 101, wantMore: &domain.MoreFieldErrors{Count: 1}},
		{items: 1_500, wantMore: &domain.MoreFieldErrors{Count: 1_400}},
		{items: 100_000, wantMore: &domain.MoreFieldErrors{Count: 9_900, AtLeast: true}},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.items), func(t *testing.T) {
			t.Parallel()
			_, err := domain.New(baseSlug).Import(badPriceItems(tc.items), testKey(1))
			named := domain.FieldErrors(err)
			if want := min(tc.items, domain.MaxFieldErrors); len(named) != want {
				t.Fatalf("got %d field errors named, want %d: %v", len(named), want, err)
			}
			if named[0].Field != item0 {
				t.Errorf("got %q named first, want %q", named[0].Field, item0)
			}
			if diff := cmp.Diff(tc.wantMore, more(err)); diff != "" {
				t.Errorf("count of the rest mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Validation stops looking once its list is full: 200,000 bad items cost about what 20,000 do.
func TestImportStopsLookingWhenFull(t *testing.T) {
	allocs := func(n int) float64 {
		in := badPriceItems(n)
		return testing.AllocsPerRun(3, func() { _, _ = domain.New(baseSlug).Import(in, testKey(1)) })
	}
	full, beyond := allocs(20_000), allocs(200_000)
	if beyond > full*1.05 {
		t.Errorf("got %.0f allocations for 200,000 bad items, want about as many as for 20,000 (%.0f)", beyond, full)
	}
}
