package readapi

import (
	"net/url"
	"strings"
)

// queryValue returns the first value of key in the raw query string and whether key is present,
// without building the url.Values map: it allocates only to unescape a key or a value that is
// escaped. It reads a query as url.ParseQuery does, with two differences that keep a client's
// parameter from vanishing: a semicolon is an ordinary character of a value (url.ParseQuery
// drops the whole pair), and a value with a malformed escape is returned as it was sent (where
// url.ParseQuery drops it). So `locale=en;x=1` and `locale=%zz` are present values other than
// "en", served as fr, never read as no locale at all.
func queryValue(rawQuery, key string) (string, bool) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || k != key {
			continue
		}
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
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
