package domain

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// referenceText is validateText written as the rules read, one check after the other: what
// scanText, which makes them in one reading, must answer.
func referenceText(s string, max int, line bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	if utf8.RuneCountInString(s) > max {
		return fmt.Errorf("longer than %d characters", max)
	}
	for _, r := range s {
		switch {
		case r < 0x20 && r != '\n' && r != '\t' && r != '\r', r >= 0x7f && r <= 0x9f:
			return fmt.Errorf("contains a control character")
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Errorf("contains a bidirectional formatting character (U+%04X)", r)
		}
	}
	if line && strings.ContainsAny(s, "\n\r\t") {
		return fmt.Errorf("contains a line break or a tab")
	}
	return nil
}

func sameError(a, b error) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// FuzzTextChecks checks validateText and validateLine against the rules checked one by one: the
// same answer, and the same first failure, on any text and any length bound.
func FuzzTextChecks(f *testing.F) {
	for _, s := range []string{
		"", "Œuf parfait, crème de cèpes", "a\nb\tc\rd", "\x00", "\x7f", "\u0085", "\u009f\u00a0",
		"\u202a", "x\u2066y", "\u2069", "\u202f", "\xff", "é\xc3", "\x01\u202e\n", "😀 ok",
	} {
		f.Add(s, 10)
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		for _, line := range []bool{false, true} {
			if got, want := scanText(s, max, line), referenceText(s, max, line); !sameError(got, want) {
				t.Errorf("%q, max %d, line %v: got %v, want %v", s, max, line, got, want)
			}
		}
	})
}

// Dates and times of day are written by hand as fmt would write them, whatever their values.
func TestDateAndTimeTextAsFmt(t *testing.T) {
	for _, y := range []int{-1, 0, 7, 999, 2026, 9999, 10000} {
		for _, m := range []time.Month{-1, 0, 1, 9, 10, 12, 99, 100} {
			for _, d := range []int{-3, 0, 1, 9, 10, 31, 99, 100} {
				date := LocalDate{Year: y, Month: m, Day: d}
				want := fmt.Sprintf("%04d-%02d-%02d", y, m, d)
				if date.IsZero() {
					want = ""
				}
				if got := date.String(); got != want {
					t.Errorf("%+v: got %q, want %q", date, got, want)
				}
			}
		}
	}
	for _, minutes := range []int{-61, -1, 0, 1, 59, 60, 599, 600, 1439, 1440, 5999, 6000, 6001} {
		c := ClockTime{minutes}
		if got, want := c.String(), fmt.Sprintf("%02d:%02d", minutes/60, minutes%60); got != want {
			t.Errorf("%d minutes: got %q, want %q", minutes, got, want)
		}
	}
}
