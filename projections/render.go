package projections

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/cespare/xxhash/v2"
	gojson "github.com/goccy/go-json"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
)

// Resource names, as listed in Change.Resources.
const (
	ResourceEstablishment = "establishment"
	ResourceHours         = "hours"
	ResourceMenus         = "menus"
)

// MenuResource returns the resource name of the detail of menu type slug: "menus/<slug>".
func MenuResource(slug string) string { return ResourceMenus + "/" + slug }

// Render returns the bundle of e with every document stamped with revision. It is a pure
// function: the same aggregate and revision always give the same bytes. The bundle of an
// establishment that is not active holds its access fields and no document: nothing of it is
// public, so that editing it changes no document, raises no revision and announces nothing, and
// its activation publishes every document at once, with one revision.
func Render(e *domain.Establishment, revision int64) dockey.Bundle {
	return render(e, nil).Bundle(revision)
}

// RenderRevision names the renderer: a projector does not resume from a checkpoint written under
// another, it replays the whole log and stores again every bundle whose bytes differ.
// TestRenderRevisionFollowsTheGoldens fails when the rendering of the golden establishments
// changes and this number does not.
const RenderRevision = 3

// RenderWith renders the public content of e, giving uploaded files their URLs under files (the
// public base URL of the read API), its documents encoded into s unless nil.
func RenderWith(e *domain.Establishment, files string, s *Scratch) Rendering {
	return render(withFileURLs(e, files), s)
}

// Rendering is the public content of one establishment, rendered, without its revision: every
// document as a template (none when it is not public), and the access fields. Stamping a revision into it is cheap, so that
// the projector renders once per record and compares documents at any revision.
type Rendering struct {
	access        dockey.Bundle // access fields only: no documents, no revision
	public        bool          // the documents below are rendered
	establishment template
	hours         template
	menus         variantTemplates
	details       map[string]variantTemplates // by menu type slug; nil when there is none
	jsonld        [2]fixedBody                // in French and in English
}

// fixedBody is a rendered document that holds no revision: its bytes are the same at every one.
type fixedBody []byte

// variantTemplates are the three renderings of one menu resource.
type variantTemplates struct {
	all, fr, en template
}

// render renders the public content of e: every document when it is active, none otherwise. The
// documents are encoded into s, unless nil (see Scratch).
func render(e *domain.Establishment, s *Scratch) Rendering {
	if e.Status != domain.StatusActive {
		return Rendering{access: accessOf(e, activeMenus(e))}
	}
	return renderAll(e, s)
}

// renderAll renders every document of e, whatever its status: what its bundle holds once it is
// active, and what the write side measures before accepting a change.
func renderAll(e *domain.Establishment, s *Scratch) Rendering {
	menus := withSections(activeMenus(e))
	c := Rendering{
		access:        accessOf(e, menus),
		public:        true,
		establishment: s.template(headWithLanguage, establishmentDoc(e)),
		hours:         s.template(headRevision, hoursDoc(e)),
	}
	for _, v := range allVariants {
		setVariant(&c.menus, v, s.template(headRevision, menuListDoc(e, menus, v)))
	}
	if len(menus) > 0 {
		c.details = make(map[string]variantTemplates, len(menus))
		for _, m := range menus {
			var vt variantTemplates
			for _, v := range allVariants {
				setVariant(&vt, v, s.template(headRevision, menuDetailDoc(m, v)))
			}
			c.details[string(m.Slug)] = vt
		}
	}
	fr, en := jsonldDocs(e, menus)
	c.jsonld = [2]fixedBody{s.encode(fr, true), s.encode(en, true)}
	return c
}

// Bundle stamps revision into every document of c.
func (c Rendering) Bundle(revision int64) dockey.Bundle {
	b := c.access
	b.Revision = revision
	if !c.public {
		return b
	}
	b.Establishment = c.establishment.stamp(revision)
	b.Hours = c.hours.stamp(revision)
	b.Menus = c.menus.stamp(revision)
	if c.details != nil {
		b.MenuDetails = make(map[string]dockey.Variants, len(c.details))
		for slug, vt := range c.details {
			b.MenuDetails[slug] = vt.stamp(revision)
		}
	}
	b.JSONLD = dockey.Localized{FR: c.jsonld[0].document(), EN: c.jsonld[1].document()}
	return b
}

// document returns a copy of f with its entity tag.
func (f fixedBody) document() dockey.Document {
	body := bytes.Clone([]byte(f))
	return dockey.Document{Body: body, ETag: ETag(body)}
}

func (vt variantTemplates) stamp(revision int64) dockey.Variants {
	return dockey.Variants{All: vt.all.stamp(revision), FR: vt.fr.stamp(revision), EN: vt.en.stamp(revision)}
}

func setVariant(vt *variantTemplates, v variant, t template) {
	switch v {
	case variantFR:
		vt.fr = t
	case variantEN:
		vt.en = t
	default:
		vt.all = t
	}
}

// The fixed beginnings of the documents, up to the revision number. The establishment resource
// starts with its language, every other one with content_revision.
const (
	headRevision     = `{"content_revision":`
	headWithLanguage = `{"language":"fr","content_revision":`
)

// template is a rendered document without its revision: its body is head, the revision in
// decimal, then tail.
type template struct {
	head string
	tail []byte // from the comma that follows the revision to the closing brace
}

// Scratch is where a replay encodes the documents of a rendering it only summarizes: one
// buffer, reused from one rendering to the next. A replay renders every record of the log to
// decide whether its documents changed, then drops the rendering (NextSummaryOver keeps digests, no
// bytes); encoding each document into a slice of its own would make that the largest part of the
// replay's garbage, a few gigabytes at a hundred thousand establishments. A Scratch serves one
// goroutine, and the templates of a rendering made with it hold until its next Reset.
//
// The buffer is only ever written: unread, it never slides its bytes down when it grows, so the
// templates made before a growth keep theirs in the array they were written to.
type Scratch struct {
	buf bytes.Buffer
	enc *gojson.Encoder
}

// Reset makes the whole buffer free for the next rendering; the caller holds no template of the
// earlier ones.
func (s *Scratch) Reset() {
	if s != nil {
		s.buf.Reset()
	}
}

// template encodes v, a struct holding the fields that follow content_revision in order, and
// returns the template of the document it makes: its bytes in s, or in a slice of their own when
// s is nil.
func (s *Scratch) template(head string, v any) template {
	return newTemplate(head, s.encode(v, false))
}

// encode returns the compact encoding of v (see encodeJSON), with the characters <, > and &
// escaped when html is set: in s, or in a slice of its own when s is nil.
func (s *Scratch) encode(v any, html bool) []byte {
	if s == nil {
		return encodeJSON(v, html)
	}
	if s.enc == nil {
		s.enc = gojson.NewEncoder(&s.buf)
	}
	start := s.buf.Len()
	var err error
	if html {
		err = s.enc.EncodeWithOption(v)
	} else {
		err = s.enc.EncodeWithOption(v, gojson.DisableHTMLEscape())
	}
	if err != nil {
		panic(fmt.Sprintf("projections: encode %T: %v", v, err))
	}
	b := s.buf.Bytes()
	end := len(b) - 1 // the encoder's newline left out
	return b[start:end:end]
}

// newTemplate returns the template of the document whose encoding is body, which it takes.
func newTemplate(head string, body []byte) template {
	if len(body) < 2 || body[0] != '{' || body[1] == '}' {
		panic(fmt.Sprintf("projections: document %.40q is not a non-empty object", body))
	}
	body[0] = ',' // the tail follows the revision: the encoding's own bytes, its brace replaced
	return template{head: head, tail: body}
}

func (t template) stamp(revision int64) dockey.Document {
	body := make([]byte, 0, len(t.head)+20+len(t.tail))
	body = append(body, t.head...)
	body = strconv.AppendInt(body, revision, 10)
	body = append(body, t.tail...)
	return dockey.Document{Body: body, ETag: ETag(body)}
}

// digest returns the xxhash of the body t.stamp makes with a revision written in decimal as
// number, without making it.
func (t *template) digest(number []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	_, _ = d.WriteString(t.head)
	_, _ = d.Write(number)
	_, _ = d.Write(t.tail)
	return d.Sum64()
}

// ETag returns the strong entity tag of a document body: its 64-bit xxhash as 16 lower-case hex
// digits, in double quotes.
func ETag(body []byte) string { return etagOf(xxhash.Sum64(body)) }

// etagOf returns the entity tag of a body whose xxhash is h.
func etagOf(h uint64) string {
	var b [18]byte
	b[0] = '"'
	const hexDigits = "0123456789abcdef"
	for i := 16; i >= 1; i-- {
		b[i] = hexDigits[h&0xf]
		h >>= 4
	}
	b[17] = '"'
	return string(b[:])
}

// encodeJSON returns, in a slice of its own, the compact encoding of v as encoding/json writes it,
// with no trailing newline and UTF-8 as it is; the characters <, > and & are escaped when html is
// set and written as they are otherwise. The encoder is goccy/go-json's, about twice as fast on
// documents, and the projector renders a whole log of them when it replays; FuzzDocumentEncoding
// checks that it writes what encoding/json does. The document types hold only strings, integers,
// booleans and finite floats, so encoding cannot fail; a failure is a programming error.
func encodeJSON(v any, html bool) []byte {
	var body []byte
	var err error
	if html {
		body, err = gojson.Marshal(v)
	} else {
		body, err = gojson.MarshalWithOption(v, gojson.DisableHTMLEscape())
	}
	if err != nil {
		panic(fmt.Sprintf("projections: encode %T: %v", v, err))
	}
	return body
}
