package logging

import (
	"fmt"
	"io"
	"log/slog"
)

// New returns a logger writing text lines to w at level: debug, info, warn or error.
func New(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(boundedHandler{slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})}), nil
}
