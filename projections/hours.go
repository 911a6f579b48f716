package projections

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/opencarte/publisher/domain"
)

// hoursBody holds the fields of the Opening hours resource that follow content_revision.
type hoursBody struct {
	Summary            *string       `json:"business_hours_summary"`
	BusinessHours      []rangeBody   `json:"business_hours"`
	SpecialHoursComing []specialBody `json:"special_hours_coming"`
}

type rangeBody struct {
	OpenDay   string  `json:"open_day"`
	OpenTime  string  `json:"open_time"`
	CloseDay  *string `json:"close_day"`
	CloseTime *string `json:"close_time"`
}

type specialBody struct {
	StartDate string  `json:"start_date"`
	EndDate   *string `json:"end_date"`
	OpenTime  *string `json:"open_time"`
	CloseTime *string `json:"close_time"`
	Closed    bool    `json:"closed"`
}

func hoursDoc(e *domain.Establishment) hoursBody {
	ranges := sortedRanges(e.Hours.Ranges)
	body := hoursBody{
		Summary:            e.Hours.Summary,
		BusinessHours:      make([]rangeBody, 0, len(ranges)),
		SpecialHoursComing: []specialBody{},
	}
	if body.Summary == nil || strings.TrimSpace(*body.Summary) == "" {
		body.Summary = Summary(ranges)
	}
	for _, r := range ranges {
		rb := rangeBody{OpenDay: r.OpenDay.String(), OpenTime: r.OpenTime.String()}
		if r.CloseDay != nil {
			rb.CloseDay = ptr(r.CloseDay.String())
		}
		if r.CloseTime != nil {
			rb.CloseTime = ptr(r.CloseTime.String())
		}
		body.BusinessHours = append(body.BusinessHours, rb)
	}
	for _, s := range e.SpecialHoursComing() {
		sb := specialBody{StartDate: s.StartDate.String(), Closed: s.Closed}
		// A one-day exception has no end_date, also as recorded before imports left it out.
		if s.EndDate != nil && *s.EndDate != s.StartDate {
			sb.EndDate = ptr(s.EndDate.String())
		}
		if s.OpenTime != nil {
			sb.OpenTime = ptr(s.OpenTime.String())
		}
		if s.CloseTime != nil {
			sb.CloseTime = ptr(s.CloseTime.String())
		}
		body.SpecialHoursComing = append(body.SpecialHoursComing, sb)
	}
	return body
}

// sortedRanges returns a copy of ranges ordered by weekday, lundi first, then by opening time;
// ranges that tie keep their given order.
func sortedRanges(ranges []domain.OpeningRange) []domain.OpeningRange {
	out := slices.Clone(ranges)
	slices.SortStableFunc(out, func(a, b domain.OpeningRange) int {
		if a.OpenDay != b.OpenDay {
			return int(a.OpenDay) - int(b.OpenDay)
		}
		return a.OpenTime.Minutes() - b.OpenTime.Minutes()
	})
	return out
}

// Summary returns the French display summary generated from regular opening ranges, or nil when
// there is none. It is used when the establishment gave no summary of its own.
//
// The format:
//   - Each range belongs to its opening day and reads "12:00-14:30"; a range that ends after
//     midnight reads with its closing time ("19:00-00:30"), a range that ends more than one day
//     later names its closing day ("22:00-mercredi 02:00"), and a range without a closing time
//     reads "à partir de 19:00". A day's ranges are joined with ", ", by opening time.
//   - Days follow the week, lundi first. Consecutive days with the same ranges form one group:
//     "mardi", "mardi et mercredi", "du mardi au jeudi"; seven identical days read "tous les
//     jours".
//   - Groups read "<days> : <ranges>" and are joined with " ; ". The days without any range come
//     last in one group, "lundi et dimanche : fermé", in which runs of three or more consecutive
//     days read "du lundi au mercredi".
//   - The first letter is upper case; day names keep French lower case elsewhere.
//
// For example: "Du mardi au jeudi : 12:00-14:30, 19:00-22:30 ; vendredi : 12:00-14:30,
// 19:00-00:30 ; samedi : 19:00-00:30 ; lundi et dimanche : fermé".
func Summary(ranges []domain.OpeningRange) *string {
	var perDay [8]string // by domain.Weekday; "" for a closed day
	hasRange := false
	for _, r := range sortedRanges(ranges) {
		if r.OpenDay < domain.Lundi || r.OpenDay > domain.Dimanche {
			continue
		}
		if perDay[r.OpenDay] != "" {
			perDay[r.OpenDay] += ", "
		}
		perDay[r.OpenDay] += rangeText(r)
		hasRange = true
	}
	if !hasRange {
		return nil
	}

	var groups []string
	var closed []domain.Weekday
	for d := domain.Lundi; d <= domain.Dimanche; {
		if perDay[d] == "" {
			closed = append(closed, d)
			d++
			continue
		}
		end := d
		for end < domain.Dimanche && perDay[end+1] == perDay[d] {
			end++
		}
		days := runText(d, end)
		if d == domain.Lundi && end == domain.Dimanche {
			days = "tous les jours"
		}
		groups = append(groups, days+" : "+perDay[d])
		d = end + 1
	}
	if len(closed) > 0 {
		groups = append(groups, dayListText(closed)+" : fermé")
	}
	s := upperFirst(strings.Join(groups, " ; "))
	return &s
}

// rangeText renders one opening range for the summary.
func rangeText(r domain.OpeningRange) string {
	open := r.OpenTime.String()
	if r.CloseTime == nil {
		return "à partir de " + open
	}
	closeTime := r.CloseTime.String()
	if r.CloseDay == nil || *r.CloseDay == r.OpenDay || *r.CloseDay == nextDay(r.OpenDay) {
		return open + "-" + closeTime
	}
	return open + "-" + r.CloseDay.String() + " " + closeTime
}

func nextDay(d domain.Weekday) domain.Weekday {
	if d == domain.Dimanche {
		return domain.Lundi
	}
	return d + 1
}

// runText names the consecutive days from first to last.
func runText(first, last domain.Weekday) string {
	switch last - first {
	case 0:
		return first.String()
	case 1:
		return first.String() + " et " + last.String()
	default:
		return "du " + first.String() + " au " + last.String()
	}
}

// dayListText names a set of days in week order: runs of three or more consecutive days read
// "du X au Y", the rest are listed, and the last item is joined with " et ".
func dayListText(days []domain.Weekday) string {
	var items []string
	for i := 0; i < len(days); {
		j := i
		for j+1 < len(days) && days[j+1] == days[j]+1 {
			j++
		}
		if j-i >= 2 {
			items = append(items, runText(days[i], days[j]))
		} else {
			for k := i; k <= j; k++ {
				items = append(items, days[k].String())
			}
		}
		i = j + 1
	}
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " et " + items[len(items)-1]
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func ptr[T any](v T) *T { return &v }
