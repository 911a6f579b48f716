package projections

import (
	"maps"
	"strings"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
)

// accessOf returns the access fields of e's bundle: what the read API needs to decide 401, 404
// and 302 before it looks at any document.
func accessOf(e *domain.Establishment, menus []activeMenu) dockey.Bundle {
	b := dockey.Bundle{
		Slug:                string(e.Slug),
		Status:              string(e.Status),
		APIEnabled:          e.PublicAPIEnabled,
		KeyHash:             e.APIKeyHash,
		MenuRedirectEnabled: e.MenuRedirectEnabled,
	}
	if b.Status == "" {
		b.Status = dockey.StatusDraft
	}
	if e.MasterMenuURL != nil {
		b.MasterMenuURL = locationHeader(*e.MasterMenuURL)
	}
	if len(menus) > 0 {
		b.Redirects = make(map[string]dockey.Redirect, len(menus))
		for _, m := range menus {
			b.Redirects[string(m.Slug)] = redirectOf(m.version)
		}
	}
	return b
}

// redirectOf returns the targets of /r/menus for version v: per locale, the first page of the
// first file whose scope is exactly that locale, else of the first file covering both languages,
// else nothing (the redirect answers 404).
func redirectOf(v domain.MenuVersion) dockey.Redirect {
	return dockey.Redirect{
		FR: locationHeader(firstPage(v.Assets, domain.ScopeFR)),
		EN: locationHeader(firstPage(v.Assets, domain.ScopeEN)),
	}
}

func firstPage(assets []domain.Asset, exact domain.LanguageScope) string {
	for _, scope := range []domain.LanguageScope{exact, domain.ScopeFREN} {
		for _, a := range assets {
			if a.LanguageScope == scope && len(a.URLs) > 0 {
				return a.URLs[0]
			}
		}
	}
	return ""
}

// locationHeader returns u as it can be sent in a Location header: every byte outside printable
// ASCII is percent-encoded. A URL that is already ASCII is returned unchanged.
func locationHeader(u string) string {
	const hexDigits = "0123456789ABCDEF"
	clean := true
	for i := 0; i < len(u); i++ {
		if u[i] <= ' ' || u[i] >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return u
	}
	var b strings.Builder
	b.Grow(len(u) + 16)
	for i := 0; i < len(u); i++ {
		c := u[i]
		if c <= ' ' || c >= 0x7f {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// SameAccess reports whether a and b have the same access fields, documents and revision aside.
// Every field of dockey.Bundle that is not a document is compared here.
func SameAccess(a, b *dockey.Bundle) bool {
	return a.Slug == b.Slug &&
		a.Status == b.Status &&
		a.APIEnabled == b.APIEnabled &&
		a.KeyHash == b.KeyHash &&
		a.MenuRedirectEnabled == b.MenuRedirectEnabled &&
		a.MasterMenuURL == b.MasterMenuURL &&
		maps.Equal(a.Redirects, b.Redirects)
}

// Served reports whether the read API serves the establishment of b: it is active and its API
// enabled. Otherwise every request about it answers 404.
func Served(b *dockey.Bundle) bool {
	return b.Status == dockey.StatusActive && b.APIEnabled
}
