package readapi

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

const (
	bodyNotFound         = `{"error":"Not found"}`
	bodyUnauthorized     = `{"error":"Unauthorized"}`
	bodyMethodNotAllowed = `{"error":"Method not allowed"}`
	bodyInternal         = `{"error":"Internal server error"}`
)

// answer is what a test expects of a response.
type answer struct {
	status int
	body   string
	header map[string]string // expected values; "" means the header must be absent
}

func ok(d string) answer {
	return answer{status: http.StatusOK, body: d}
}

// ld is a 200 answering a JSON-LD document.
func ld(d string) answer {
	return answer{status: http.StatusOK, body: d, header: map[string]string{"Content-Type": "application/ld+json"}}
}

func errAnswer(status int, body string) answer {
	return answer{status: status, body: body}
}

func found(location string) answer {
	return answer{status: http.StatusFound, header: map[string]string{"Location": location}}
}

// body returns the stored body of a fixture document at revision 7.
func body(slug, resource string) string { return string(testDoc(slug, resource, 7).Body) }

func etag(slug, resource string) string { return testDoc(slug, resource, 7).ETag }

func fileURL(slug, file string) string { return "https://files.example/" + slug + "/" + file }

func serve(tb testing.TB, h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func withKey(key string) http.Header { return http.Header{"X-Api-Key": {key}} }

// checkAnswer compares a recorded response with want, and checks the headers every answer of its
// kind carries.
func checkAnswer(tb testing.TB, w *httptest.ResponseRecorder, method string, want answer) {
	tb.Helper()
	res := w.Result()
	if res.StatusCode != want.status {
		tb.Errorf("status: got %d, want %d (body %q)", res.StatusCode, want.status, w.Body.String())
	}
	wantBody := want.body
	if method == http.MethodHead {
		wantBody = ""
	}
	if got := w.Body.String(); got != wantBody {
		tb.Errorf("body: got %q, want %q", got, wantBody)
	}
	ct := res.Header.Get("Content-Type")
	switch want.status {
	case http.StatusFound, http.StatusNotModified:
		if ct != "" {
			tb.Errorf("Content-Type: got %q, want none", ct)
		}
	default:
		if want.status >= 400 {
			if got := res.Header.Get("Cache-Control"); got != "no-store" {
				tb.Errorf("Cache-Control: got %q, want %q", got, "no-store")
			}
		}
		wantCT := "application/json"
		if v, ok := want.header["Content-Type"]; ok {
			wantCT = v
		}
		if ct != wantCT {
			tb.Errorf("Content-Type: got %q, want %q", ct, wantCT)
		}
		if got, want := res.Header.Get("Content-Length"), strconv.Itoa(len(want.body)); got != want {
			tb.Errorf("Content-Length: got %q, want %q", got, want)
		}
	}
	for k, v := range want.header {
		if got := res.Header.Get(k); got != v {
			tb.Errorf("header %s: got %q, want %q", k, got, v)
		}
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	h := fixtureHandler(t)
	const (
		est   = "/api/v1/establishments/"
		alEst = est + alice
	)
	long := strings.Repeat("a", 70)

	tests := []struct {
		name   string
		method string // GET when empty
		target string
		header http.Header
		want   answer
	}{
		// The four endpoints.
		{name: "establishment", target: alEst, header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "establishment"), header: map[string]string{
				"Etag": etag(alice, "establishment"), "Cache-Control": "private, no-cache", "Content-Revision": "7"}}},
		{name: "hours", target: alEst + "/hours", header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "hours"), header: map[string]string{"Etag": etag(alice, "hours")}}},
		{name: "menus", target: alEst + "/menus", header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "menus.all"), header: map[string]string{"Etag": etag(alice, "menus.all")}}},
		{name: "menu detail", target: alEst + "/menus/lunch", header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "menus/lunch.all"), header: map[string]string{"Etag": etag(alice, "menus/lunch.all")}}},
		{name: "second menu detail", target: alEst + "/menus/wine-list", header: withKey(keyAlice),
			want: ok(body(alice, "menus/wine-list.all"))},
		{name: "other establishment with its own key", target: est + bob, header: withKey(keyBob),
			want: ok(body(bob, "establishment"))},

		// The JSON-LD: French unless the locale is en, served as application/ld+json.
		{name: "jsonld", target: alEst + "/jsonld", header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "jsonld.fr"), header: map[string]string{
				"Content-Type": "application/ld+json", "Etag": etag(alice, "jsonld.fr"), "Cache-Control": "private, no-cache", "Content-Revision": "7"}}},
		{name: "jsonld locale fr", target: alEst + "/jsonld?locale=fr", header: withKey(keyAlice), want: ld(body(alice, "jsonld.fr"))},
		{name: "jsonld locale en", target: alEst + "/jsonld?locale=en", header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "jsonld.en"), header: map[string]string{"Content-Type": "application/ld+json", "Etag": etag(alice, "jsonld.en")}}},
		{name: "jsonld locale de is fr", target: alEst + "/jsonld?locale=de", header: withKey(keyAlice), want: ld(body(alice, "jsonld.fr"))},
		{name: "jsonld not modified", target: alEst + "/jsonld?locale=en", header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {etag(alice, "jsonld.en")}},
			want: answer{status: 304, header: map[string]string{"Etag": etag(alice, "jsonld.en"), "Content-Revision": "7"}}},
		{name: "jsonld no key", target: alEst + "/jsonld", want: errAnswer(401, bodyUnauthorized)},
		{name: "jsonld wrong key", target: alEst + "/jsonld", header: withKey(keyBob), want: errAnswer(401, bodyUnauthorized)},
		{name: "jsonld draft", target: est + dan + "/jsonld", header: withKey(keyDan), want: errAnswer(404, bodyNotFound)},
		{name: "jsonld api disabled", target: est + quinn + "/jsonld", header: withKey(keyQuinn), want: errAnswer(404, bodyNotFound)},
		{name: "jsonld not rendered yet", target: est + bob + "/jsonld", header: withKey(keyBob), want: errAnswer(404, bodyNotFound)},
		{name: "jsonld unknown slug", target: est + "nobody/jsonld", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},

		// Locale.
		{name: "menus locale fr", target: alEst + "/menus?locale=fr", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale en", target: alEst + "/menus?locale=en", header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "menus.en"), header: map[string]string{"Etag": etag(alice, "menus.en")}}},
		{name: "menus locale de is fr", target: alEst + "/menus?locale=de", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale empty is fr", target: alEst + "/menus?locale=", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale without value is fr", target: alEst + "/menus?locale", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale EN is fr", target: alEst + "/menus?locale=EN", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale escaped en", target: alEst + "/menus?%6Cocale=%65n", header: withKey(keyAlice), want: ok(body(alice, "menus.en"))},
		{name: "menus first locale wins", target: alEst + "/menus?locale=en&locale=fr", header: withKey(keyAlice), want: ok(body(alice, "menus.en"))},
		{name: "menus other parameters only", target: alEst + "/menus?x=1&localex=en", header: withKey(keyAlice), want: ok(body(alice, "menus.all"))},
		{name: "detail locale fr", target: alEst + "/menus/lunch?locale=fr", header: withKey(keyAlice), want: ok(body(alice, "menus/lunch.fr"))},
		{name: "detail locale en", target: alEst + "/menus/lunch?locale=en", header: withKey(keyAlice), want: ok(body(alice, "menus/lunch.en"))},
		{name: "detail locale de is fr", target: alEst + "/menus/lunch?locale=de", header: withKey(keyAlice), want: ok(body(alice, "menus/lunch.fr"))},
		{name: "detail locale empty is fr", target: alEst + "/menus/lunch?locale=", header: withKey(keyAlice), want: ok(body(alice, "menus/lunch.fr"))},
		{name: "establishment ignores locale", target: alEst + "?locale=en", header: withKey(keyAlice), want: ok(body(alice, "establishment"))},
		{name: "hours ignore locale", target: alEst + "/hours?locale=en", header: withKey(keyAlice), want: ok(body(alice, "hours"))},
		{name: "menus locale with a semicolon is fr", target: alEst + "/menus?locale=fr;", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale en with a semicolon is fr", target: alEst + "/menus?locale=en;x=1", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "menus locale with a bad escape is fr", target: alEst + "/menus?locale=%zz", header: withKey(keyAlice), want: ok(body(alice, "menus.fr"))},
		{name: "detail locale with a bad escape is fr", target: alEst + "/menus/lunch?locale=e%n", header: withKey(keyAlice), want: ok(body(alice, "menus/lunch.fr"))},

		// Missing key: 401 before anything else.
		{name: "no key establishment", target: alEst, want: errAnswer(401, bodyUnauthorized)},
		{name: "no key hours", target: alEst + "/hours", want: errAnswer(401, bodyUnauthorized)},
		{name: "no key menus", target: alEst + "/menus", want: errAnswer(401, bodyUnauthorized)},
		{name: "no key detail", target: alEst + "/menus/lunch", want: errAnswer(401, bodyUnauthorized)},
		{name: "no key unknown slug", target: est + "nobody", want: errAnswer(401, bodyUnauthorized)},
		{name: "no key invalid slug", target: est + "Nobody", want: errAnswer(401, bodyUnauthorized)},
		{name: "no key draft", target: est + dan, want: errAnswer(401, bodyUnauthorized)},
		{name: "empty key", target: alEst, header: withKey(""), want: errAnswer(401, bodyUnauthorized)},
		{name: "key in another header", target: alEst, header: http.Header{"Authorization": {keyAlice}}, want: errAnswer(401, bodyUnauthorized)},

		// Wrong key on an establishment that serves the API: 401.
		{name: "wrong key establishment", target: alEst, header: withKey("nope"), want: errAnswer(401, bodyUnauthorized)},
		{name: "wrong key hours", target: alEst + "/hours", header: withKey("nope"), want: errAnswer(401, bodyUnauthorized)},
		{name: "wrong key menus", target: alEst + "/menus", header: withKey("nope"), want: errAnswer(401, bodyUnauthorized)},
		{name: "wrong key detail", target: alEst + "/menus/lunch", header: withKey("nope"), want: errAnswer(401, bodyUnauthorized)},
		{name: "wrong key unknown menu type", target: alEst + "/menus/brunch", header: withKey("nope"), want: errAnswer(401, bodyUnauthorized)},
		{name: "key with extra byte", target: alEst, header: withKey(keyAlice + "x"), want: errAnswer(401, bodyUnauthorized)},
		{name: "long wrong key", target: alEst, header: withKey(strings.Repeat("k", 4096)), want: errAnswer(401, bodyUnauthorized)},
		{name: "key of bob on alice", target: alEst, header: withKey(keyBob), want: errAnswer(401, bodyUnauthorized)},
		{name: "key of alice on bob", target: est + bob + "/menus", header: withKey(keyAlice), want: errAnswer(401, bodyUnauthorized)},

		// Slugs that are unknown or invalid: 404 with a valid-looking key.
		{name: "unknown slug", target: est + "nobody", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "unknown slug hours", target: est + "nobody/hours", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "uppercase slug", target: est + "Chez-Alice", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "slug with dots", target: est + "chez.alice", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "escaped slash in slug", target: alEst + "%2Fhours", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "escaped slashes in slug", target: alEst + "%2fmenus%2Flunch", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "escaped slash in menu type", target: alEst + "/menus/lunch%2F", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "escaped letter in slug", target: est + "%" + strings.ToUpper(strconv.FormatInt(int64(alice[0]), 16)) + alice[1:], header: withKey(keyAlice), want: ok(body(alice, "establishment"))},
		{name: "slug dot dot", target: est + "..", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "slug escaped dot dot", target: est + "%2E%2E/menus", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "slug of 70 characters", target: est + long, header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "slug with leading hyphen", target: est + "-chez-alice", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "slug with underscore", target: est + "chez_alice", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "slug with space", target: est + "chez%20alice", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},

		// Draft: 404 everywhere, even with the right key.
		{name: "draft establishment", target: est + dan, header: withKey(keyDan), want: errAnswer(404, bodyNotFound)},
		{name: "draft hours", target: est + dan + "/hours", header: withKey(keyDan), want: errAnswer(404, bodyNotFound)},
		{name: "draft menus", target: est + dan + "/menus", header: withKey(keyDan), want: errAnswer(404, bodyNotFound)},
		{name: "draft detail", target: est + dan + "/menus/lunch", header: withKey(keyDan), want: errAnswer(404, bodyNotFound)},
		{name: "draft master menu", target: "/r/master_menu?establishment=" + dan, want: errAnswer(404, bodyNotFound)},
		{name: "draft menu redirect", target: "/r/menus?establishment=" + dan + "&menu_type=lunch", want: errAnswer(404, bodyNotFound)},

		// API disabled: 404 on the API, redirects unaffected.
		{name: "api disabled establishment", target: est + quinn, header: withKey(keyQuinn), want: errAnswer(404, bodyNotFound)},
		{name: "api disabled detail", target: est + quinn + "/menus/lunch", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "api disabled master menu", target: "/r/master_menu?establishment=" + quinn, want: found(fileURL(quinn, "master.pdf"))},
		{name: "api disabled menu redirect", target: "/r/menus?establishment=" + quinn + "&menu_type=lunch", want: found(fileURL(quinn, "lunch-fr-1.png"))},

		// Menu types.
		{name: "unknown menu type", target: alEst + "/menus/brunch", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "invalid menu type", target: alEst + "/menus/Lunch", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "menu type of 70 characters", target: alEst + "/menus/" + long, header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},

		// If-None-Match.
		{name: "etag matches", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {etag(alice, "establishment")}},
			want: answer{status: 304, header: map[string]string{"Etag": etag(alice, "establishment"), "Content-Length": "",
				"Cache-Control": "private, no-cache", "Content-Revision": "7"}}},
		{name: "etag in a list", target: alEst + "/hours", header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {`"zzz", ` + etag(alice, "hours")}},
			want: answer{status: 304}},
		{name: "etag in a second header", target: alEst + "/hours", header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {`"zzz"`, etag(alice, "hours")}},
			want: answer{status: 304}},
		{name: "etag star", target: alEst + "/menus/lunch?locale=en", header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {"*"}},
			want: answer{status: 304, header: map[string]string{"Etag": etag(alice, "menus/lunch.en")}}},
		{name: "weak form of the etag", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {"W/" + etag(alice, "establishment")}},
			want: answer{status: 304}},
		{name: "etag of another variant", target: alEst + "/menus?locale=en", header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {etag(alice, "menus.all")}},
			want: ok(body(alice, "menus.en"))},
		{name: "etag mismatch", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {`"stale"`}},
			want: ok(body(alice, "establishment"))},
		{name: "etag unquoted", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {strings.Trim(etag(alice, "establishment"), `"`)}},
			want: ok(body(alice, "establishment"))},
		{name: "etag matches but wrong key", target: alEst, header: http.Header{"X-Api-Key": {"nope"}, "If-None-Match": {"*"}},
			want: errAnswer(401, bodyUnauthorized)},
		{name: "etag matches but unknown menu type", target: alEst + "/menus/brunch", header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {"*"}},
			want: errAnswer(404, bodyNotFound)},

		// If-Match: a 412 when it names none of the document's tags, evaluated before If-None-Match.
		{name: "if-match matches", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-Match": {etag(alice, "establishment")}},
			want: ok(body(alice, "establishment"))},
		{name: "if-match star", target: alEst + "/hours", header: http.Header{"X-Api-Key": {keyAlice}, "If-Match": {"*"}},
			want: ok(body(alice, "hours"))},
		{name: "if-match in a list", target: alEst + "/hours", header: http.Header{"X-Api-Key": {keyAlice}, "If-Match": {`"zzz", ` + etag(alice, "hours")}},
			want: ok(body(alice, "hours"))},
		{name: "if-match stale", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-Match": {`"stale"`}},
			want: answer{status: 412, body: `{"error":"Precondition failed"}`, header: map[string]string{"Cache-Control": "no-store", "Etag": ""}}},
		{name: "if-match weak never matches", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-Match": {"W/" + etag(alice, "establishment")}},
			want: errAnswer(412, `{"error":"Precondition failed"}`)},
		{name: "if-match before if-none-match", target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-Match": {`"stale"`}, "If-None-Match": {"*"}},
			want: errAnswer(412, `{"error":"Precondition failed"}`)},
		{name: "if-match but wrong key", target: alEst, header: http.Header{"X-Api-Key": {"nope"}, "If-Match": {`"stale"`}},
			want: errAnswer(401, bodyUnauthorized)},

		// HEAD.
		{name: "head establishment", method: http.MethodHead, target: alEst, header: withKey(keyAlice),
			want: answer{status: 200, body: body(alice, "establishment"), header: map[string]string{"Etag": etag(alice, "establishment")}}},
		{name: "head detail", method: http.MethodHead, target: alEst + "/menus/lunch?locale=en", header: withKey(keyAlice), want: ok(body(alice, "menus/lunch.en"))},
		{name: "head no key", method: http.MethodHead, target: alEst, want: errAnswer(401, bodyUnauthorized)},
		{name: "head unknown path", method: http.MethodHead, target: "/nothing", want: errAnswer(404, bodyNotFound)},
		{name: "head master menu", method: http.MethodHead, target: "/r/master_menu?establishment=" + alice, want: found(fileURL(alice, "master.pdf"))},
		{name: "head not modified", method: http.MethodHead, target: alEst, header: http.Header{"X-Api-Key": {keyAlice}, "If-None-Match": {"*"}},
			want: answer{status: 304}},

		// Other methods and paths.
		{name: "post establishment", method: http.MethodPost, target: alEst, header: withKey(keyAlice),
			want: answer{status: 405, body: bodyMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"}}},
		{name: "put hours", method: http.MethodPut, target: alEst + "/hours", want: answer{status: 405, body: bodyMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"}}},
		{name: "delete detail", method: http.MethodDelete, target: alEst + "/menus/lunch", want: answer{status: 405, body: bodyMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"}}},
		{name: "options menus", method: http.MethodOptions, target: alEst + "/menus", want: answer{status: 405, body: bodyMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"}}},
		{name: "post redirect", method: http.MethodPost, target: "/r/menus", want: answer{status: 405, body: bodyMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"}}},
		{name: "post unknown path", method: http.MethodPost, target: "/nothing", want: errAnswer(404, bodyNotFound)},
		{name: "root", target: "/", want: errAnswer(404, bodyNotFound)},
		{name: "collection", target: "/api/v1/establishments", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "other version", target: "/api/v2/establishments/" + alice, header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "trailing slash", target: alEst + "/", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "upper-case path", target: "/API/v1/establishments/" + alice, header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "unknown resource", target: alEst + "/photos", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},
		{name: "too deep", target: alEst + "/menus/lunch/items", header: withKey(keyAlice), want: errAnswer(404, bodyNotFound)},

		// /r/master_menu.
		{name: "master menu", target: "/r/master_menu?establishment=" + alice, want: found(fileURL(alice, "master.pdf"))},
		{name: "master menu ignores the key", target: "/r/master_menu?establishment=" + alice, header: withKey("nope"), want: found(fileURL(alice, "master.pdf"))},
		{name: "master menu without file", target: "/r/master_menu?establishment=" + bob, want: errAnswer(404, bodyNotFound)},
		{name: "master menu unknown", target: "/r/master_menu?establishment=nobody", want: errAnswer(404, bodyNotFound)},
		{name: "master menu invalid slug", target: "/r/master_menu?establishment=Chez-Alice", want: errAnswer(404, bodyNotFound)},
		{name: "master menu without establishment", target: "/r/master_menu", want: errAnswer(404, bodyNotFound)},
		{name: "master menu empty establishment", target: "/r/master_menu?establishment=", want: errAnswer(404, bodyNotFound)},

		// /r/menus.
		{name: "menu redirect default locale", target: "/r/menus?establishment=" + alice + "&menu_type=lunch", want: found(fileURL(alice, "lunch-fr-1.png"))},
		{name: "menu redirect fr", target: "/r/menus?establishment=" + alice + "&menu_type=lunch&locale=fr", want: found(fileURL(alice, "lunch-fr-1.png"))},
		{name: "menu redirect en", target: "/r/menus?establishment=" + alice + "&menu_type=lunch&locale=en", want: found(fileURL(alice, "lunch-en-1.png"))},
		{name: "menu redirect unknown locale", target: "/r/menus?locale=de&establishment=" + alice + "&menu_type=lunch", want: found(fileURL(alice, "lunch-fr-1.png"))},
		{name: "menu redirect en without en file", target: "/r/menus?establishment=" + alice + "&menu_type=wine-list&locale=en", want: errAnswer(404, bodyNotFound)},
		{name: "menu redirect fr_en file", target: "/r/menus?establishment=" + alice + "&menu_type=wine-list", want: found(fileURL(alice, "wine-fr_en-1.pdf"))},
		{name: "menu redirect disabled", target: "/r/menus?establishment=" + bob + "&menu_type=lunch", want: errAnswer(404, bodyNotFound)},
		{name: "menu redirect unknown menu type", target: "/r/menus?establishment=" + alice + "&menu_type=brunch", want: errAnswer(404, bodyNotFound)},
		{name: "menu redirect invalid menu type", target: "/r/menus?establishment=" + alice + "&menu_type=..", want: errAnswer(404, bodyNotFound)},
		{name: "menu redirect without menu type", target: "/r/menus?establishment=" + alice, want: errAnswer(404, bodyNotFound)},
		{name: "menu redirect without establishment", target: "/r/menus?menu_type=lunch", want: errAnswer(404, bodyNotFound)},
		{name: "menu redirect unknown establishment", target: "/r/menus?establishment=nobody&menu_type=lunch", want: errAnswer(404, bodyNotFound)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			w := serve(t, h, method, tt.target, tt.header)
			checkAnswer(t, w, method, tt.want)
		})
	}
}

// TestErrorBodies pins every error body byte for byte.
func TestErrorBodies(t *testing.T) {
	t.Parallel()
	want := map[failure]string{
		notFound:           `{"error":"Not found"}`,
		unauthorized:       `{"error":"Unauthorized"}`,
		methodNotAllowed:   `{"error":"Method not allowed"}`,
		rateLimited:        `{"error":"Rate limit exceeded"}`,
		internalError:      `{"error":"Internal server error"}`,
		notReady:           `{"error":"Not ready"}`,
		preconditionFailed: `{"error":"Precondition failed"}`,
		unavailable:        `{"error":"Service unavailable"}`,
		tooManyConnections: `{"error":"Too many connections"}`,
	}
	wantStatus := map[failure]int{notFound: 404, unauthorized: 401, methodNotAllowed: 405, rateLimited: 429, internalError: 500, notReady: 503, preconditionFailed: 412, unavailable: 503, tooManyConnections: 429}
	if got, want := len(errorAnswers), len(want); got != want {
		t.Fatalf("error answers: got %d, want %d", got, want)
	}
	for f, body := range want {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest(http.MethodGet, "/", nil), f)
			checkAnswer(t, w, http.MethodGet, errAnswer(wantStatus[f], body))
		})
	}
}

// panicSource panics on every lookup.
type panicSource struct{ v any }

func (p panicSource) lookup(string) *served { panic(p.v) }

func TestRecoverPanics(t *testing.T) {
	t.Parallel()
	logger, logs := newTestLogger()
	h := newTestServer(t, panicSource{v: "boom"}, Config{Logger: logger}).Handler()
	w := serve(t, h, http.MethodGet, "/r/master_menu?establishment="+alice, nil)
	checkAnswer(t, w, http.MethodGet, errAnswer(http.StatusInternalServerError, bodyInternal))
	if got := logs.String(); !strings.Contains(got, "panic serving request") || !strings.Contains(got, "boom") {
		t.Errorf("log: got %q, want the panic logged", got)
	}
}

func TestRecoverPanicsLetsAbortThrough(t *testing.T) {
	t.Parallel()
	h := newTestServer(t, panicSource{v: http.ErrAbortHandler}, Config{}).Handler()
	defer func() {
		if got := recover(); got != http.ErrAbortHandler {
			t.Errorf("recovered: got %v, want http.ErrAbortHandler", got)
		}
	}()
	serve(t, h, http.MethodGet, "/r/master_menu?establishment="+alice, nil)
	t.Error("ServeHTTP returned, want a panic")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	m, err := NewMirror(nil, nil)
	if err == nil {
		t.Fatalf("NewMirror(nil, nil): got %v, want an error", m)
	}
	if _, err := New(Config{}); err == nil {
		t.Fatal("New(Config{}): got no error, want one")
	} else if got := err.Error(); !strings.Contains(got, "mirror") || !strings.Contains(got, "logger") {
		t.Errorf("New(Config{}): got %q, want both missing settings named", got)
	}
}

func TestNewHTTPServer(t *testing.T) {
	t.Parallel()
	h := http.NotFoundHandler()
	s := NewHTTPServer("127.0.0.1:8080", h)
	if s.Addr != "127.0.0.1:8080" {
		t.Errorf("Addr: got %q, want %q", s.Addr, "127.0.0.1:8080")
	}
	for name, d := range map[string]int64{
		"ReadHeaderTimeout": int64(s.ReadHeaderTimeout), "ReadTimeout": int64(s.ReadTimeout),
		"WriteTimeout": int64(s.WriteTimeout), "IdleTimeout": int64(s.IdleTimeout), "MaxHeaderBytes": int64(s.MaxHeaderBytes),
	} {
		if d <= 0 {
			t.Errorf("%s: got %d, want it set", name, d)
		}
	}
}

func TestMatchesETag(t *testing.T) {
	t.Parallel()
	const tag = `"abc"`
	tests := []struct {
		list string
		want bool
	}{
		{`"abc"`, true},
		{`*`, true},
		{` "abc" `, true},
		{`"x","abc"`, true},
		{`"x" , W/"abc"`, true},
		{`,,"abc"`, true},
		{`W/"abc"`, true},
		{``, false},
		{`"ab"`, false},
		{`abc`, false},
		{`"abc`, false},
		{`W/abc`, false},
		{`"x" junk "abc"`, false},
		{`"a"bc"`, false},
		{"\"ab\x01c\"", false},
	}
	for _, tt := range tests {
		if got := matchesETag(tt.list, tag); got != tt.want {
			t.Errorf("matchesETag(%q, %q): got %v, want %v", tt.list, tag, got, tt.want)
		}
	}
}

func TestQueryValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw, key  string
		wantValue string
		wantOK    bool
	}{
		{"", "locale", "", false},
		{"locale=en", "locale", "en", true},
		{"locale", "locale", "", true},
		{"locale=", "locale", "", true},
		{"a=1&locale=en&locale=fr", "locale", "en", true},
		{"localex=en", "locale", "", false},
		{"locale=e%6E", "locale", "en", true},
		{"loc%61le=en", "locale", "en", true},
		{"locale=a+b", "locale", "a b", true},
		{"locale=%zz&locale=en", "locale", "%zz", true},
		{"locale=fr;x=1&locale=en", "locale", "fr;x=1", true},
		{"x=1;locale=en", "locale", "", false},
		{"loc%zzale=en&locale=fr", "locale", "fr", true},
		{"&&locale=en&", "locale", "en", true},
	}
	for _, tt := range tests {
		v, ok := queryValue(tt.raw, tt.key)
		if v != tt.wantValue || ok != tt.wantOK {
			t.Errorf("queryValue(%q, %q): got %q, %v, want %q, %v", tt.raw, tt.key, v, ok, tt.wantValue, tt.wantOK)
		}
	}
}

func TestValidSlug(t *testing.T) {
	t.Parallel()
	tests := []struct {
		slug string
		want bool
	}{
		{"a", true},
		{"0", true},
		{"chez-alice", true},
		{"a-b-c-1", true},
		{"ab", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-", false},
		{"-a", false},
		{"a-", false},
		{"A", false},
		{"chez.alice", false},
		{"..", false},
		{"chez_alice", false},
		{"chez alice", false},
		{"é", false},
	}
	for _, tt := range tests {
		if got := validSlug(tt.slug); got != tt.want {
			t.Errorf("validSlug(%q): got %v, want %v", tt.slug, got, tt.want)
		}
	}
}

// sameErr reports whether err matches want with errors.Is, or is nil when want is nil.
func sameErr(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
