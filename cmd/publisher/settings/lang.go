package settings

import (
	"net/http"

	"golang.org/x/text/language"
)

// langCookie keeps the language the visitor chose with the page's switch.
const langCookie = "settings-lang"

// languages are the page's languages, French first: the default.
var languages = []language.Tag{language.French, language.English}

var matcher = language.NewMatcher(languages)

// languageOf returns the language of the answer to r: the one the switch chose, else the best
// match of Accept-Language, else French.
func languageOf(r *http.Request) string {
	if c, err := r.Cookie(langCookie); err == nil {
		if _, ok := tables[c.Value]; ok {
			return c.Value
		}
	}
	tags, _, err := language.ParseAcceptLanguage(r.Header.Get("Accept-Language"))
	if err != nil || len(tags) == 0 {
		return "fr"
	}
	_, i, confidence := matcher.Match(tags...)
	if confidence == language.No {
		return "fr"
	}
	base, _ := languages[i].Base()
	return base.String()
}
