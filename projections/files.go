package projections

import (
	"slices"
	"strings"

	"github.com/opencarte/publisher/domain"
)

// withFileURLs returns e with every reference to an uploaded file by its digest replaced by the
// file's URL on the read API: base (its public base URL), domain.FilesPath and the file's name.
// It returns e itself when it refers to no file by digest, and never changes e: the log keeps
// digests, and the documents say where the files are served today.
func withFileURLs(e *domain.Establishment, base string) *domain.Establishment {
	if !refersByDigest(e) {
		return e
	}
	base = strings.TrimRight(base, "/")
	resolve := func(ref string) string {
		if d, err := domain.ParseFileDigest(ref); err == nil {
			return base + domain.FilesPath + d.FileName()
		}
		return ref
	}
	out := *e
	if e.MasterMenuURL != nil {
		u := resolve(*e.MasterMenuURL)
		out.MasterMenuURL = &u
	}
	out.MenuTypes = slices.Clone(e.MenuTypes)
	for i := range out.MenuTypes {
		mt := &out.MenuTypes[i]
		mt.Versions = slices.Clone(mt.Versions)
		for j := range mt.Versions {
			v := &mt.Versions[j]
			v.Assets = slices.Clone(v.Assets)
			for k := range v.Assets {
				a := &v.Assets[k]
				urls := make([]string, len(a.URLs))
				for n, u := range a.URLs {
					urls[n] = resolve(u)
				}
				a.URLs = urls
			}
		}
	}
	return &out
}

// refersByDigest says whether e names a file by its digest anywhere.
func refersByDigest(e *domain.Establishment) bool {
	isDigest := func(ref string) bool { return strings.HasPrefix(ref, "sha256:") }
	if e.MasterMenuURL != nil && isDigest(*e.MasterMenuURL) {
		return true
	}
	for _, mt := range e.MenuTypes {
		for _, v := range mt.Versions {
			for _, a := range v.Assets {
				if slices.ContainsFunc(a.URLs, isDigest) {
					return true
				}
			}
		}
	}
	return false
}
