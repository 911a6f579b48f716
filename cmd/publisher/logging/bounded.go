package logging

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// maxAttrText bounds the text of one logged value. Whatever an error joins or a value holds, a log
// line stays a few kilobytes at most: no line grows with the number of establishments.
const maxAttrText = 512

// maxAttrs bounds the values of one record that are logged; the rest are counted.
const maxAttrs = 16

// maxRecordText bounds the text of all the values of one record, message included: with the
// time, level and keys, a line stays under 4 KiB.
const maxRecordText = 3 << 10

// boundedHandler clips every record's message and values before the next handler writes them.
type boundedHandler struct{ next slog.Handler }

func (h boundedHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h boundedHandler) Handle(ctx context.Context, r slog.Record) error {
	msg := clipText(r.Message)
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	budget := maxRecordText - len(msg)
	kept, left := 0, 0
	r.Attrs(func(a slog.Attr) bool {
		c := clipAttr(a)
		size := len(c.Key) + len(c.Value.String())
		if kept == maxAttrs || size > budget {
			left++
			return true
		}
		out.AddAttrs(c)
		kept, budget = kept+1, budget-size
		return true
	})
	if left > 0 {
		out.AddAttrs(slog.Int("attrs_left_out", left))
	}
	return h.next.Handle(ctx, out)
}

func (h boundedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clipped := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clipped[i] = clipAttr(a)
	}
	return boundedHandler{h.next.WithAttrs(clipped)}
}

func (h boundedHandler) WithGroup(name string) slog.Handler {
	return boundedHandler{h.next.WithGroup(name)}
}

// clipAttr bounds the text of a value: strings, errors and anything else printed as text. Groups
// are clipped value by value.
func clipAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, clipText(v.String()))
	case slog.KindGroup:
		g := v.Group()
		if len(g) > maxAttrs {
			g = g[:maxAttrs]
		}
		clipped := make([]any, len(g))
		for i, ga := range g {
			clipped[i] = clipAttr(ga)
		}
		return slog.Group(a.Key, clipped...)
	case slog.KindAny:
		return slog.String(a.Key, clipText(fmt.Sprint(v.Any())))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// clipText cuts s to maxAttrText bytes at a rune boundary, saying how much was left out.
func clipText(s string) string {
	if len(s) <= maxAttrText {
		return s
	}
	cut := maxAttrText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes left out)", s[:cut], len(s)-cut)
}
