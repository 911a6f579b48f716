package readapi

import (
	"net/url"
	"strings"
)

// queryValue returns the first value of key in the raw query string and whether key is present,
// exactly as r.URL.Query().Get(key) would see it (pairs with a semicolon or a bad escape are
// skipped), but without building the url.Values map: it allocates only to unescape a key or a
// value that is escaped.
func queryValue(rawQuery, key string) (string, bool) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || k != key {
			continue
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			continue
		}
		return v, true
	}
	return "", false
}

// menuLocale returns the rendering a menu endpoint serves for rawQuery: every asset without a
// locale parameter, en for "en", and fr for "fr" or any other value, empty included.
func menuLocale(rawQuery string) locale {
	v, ok := queryValue(rawQuery, "locale")
	switch {
	case !ok:
		return localeAll
	case v == "en":
		return localeEN
	default:
		return localeFR
	}
}
