package projections

import "github.com/opencarte/publisher/projections/dockey"

// SummaryJSON is the JSON form of a BundleSummary, the slug left out: how the projector keeps the
// summary a replay reached in the state of an establishment it lets go of, which the bucket does
// not hold yet. Its fields and their names are a stored format: changing them changes the state
// format of the runner.
type SummaryJSON struct {
	Revision int64                 `json:"revision"`
	Sequence uint64                `json:"sequence"`
	Base     int64                 `json:"ahead_of,omitempty"` // a day ahead's Base and Starts
	Starts   int64                 `json:"starts,omitempty"`
	Access   AccessJSON            `json:"access"`
	Docs     map[string]DigestJSON `json:"docs"`
}

// AccessJSON is the access fields of a SummaryJSON.
type AccessJSON struct {
	Status              string                     `json:"status"`
	APIEnabled          bool                       `json:"public_api_enabled"`
	KeyHash             string                     `json:"key_hash,omitempty"`
	MenuRedirectEnabled bool                       `json:"menu_redirect_enabled"`
	MasterMenuURL       string                     `json:"master_menu_url,omitempty"`
	Redirects           map[string]dockey.Redirect `json:"redirects,omitempty"`
}

// DigestJSON is one document of a SummaryJSON.
type DigestJSON struct {
	Digest uint64 `json:"digest"`
	Hashed bool   `json:"hashed"`
	ETag   string `json:"etag"`
}

// JSON returns the JSON form of s.
func (s *BundleSummary) JSON() *SummaryJSON {
	a := s.access
	j := &SummaryJSON{
		Revision: s.revision,
		Sequence: s.sequence,
		Base:     s.base,
		Starts:   s.starts,
		Access: AccessJSON{
			Status: a.Status, APIEnabled: a.APIEnabled, KeyHash: a.KeyHash,
			MenuRedirectEnabled: a.MenuRedirectEnabled, MasterMenuURL: a.MasterMenuURL, Redirects: a.Redirects,
		},
		Docs: make(map[string]DigestJSON, len(s.docs)),
	}
	for name, d := range s.docs {
		j.Docs[name] = DigestJSON{Digest: d.digest, Hashed: d.hashed, ETag: d.etag}
	}
	return j
}

// Summary returns the summary j is the JSON form of, of the establishment slug.
func (j *SummaryJSON) Summary(slug string) *BundleSummary {
	a := j.Access
	s := &BundleSummary{
		revision: j.Revision,
		sequence: j.Sequence,
		base:     j.Base,
		starts:   j.Starts,
		access: dockey.Bundle{
			Slug: slug, Status: a.Status, APIEnabled: a.APIEnabled, KeyHash: a.KeyHash,
			MenuRedirectEnabled: a.MenuRedirectEnabled, MasterMenuURL: a.MasterMenuURL, Redirects: a.Redirects,
		},
		docs: make(map[string]docSummary, len(j.Docs)),
	}
	for name, d := range j.Docs {
		s.docs[name] = docSummary{digest: d.Digest, hashed: d.Hashed, etag: d.ETag}
	}
	return s
}
