package openapi_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

// TestClosedListsMatchTheWriteSide keeps the closed lists and patterns of the description in step
// with what the write side accepts: business types and days are compared whole, so that a value
// added there cannot be served undescribed; every described kind, source and language scope must
// be accepted there; slugs are compared on samples, and every price accepted there must be
// described. Only this test reads domain; the description and the read API never do.
func TestClosedListsMatchTheWriteSide(t *testing.T) {
	t.Parallel()
	doc := load(t)
	property := func(schema, name string) *openapi3.Schema {
		t.Helper()
		s := doc.Components.Schemas[schema].Value
		if name != "" {
			s = s.Properties[name].Value
		}
		return s
	}
	enum := func(s *openapi3.Schema) []string {
		var out []string
		for _, v := range s.Enum {
			if v != nil {
				out = append(out, v.(string))
			}
		}
		return out
	}

	if diff := cmp.Diff(domain.BusinessTypes, enum(property("Establishment", "business_type"))); diff != "" {
		t.Errorf("business_type (-domain +description):\n%s", diff)
	}
	var days []string
	for d := domain.Lundi; d <= domain.Dimanche; d++ {
		days = append(days, d.String())
	}
	if diff := cmp.Diff(days, enum(property("Weekday", ""))); diff != "" {
		t.Errorf("Weekday (-domain +description):\n%s", diff)
	}
	// The write side accepts e-mail addresses with non-ASCII characters: the description says so.
	if err := domain.ValidateEmail("rené@café-marcel.fr"); err != nil {
		t.Errorf("the write side refuses a non-ASCII e-mail address: %v", err)
	} else if format := property("Contact", "email").Format; format != "idn-email" {
		t.Errorf("contact email format %q, want idn-email: the write side accepts non-ASCII addresses", format)
	}
	// close_day is a Weekday or null, as anyOf, so that generators make one day type of both.
	if closeDay := property("BusinessHours", "close_day"); len(closeDay.AnyOf) != 2 ||
		closeDay.AnyOf[0].Ref != "#/components/schemas/Weekday" || !closeDay.AnyOf[1].Value.Type.Is("null") {
		t.Errorf("close_day: want anyOf a Weekday and null")
	}
	for _, tc := range []struct {
		schema, name string
		parse        func(string) error
	}{
		{"MenuType", "kind", func(s string) error { _, err := domain.ParseMenuKind(s); return err }},
		{"MenuType", "source", func(s string) error { _, err := domain.ParseMenuSource(s); return err }},
		{"MenuAsset", "language_scope", func(s string) error { _, err := domain.ParseLanguageScope(s); return err }},
	} {
		for _, v := range enum(property(tc.schema, tc.name)) {
			if err := tc.parse(v); err != nil {
				t.Errorf("%s.%s: %q is described but refused on the write side: %v", tc.schema, tc.name, v, err)
			}
		}
	}

	slug := property("Slug", "")
	for _, s := range []string{
		"a", "0", "chez-marcel", "a-b-c", "a--b", strings.Repeat("a", 64), strings.Repeat("a", 65),
		"", "-a", "a-", "A", "a_b", "a b", "é", "a/b", "a.b",
	} {
		_, domainErr := domain.ParseSlug(s)
		docErr := slug.VisitJSON(s, openapi3.EnableJSONSchema2020())
		if (domainErr == nil) != (docErr == nil) {
			t.Errorf("slug %q: write side accepts it %v, description %v", s, domainErr == nil, docErr == nil)
		}
	}

	price := property("MenuItem", "price")
	for _, s := range []string{"0.00", "9.00", "12.50", "999999999.99", "", "12.5", "12", "012.50", "-1.00", "1,00", " 1.00"} {
		if _, err := domain.ParsePrice(s); err != nil {
			continue
		}
		if err := price.VisitJSON(s, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("price %q: accepted on the write side, refused by the description: %v", s, err)
		}
	}
	for _, s := range []string{"12.5", "12", "012.50", "-1.00", "1,00", "1.000"} {
		if err := price.VisitJSON(s, openapi3.EnableJSONSchema2020()); err == nil {
			t.Errorf("price %q: accepted by the description", s)
		}
	}
}
