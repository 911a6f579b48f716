package admin

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/opencarte/publisher/domain"
)

// maxDetailBytes bounds one detail of an error answer. A detail names a path and a reason, a few
// dozen bytes; one that quotes a long value sent (an unknown key of a megabyte) is cut, so that an
// error answer stays within a few tens of kilobytes whatever the request.
const maxDetailBytes = 500

// fieldDetails returns the details of an answer refusing err: one "field: reason" for each of its
// field errors, at most domain.MaxFieldErrors, then, when err holds or counts more, one last
// detail saying how many were left out ("… and 1400 more", or "… and at least 9900 more" when
// the check stopped looking). It returns nil when err holds no field error.
func fieldDetails(err error) []string {
	fes := domain.FieldErrors(err)
	if len(fes) == 0 {
		return nil
	}
	shown := fes[:min(len(fes), domain.MaxFieldErrors)]
	details := make([]string, 0, len(shown)+1)
	for _, fe := range shown {
		details = append(details, clip(fe.Error()))
	}
	rest, atLeast := len(fes)-len(shown), false
	var more *domain.MoreFieldErrors
	if errors.As(err, &more) {
		rest, atLeast = rest+more.Count, more.AtLeast
	}
	switch {
	case rest > 0 && atLeast:
		details = append(details, fmt.Sprintf("… and at least %d more", rest))
	case rest > 0:
		details = append(details, fmt.Sprintf("… and %d more", rest))
	}
	return details
}

// clip cuts s to maxDetailBytes, on a character boundary, marking the cut with "…".
func clip(s string) string {
	if len(s) <= maxDetailBytes {
		return s
	}
	cut := maxDetailBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
