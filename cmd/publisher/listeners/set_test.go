package listeners

import (
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
)

// A listener is bound at once and served later; one never served is closed by Shutdown, its
// address free again.
func TestBoundListenerIsServedLaterOrClosed(t *testing.T) {
	s := New(Config{
		Budget: capacity.NewBudget(1024, 0, 0, 16), Logger: slog.New(slog.DiscardHandler),
		Fatal: func(err error) { t.Errorf("listener stopped: %v", err) },
	})
	admin, err := s.Bind("127.0.0.1:0", capacity.ListenerAdmin, "admin api")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := s.Bind("127.0.0.1:0", capacity.ListenerMetrics, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Serve(capacity.ListenerAdmin, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })); got != admin {
		t.Errorf("served at %s, want %s, where it was bound", got, admin)
	}
	resp, err := http.Get(admin + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("got %d, want the handler's answer", resp.StatusCode)
	}
	s.Shutdown()
	for _, url := range []string{admin, metrics} {
		ln, err := net.Listen("tcp", url[len("http://"):])
		if err != nil {
			t.Errorf("after shutdown, %s: %v; want it free", url, err)
			continue
		}
		ln.Close()
	}
	if got := s.Serve(capacity.ListenerMetrics, http.NotFoundHandler()); got != "" {
		t.Errorf("served a closed listener at %s, want none", got)
	}
}
