package domain

import (
	"fmt"
)

func validateHours(summary *string, in []OpeningRangeInput, fe *FieldErrorList) Hours {
	h := Hours{Summary: optText("business_hours_summary", summary, maxDescription, fe), Ranges: []OpeningRange{}}
	if len(in) > maxHours {
		fe.add("business_hours", "more than %d ranges", maxHours)
		return h
	}
	for i, r := range in {
		// The path is written only for a field the check rejects.
		p := func() string { return fmt.Sprintf("business_hours[%d]", i) }
		var or OpeningRange
		var err error
		if or.OpenDay, err = ParseWeekday(r.OpenDay); err != nil {
			fe.add(p()+".open_day", "%v", err)
		}
		openOK := true
		if or.OpenTime, err = ParseClockTime(r.OpenTime); err != nil {
			fe.add(p()+".open_time", "%v", err)
			openOK = false
		}
		if r.CloseDay != nil {
			d, err := ParseWeekday(*r.CloseDay)
			if err != nil {
				fe.add(p()+".close_day", "%v", err)
			}
			or.CloseDay = &d
		}
		or.CloseTime = optClock(p, ".close_time", r.CloseTime, fe)
		if openOK && or.OpenDay != 0 && or.CloseDay != nil && *or.CloseDay != 0 {
			checkRangeEnd(p(), or, r.CloseTime != nil, fe)
		}
		h.Ranges = append(h.Ranges, or)
	}
	return h
}

// checkRangeEnd checks where a range with a closing day ends: a close_time is then required,
// and the range ends later the same day, or the next day no later than it opened (it lasts at
// most a day).
func checkRangeEnd(p string, r OpeningRange, hasCloseTime bool, fe *FieldErrorList) {
	if !hasCloseTime {
		fe.add(p+".close_time", "required with close_day")
		return
	}
	if r.CloseTime == nil {
		return // invalid, reported
	}
	next := r.OpenDay%7 + 1
	switch open, end := r.OpenTime.Minutes(), r.CloseTime.Minutes(); *r.CloseDay {
	case r.OpenDay:
		if end <= open {
			fe.add(p+".close_time", "%s is not after open_time %s on the same day", r.CloseTime, r.OpenTime)
		}
	case next:
		if end > open {
			fe.add(p+".close_time", "%s on the next day: the range would last more than a day", r.CloseTime)
		}
	default:
		fe.add(p+".close_day", "%s: want the opening day or the next one", *r.CloseDay)
	}
}

func validateSpecialHours(in []SpecialHoursInput, fe *FieldErrorList) []SpecialHours {
	out := []SpecialHours{}
	if len(in) > maxHours {
		fe.add("special_hours", "more than %d exceptions", maxHours)
		return out
	}
	for i, s := range in {
		p := func() string { return fmt.Sprintf("special_hours[%d]", i) }
		var sh SpecialHours
		var err error
		if sh.StartDate, err = ParseLocalDate(s.StartDate); err != nil {
			fe.add(p()+".start_date", "%v", err)
		}
		sh.EndDate = optDate(p, ".end_date", s.EndDate, fe)
		if sh.EndDate != nil && !sh.StartDate.IsZero() && sh.EndDate.Before(sh.StartDate) {
			fe.add(p()+".end_date", "before start_date")
		}
		if sh.EndDate != nil && *sh.EndDate == sh.StartDate {
			sh.EndDate = nil // a one-day exception has no end_date
		}
		sh.OpenTime = optClock(p, ".open_time", s.OpenTime, fe)
		sh.CloseTime = optClock(p, ".close_time", s.CloseTime, fe)
		switch {
		case s.Closed == nil:
			fe.add(p()+".closed", "required")
		case !*s.Closed && s.OpenTime == nil && s.CloseTime == nil:
			fe.add(p()+".open_time", "an exception that is not a closure needs open_time or close_time")
		default:
			sh.Closed = *s.Closed
		}
		out = append(out, sh)
	}
	return out
}
