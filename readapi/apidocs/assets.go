package apidocs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"

	swaggerui "github.com/swaggest/swgui/v5/static"

	"github.com/opencarte/publisher/readapi/coding"
)

//go:embed docs.js
var own embed.FS

// asset is one file the page loads, kept as it is embedded: gzip-compressed or not.
type asset struct {
	body        []byte
	gzipped     bool
	contentType []string
	length      []string
}

// assets is the files the page loads, by name, and their version: the first 16 hexadecimal
// digits of the SHA-256 of every file in name order, which changes with any of them.
type assets struct {
	files   map[string]*asset
	version string
}

// The files the page loads: Swagger UI's script and style sheet (as the swgui module embeds them,
// gzip-compressed), its icon, and the script that starts it.
var assetSources = []struct {
	fsys fs.FS
	file string
}{
	{swaggerui.FS, "swagger-ui-bundle.js.gz"},
	{swaggerui.FS, "swagger-ui.css.gz"},
	{swaggerui.FS, "favicon-32x32.png"},
	{own, "docs.js"},
}

// loadAssets reads the embedded files once; they never change while the process runs.
var loadAssets = sync.OnceValues(func() (*assets, error) {
	set := &assets{files: make(map[string]*asset, len(assetSources))}
	all := sha256.New()
	for _, src := range assetSources {
		body, err := fs.ReadFile(src.fsys, src.file)
		if err != nil {
			return nil, fmt.Errorf("apidocs: %w", err)
		}
		name, gzipped := strings.CutSuffix(src.file, ".gz")
		sum := sha256.Sum256(body)
		_, _ = all.Write(sum[:])
		set.files[name] = &asset{
			body:        body,
			gzipped:     gzipped,
			contentType: []string{mime.TypeByExtension(path.Ext(name))},
			length:      []string{strconv.Itoa(len(body))},
		}
	}
	set.version = hex.EncodeToString(all.Sum(nil)[:8])
	return set, nil
})

var (
	immutable = []string{"public, max-age=31536000, immutable"}
	noCache   = []string{"no-cache"}
	gzipped   = []string{"gzip"}
	vary      = []string{"Accept-Encoding"}
)

// serve answers r with the file a. Asked for with the current version (?v=), it may be cached for
// a year: the page names another version when the file changes. A compressed file is sent as it
// is to a client that accepts gzip, and decompressed for any other.
func (s *assets) serve(w http.ResponseWriter, r *http.Request, a *asset) {
	h := w.Header()
	h["Content-Type"] = a.contentType
	h["X-Content-Type-Options"] = nosniff
	h["Cache-Control"] = noCache
	if r.URL.Query().Get("v") == s.version {
		h["Cache-Control"] = immutable
	}
	if a.gzipped {
		h["Vary"] = vary
	}
	if a.gzipped && !coding.AcceptsGzip(r) {
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_ = decompress(w, a.body) // a failed write means the client is gone
		}
		return
	}
	if a.gzipped {
		h["Content-Encoding"] = gzipped
	}
	h["Content-Length"] = a.length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}

// decompress writes the gzip-compressed body to w, decompressed.
func decompress(w io.Writer, body []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return err
	}
	_, err = io.Copy(w, zr)
	return err
}
