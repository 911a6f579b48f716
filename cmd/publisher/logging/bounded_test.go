package logging

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// No log line grows with what it reports: a joined error of thousands of establishments, a long
// value, many values, all come out as a line of a few kilobytes that still says what happened.
func TestLogLinesAreBounded(t *testing.T) {
	var buf bytes.Buffer
	logger, err := New(&buf, "debug")
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for i := range 5000 {
		errs = append(errs, fmt.Errorf("start day establishment-%d: nats: timeout", i))
	}
	logger.Error("clock tick", "err", errors.Join(errs...))
	logger.With("context", strings.Repeat("é", 10_000)).Warn(strings.Repeat("message ", 1000), "value", strings.Repeat("v", 1<<20))
	many := make([]any, 0, 200)
	for i := range 100 {
		many = append(many, fmt.Sprintf("k%d", i), strings.Repeat("x", 400))
	}
	logger.Info("many values", many...)
	logger.Info("a group", slog.Group("g", "a", strings.Repeat("y", 5000), "b", []string{strings.Repeat("z", 5000)}))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4", len(lines))
	}
	for _, line := range lines {
		if len(line) > 4096 {
			t.Errorf("log line of %d bytes, want at most 4096: %.120s…", len(line), line)
		}
	}
	if !strings.Contains(lines[0], "start day establishment-0: nats: timeout") || !strings.Contains(lines[0], "bytes left out") {
		t.Errorf("clipped error: got %.300s, want its start and the size left out", lines[0])
	}
	if !strings.Contains(lines[2], "attrs_left_out=") || strings.Contains(lines[2], "k99=") {
		t.Errorf("many values: got %.300s…, want the count of values left out", lines[2])
	}
}
