package listeners

import (
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/opencarte/publisher/cmd/publisher/capacity"
)

// The read API's listener answers while the process starts: /healthz 200, the rest 503 naming
// what the process waits for, then the read API once it is given.
func TestAPIListenerAnswersWhileStarting(t *testing.T) {
	s := New(Config{
		Budget: capacity.NewBudget(1024, 0, 0, 16), Logger: slog.New(slog.DiscardHandler),
		Fatal: func(err error) { t.Errorf("listener stopped: %v", err) },
	})
	defer s.ShutdownAPI()
	url, err := s.BindAPI("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Waiting-For"), string(body)
	}
	if code, _, body := get("/healthz"); code != http.StatusOK || body != `{"status":"ok"}` {
		t.Errorf("/healthz: got %d %s, want 200", code, body)
	}
	if code, waiting, body := get("/readyz"); code != http.StatusServiceUnavailable || waiting != `"the documents mirror"` || body != notReadyBody {
		t.Errorf("/readyz: got %d %s %s, want 503 waiting for the documents mirror", code, waiting, body)
	}
	s.Waiting("NATS at nats://localhost:4222")
	if _, waiting, _ := get("/api/v1/establishments/x"); waiting != `"NATS at nats://localhost:4222"` {
		t.Errorf("Waiting-For: got %s, want what the process waits for", waiting)
	}
	s.ServeAPI(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if code, _, _ := get("/readyz"); code != http.StatusTeapot {
		t.Errorf("once served: got %d, want the read API's answer", code)
	}
	for name, st := range s.Stats() {
		if name != "read api" || st.Refused != 0 {
			t.Errorf("stats: got %s %+v, want the read api's, nothing refused", name, st)
		}
	}
}
