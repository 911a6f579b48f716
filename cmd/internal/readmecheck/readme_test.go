package readmecheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's directory, where go test runs it.
const root = "../../.."

// readme is README.md taken apart: its headings, its text outside fenced code blocks, and the
// lines inside them.
type readme struct {
	headings []heading
	prose    string
	code     []string
}

type heading struct {
	level        int
	text, anchor string
}

func load(t testing.TB) readme {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var r readme
	var prose []string
	fenced := false
	seen := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "```"): // a fence, also inside a list
			fenced = !fenced
		case fenced:
			r.code = append(r.code, line)
		default:
			prose = append(prose, line)
			if h, ok := parseHeading(line); ok {
				h.anchor = unique(h.anchor, seen)
				r.headings = append(r.headings, h)
			}
		}
	}
	r.prose = strings.Join(prose, "\n")
	return r
}

var headingLine = regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`)

func parseHeading(line string) (heading, bool) {
	m := headingLine.FindStringSubmatch(line)
	if m == nil {
		return heading{}, false
	}
	return heading{level: len(m[1]), text: m[2], anchor: anchor(m[2])}, true
}

// anchor is the fragment GitHub gives a heading: lower case, letters, digits, hyphens and
// underscores kept, spaces made hyphens, anything else dropped.
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// unique numbers a repeated anchor as GitHub does: the second "x" is "x-1".
func unique(a string, seen map[string]int) string {
	n := seen[a]
	seen[a]++
	if n == 0 {
		return a
	}
	return a + "-" + strconv.Itoa(n)
}

var (
	localLink = regexp.MustCompile(`\]\(#([^)\s]*)\)`)
	codeSpan  = regexp.MustCompile("`([^`]+)`")
)

// spans are the prose's inline code spans, each on one line.
func (r readme) spans() []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(r.prose, -1) {
		out = append(out, strings.Join(strings.Fields(m[1]), " "))
	}
	return out
}

// TestLinksNameHeadings fails on a link to a heading that does not exist, and on a section
// missing from the contents, so that the contents stay a map of the whole README.
func TestLinksNameHeadings(t *testing.T) {
	r := load(t)
	anchors := map[string]bool{}
	for _, h := range r.headings {
		anchors[h.anchor] = true
	}
	for _, m := range localLink.FindAllStringSubmatch(r.prose, -1) {
		if !anchors[m[1]] {
			t.Errorf("link to #%s: no heading has that anchor", m[1])
		}
	}
	contents := r.section("Contents")
	if contents == "" {
		t.Fatal(`no "## Contents" section`)
	}
	listed := map[string]bool{}
	for _, m := range localLink.FindAllStringSubmatch(contents, -1) {
		listed[m[1]] = true
	}
	after := false
	for _, h := range r.headings {
		if after && h.level <= 3 && !listed[h.anchor] {
			t.Errorf("heading %q (#%s) is missing from the contents", h.text, h.anchor)
		}
		after = after || h.text == "Contents"
	}
}

// section is the prose under the second-level heading named title, up to the next one.
func (r readme) section(title string) string {
	_, rest, ok := strings.Cut(r.prose, "\n## "+title+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// TestPathsExist fails on a repository path the README names in code that is not there, so that
// moving a file means saying where it went.
func TestPathsExist(t *testing.T) {
	r := load(t)
	for _, s := range r.spans() {
		if !isRepoPath(s) {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(s))); err != nil {
			t.Errorf("README names %s: %v", s, err)
		}
	}
}

var pathLike = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+/?$`)

// isRepoPath says whether s is a path under one of the repository's top-level entries, rather
// than a file of the reader's, an API path or a placeholder.
func isRepoPath(s string) bool {
	if !pathLike.MatchString(s) || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") {
		return false
	}
	first, _, _ := strings.Cut(s, "/")
	entries, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == first })
}
