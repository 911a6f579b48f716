package settings

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// files are the page's templates, styles and script, in the binary.
//
//go:embed assets
var files embed.FS

// asset is a style sheet or script of the page, served under its content's hash.
type asset struct {
	hashed      string // its name with the first 16 hex digits of its SHA-256: style.<hash>.css
	contentType string
	data        []byte
}

var (
	assetsByName   = map[string]*asset{} // by plain name: style.css
	assetsByHashed = map[string]*asset{} // by hashed name, as requested
	pages          = template.Must(template.New("").Funcs(template.FuncMap{"when": when, "span": span, "copyable": copyable}).ParseFS(files, "assets/*.html"))
)

func init() {
	for _, name := range []string{"style.css", "copy.js"} {
		data, err := fs.ReadFile(files, "assets/"+name)
		if err != nil {
			panic(err) // the embedded files are part of the binary: a build without them is broken
		}
		sum := sha256.Sum256(data)
		ext := path.Ext(name)
		a := &asset{
			hashed:      strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:8]) + ext,
			contentType: mime.TypeByExtension(ext), data: data,
		}
		assetsByName[name], assetsByHashed[a.hashed] = a, a
	}
}

// copyable is the argument of the template "copyable": text in a read-only field with id,
// and, with JavaScript, a button labelled label that copies it.
func copyable(id string, rows int, text, label string) map[string]any {
	return map[string]any{"ID": id, "Rows": rows, "Text": text, "Label": label}
}

// asset answers an embedded file by its hashed name, to be kept a year: a new content is a new
// name.
func (p *Page) asset(w http.ResponseWriter, r *http.Request) {
	a, ok := assetsByHashed[r.PathValue("name")]
	if !ok {
		p.message(w, r, http.StatusNotFound, "notfound")
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Length", strconv.Itoa(len(a.data)))
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(a.data)
}
