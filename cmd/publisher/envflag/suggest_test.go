package envflag

import "testing"

func TestSuggest(t *testing.T) {
	commands := []string{"serve", "import", "admin", "verify", "rebuild", "version"}
	for _, c := range []struct {
		name, want string
	}{
		{"serv", "serve"},
		{"ipmort", "import"},
		{"verion", "version"},
		{"verfy", "verify"},
		{"rebiuld", "rebuild"},
		{"admn", "admin"},
		{"sevre", "serve"},
		{"s", ""},
		{"status", ""},
		{"deploy", ""},
		{"", ""},
	} {
		got, ok := Suggest(c.name, commands)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Suggest(%q): got %q %t, want %q", c.name, got, ok, c.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"abc", "abc", 0}, {"abc", "acb", 1},
		{"kitten", "sitting", 3}, {"ca", "abc", 3}, {"serve", "serv", 1},
	} {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q): got %d, want %d", c.a, c.b, got, c.want)
		}
		if got := distance(c.b, c.a); got != c.want {
			t.Errorf("distance(%q, %q): got %d, want %d", c.b, c.a, got, c.want)
		}
	}
}
