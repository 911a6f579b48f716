package admin

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// observed tells Observe each answer's status under its route, and the handler's writer still
// reaches the connection's deadlines, which uploads and batches extend.
func TestObservedKeepsTheWriter(t *testing.T) {
	t.Parallel()
	type seen struct {
		route  string
		status int
	}
	var got []seen
	api, err := NewAPI(Config{
		Commands: &app.Commands{}, Token: testToken, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observe: func(route string, status int) { got = append(got, seen{route, status}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var deadlineErr error
	h := api.observed("POST /x", func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
		deadlineErr = http.NewResponseController(w).SetReadDeadline(time.Now().Add(time.Minute))
		writeError(w, http.StatusTeapot, "Teapot", nil)
	})
	quiet := api.observed("GET /y", func(http.ResponseWriter, *http.Request, httprouter.Params) {})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			h(w, r, nil)
			return
		}
		quiet(w, r, nil)
	}))
	defer srv.Close()
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		req, err := http.NewRequest(method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if deadlineErr != nil {
		t.Errorf("read deadline through the observed writer: got %v, want nil", deadlineErr)
	}
	want := []seen{{"POST /x", http.StatusTeapot}, {"GET /y", http.StatusOK}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("observed: got %v, want %v", got, want)
	}
}
