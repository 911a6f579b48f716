package coding_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/opencarte/publisher/readapi/coding"
)

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   bool
	}{
		{"absent", nil, false},
		{"gzip", []string{"gzip"}, true},
		{"upper case", []string{"GZIP"}, true},
		{"x-gzip", []string{"x-gzip"}, true},
		{"in a list with weights", []string{"br;q=1.0, gzip;q=0.8, *;q=0.1"}, true},
		{"over two fields", []string{"br", "gzip"}, true},
		{"refused with q=0", []string{"gzip;q=0"}, false},
		{"refused with q=0.000 and spaces", []string{"gzip ; q=0.000"}, false},
		{"q=0.001 is accepted", []string{"gzip;q=0.001"}, true},
		{"refusal wins over a star", []string{"*, gzip;q=0"}, false},
		{"star", []string{"*"}, true},
		{"star refused", []string{"*;q=0"}, false},
		{"identity only", []string{"identity"}, false},
		{"deflate and br only", []string{"deflate, br"}, false},
		{"empty items", []string{" , ,gzip"}, true},
		{"not a token prefix", []string{"gzipped"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			for _, v := range tt.values {
				r.Header.Add("Accept-Encoding", v)
			}
			if got := coding.AcceptsGzip(r); got != tt.want {
				t.Errorf("Accept-Encoding %q: got %t, want %t", tt.values, got, tt.want)
			}
		})
	}
}

func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "*;q=0, gzip", "br;q=1.0, gzip;q=0.8", ";;;,,,q=", "gzip;q=0.0.0", "x-gzip;Q=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header["Accept-Encoding"] = []string{v}
		first := coding.AcceptsGzip(r)
		if coding.AcceptsGzip(r) != first {
			t.Errorf("%q: not deterministic", v)
		}
	})
}
