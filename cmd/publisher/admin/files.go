package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// filesPath is where files are uploaded.
const filesPath = "/admin/v1/files"

// maxAssetPages bounds the files of one upload: the pages of one menu file.
const maxAssetPages = 50

// maxUploadBody bounds the body of an upload: its pages and the multipart framing around them.
const maxUploadBody = maxAssetPages * (domain.MaxMenuFileBytes + 64<<10)

// DefaultUploads is how many uploaded files are read and stored at once unless configured: each
// has a buffer of domain.MaxMenuFileBytes (and a byte), made when first needed and kept.
const DefaultUploads = 4

// uploadScopeKey carries the idempotency scope of an upload, whose command id is derived from the
// digests of its files once they are read, not from its whole body read up front.
type uploadScopeKey struct{}

// uploadTimeout bounds the reading of an upload's body and its answer: 10 MB at about 17 kB/s.
const uploadTimeout = 10 * time.Minute

// isUpload says whether r sends files, whose idempotency key is resolved by their handler: a
// POST to the files or to a version's assets, or a PUT of the unified card with a body that is
// not JSON.
func isUpload(r *http.Request) bool {
	seg := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	est := len(seg) >= 4 && seg[0] == "admin" && seg[1] == "v1" && seg[2] == "establishments"
	switch {
	case r.Method == http.MethodPost && r.URL.Path == filesPath:
		return true
	case r.Method == http.MethodPost && est && len(seg) == 9 && seg[4] == "menu-types" && seg[6] == "versions" && seg[8] == "assets":
		return true
	case r.Method == http.MethodPut && est && len(seg) == 5 && seg[4] == "master-menu":
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		return mt != "application/json"
	}
	return false
}

// uploadRequest is request for an upload: its command id, under an idempotency key, is derived
// from the key's scope, the language scope asked for and the digests of the files, which name
// the files' bytes exactly.
func uploadRequest(r *http.Request, slug domain.Slug, files []app.File) app.Request {
	scope, ok := r.Context().Value(uploadScopeKey{}).(string)
	if !ok {
		return app.Request{Slug: slug}
	}
	var body strings.Builder
	body.WriteString(r.URL.Query().Get("language_scope"))
	for _, f := range files {
		body.WriteString("\n" + string(f.Digest))
	}
	return app.Request{Slug: slug, CommandID: app.KeyedCommandID(scope, []byte(body.String()))}
}

// errBodyCut means an upload's body ended before it was whole, or came too slowly.
var errBodyCut = errors.New("body: the upload was cut off or too slow")

// Refusals of an upload before any of its files is stored.
var (
	errUploadTooLarge = &app.Refusal{Kind: app.KindTooLarge, Err: fmt.Errorf("body: at most %d bytes in one upload", maxUploadBody)}
	errNoBoundary     = malformed(errors.New("Content-Type: multipart/form-data without a boundary"))
)

// Refusals of an upload's multipart framing, each answered 400 with its text.
var (
	errPartHeaderTooLarge  = errors.New("body: a multipart part's header is too large")
	errPartHeaderMalformed = errors.New("body: a multipart part's header is malformed")
	errMultipartUnclosed   = errors.New("body: the multipart body ends before its closing boundary")
	errMultipartMalformed  = errors.New("body: the multipart body has a line that is neither a part nor a boundary")
	framingRefusals        = []error{errPartHeaderTooLarge, errPartHeaderMalformed, errMultipartUnclosed, errMultipartMalformed}
)

// readFiles reads the files of an upload one at a time and passes each to store before reading
// the next, so that an upload costs one file of memory: the whole body as one file, or each file
// part of a multipart/form-data body (a part with a file name, or named "file"). The content
// type a client gives a file is ignored: its content decides. It returns the files stored, or
// has answered the request.
func (a *API) readFiles(w http.ResponseWriter, r *http.Request, maxFiles int) ([]app.File, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(uploadTimeout))
	_ = rc.SetWriteDeadline(time.Now().Add(uploadTimeout + 30*time.Second))
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	multi := mt == "multipart/form-data"
	if !multi && r.ContentLength > domain.MaxMenuFileBytes || r.ContentLength > maxUploadBody {
		a.fail(w, r, fmt.Errorf("file: %d bytes: %w", r.ContentLength, domain.ErrFileTooLarge))
		return nil, false
	}
	body := http.MaxBytesReader(w, r.Body, maxUploadBody)
	var files []app.File
	field := func() string {
		if maxFiles == 1 {
			return "file"
		}
		return fmt.Sprintf("files[%d]", len(files))
	}
	store := func(part io.Reader) bool {
		if len(files) == maxFiles {
			a.fail(w, r, &domain.FieldError{Field: "files", Reason: fmt.Sprintf("at most %d in one upload", maxFiles)})
			return false
		}
		f, err := a.storeFile(r.Context(), part)
		if err != nil {
			a.failRead(w, r, field(), err)
			return false
		}
		files = append(files, f)
		return true
	}
	if !multi {
		return files, store(body)
	}
	if params["boundary"] == "" {
		a.fail(w, r, errNoBoundary)
		return nil, false
	}
	r.Body = body
	mr, err := r.MultipartReader()
	if err != nil {
		a.fail(w, r, malformed(fmt.Errorf("body: %w", err)))
		return nil, false
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF { // the closing boundary: a body that ends before it is io.EOF wrapped
			break
		}
		if err != nil {
			a.failRead(w, r, "body", framingError(err))
			return nil, false
		}
		if part.FileName() == "" && part.FormName() != "file" {
			continue
		}
		if !store(part) {
			return nil, false
		}
	}
	if len(files) == 0 {
		a.fail(w, r, &domain.FieldError{Field: "file", Reason: `none in the request (a part with a file name, or named "file")`})
		return nil, false
	}
	return files, true
}

// framingError is what an error of multipart.Reader.NextPart says about the body: a failure to
// read it (too large, too slow) as it is, and anything else as the refusal of the client's bytes
// it can only be.
func framingError(err error) error {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	var malformed textproto.ProtocolError
	switch {
	case errors.As(err, &tooLarge), errors.As(err, &netErr) && netErr.Timeout():
		return err
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &netErr):
		return fmt.Errorf("%w: %w", errBodyCut, err)
	case errors.Is(err, multipart.ErrMessageTooLarge):
		return fmt.Errorf("%w: %w", errPartHeaderTooLarge, err)
	case errors.As(err, &malformed):
		return fmt.Errorf("%w: %w", errPartHeaderMalformed, err)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %w", errMultipartUnclosed, err)
	}
	return fmt.Errorf("%w: %w", errMultipartMalformed, err)
}

// failRead answers an upload whose file named field could not be read or was refused: a body
// that could not be read whole as the body's refusal, a file's own refusal under its field.
func (a *API) failRead(w http.ResponseWriter, r *http.Request, field string, err error) {
	if refusal := bodyRefusal(err); refusal != nil {
		a.fail(w, r, refusal)
		return
	}
	status, text, details := a.refusal(r, err)
	for i := range details {
		details[i] = field + ": " + details[i]
	}
	writeError(w, status, text, details)
}

// bodyRefusal is the refusal of an upload whose body could not be read whole, by what cut it:
// its multipart framing, its size, its pace or its end. It is nil when err is none of these.
func bodyRefusal(err error) error {
	for _, refusal := range framingRefusals {
		if errors.Is(err, refusal) {
			return malformed(refusal)
		}
	}
	var netErr net.Error
	switch {
	case errors.As(err, new(*http.MaxBytesError)):
		return errUploadTooLarge
	case errors.As(err, &netErr) && netErr.Timeout():
		return &app.Refusal{Kind: app.KindTimeout, Err: errBodyCut}
	case errors.Is(err, errBodyCut), errors.Is(err, io.ErrUnexpectedEOF):
		return malformed(errBodyCut)
	}
	return nil
}

// storeFile reads one file, at most one byte over the limit, into a buffer of its own, and
// stores it. The buffers are the turns of the uploads: a few files are read at once, each in a
// buffer made once and used again.
func (a *API) storeFile(ctx context.Context, r io.Reader) (app.File, error) {
	var buf []byte
	select {
	case buf = <-a.uploads:
	case <-ctx.Done():
		return app.File{}, ctx.Err()
	}
	if buf == nil {
		buf = make([]byte, domain.MaxMenuFileBytes+1)
	}
	defer func() { a.uploads <- buf }()
	n, err := fill(r, buf)
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case n == len(buf):
		return app.File{}, fmt.Errorf("more than %d bytes: %w", domain.MaxMenuFileBytes, domain.ErrFileTooLarge)
	case errors.Is(err, io.EOF):
		// the whole file, shorter than the buffer
	case errors.As(err, &tooLarge), errors.As(err, &netErr) && netErr.Timeout():
		return app.File{}, err
	default:
		// io.ErrUnexpectedEOF (the body, or the part, ended early), a connection reset, a
		// malformed chunk or quoted-printable encoding: the file is not whole.
		return app.File{}, fmt.Errorf("%w: %w", errBodyCut, err)
	}
	return a.cfg.Commands.UploadFile(ctx, buf[:n])
}

// fill reads r into buf until buf is full or r fails, and returns r's own error, which io.ReadFull
// would not: a file that ended (io.EOF) and a body cut off (io.ErrUnexpectedEOF) would both end
// it early with io.ErrUnexpectedEOF.
func fill(r io.Reader, buf []byte) (n int, err error) {
	for n < len(buf) && err == nil {
		var k int
		k, err = r.Read(buf[n:])
		n += k
	}
	return n, err
}

// uploadFile serves POST /admin/v1/files: the file is stored, once for the same bytes, and
// described; nothing refers to it until a document does, by its digest or its URL.
func (a *API) uploadFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	files, ok := a.readFiles(w, r, 1)
	if !ok {
		return
	}
	status := http.StatusOK
	if files[0].Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, files[0])
}

// putMasterMenu serves PUT .../master-menu: a file, which becomes the unified card, or a JSON
// body {"url": ...} naming an external URL, the digest of a stored file, or null for none.
func (a *API) putMasterMenu(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	if !isUpload(r) {
		var in struct {
			URL *string `json:"url"`
		}
		req, ok := a.request(w, r, ps)
		if !ok || !a.decode(w, r, &in) {
			return
		}
		res, err := a.cfg.Commands.SetMasterMenu(r.Context(), req, in.URL)
		a.answer(w, r, res, err)
		return
	}
	if err := a.cfg.Commands.CheckFileTarget(r.Context(), slug, "", ""); err != nil {
		a.fail(w, r, err)
		return
	}
	files, ok := a.readFiles(w, r, 1)
	if !ok {
		return
	}
	digest := string(files[0].Digest)
	res, err := a.cfg.Commands.SetMasterMenu(r.Context(), uploadRequest(r, slug, files), &digest)
	a.answerFiles(w, r, res, files, err)
}

// deleteMasterMenu serves DELETE .../master-menu: the establishment has no unified card anymore.
func (a *API) deleteMasterMenu(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if req, ok := a.request(w, r, ps); ok {
		res, err := a.cfg.Commands.SetMasterMenu(r.Context(), req, nil)
		a.answer(w, r, res, err)
	}
}

// addAsset serves POST .../menu-types/:menu_type/versions/:version/assets?language_scope=...:
// the files of the body, in order, become the pages of one new file of the version.
func (a *API) addAsset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := a.pathSlug(w, r, ps, "slug")
	if !ok {
		return
	}
	typ, version, ok := a.versionPath(w, r, ps)
	if !ok {
		return
	}
	scope := r.URL.Query().Get("language_scope")
	if scope == "" {
		a.fail(w, r, &domain.FieldError{Field: "language_scope", Reason: "required query parameter (fr, en or fr_en)"})
		return
	}
	if _, err := domain.ParseLanguageScope(scope); err != nil {
		a.fail(w, r, invalid(err))
		return
	}
	if err := a.cfg.Commands.CheckFileTarget(r.Context(), slug, typ, version); err != nil {
		a.fail(w, r, err)
		return
	}
	files, ok := a.readFiles(w, r, maxAssetPages)
	if !ok {
		return
	}
	urls := make([]string, len(files))
	for i, f := range files {
		urls[i] = string(f.Digest)
	}
	res, err := a.cfg.Commands.AddMenuAsset(r.Context(), uploadRequest(r, slug, files), typ, version, domain.AssetInput{LanguageScope: scope, URLs: urls})
	a.answerFiles(w, r, res, files, err)
}

// answerFiles is the answer to a command made with uploaded files: its result and the files.
func (a *API) answerFiles(w http.ResponseWriter, r *http.Request, res app.Result, files []app.File, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.respond(w, r, http.StatusOK, res, map[string]any{"result": res, "files": files})
}

// collectFiles serves POST /admin/v1/files/collect: the stored files nothing refers to, past
// their grace period, are removed.
func (a *API) collectFiles(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	rep, err := a.cfg.Commands.CollectFiles(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}
