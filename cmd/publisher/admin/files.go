package admin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

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
// costs up to domain.MaxMenuFileBytes of memory while it is checked and stored.
const DefaultUploads = 4

// uploadScopeKey carries the idempotency scope of an upload, whose command id is derived from the
// digests of its files once they are read, not from its whole body read up front.
type uploadScopeKey struct{}

// isUpload says whether r sends files, whose idempotency key is resolved by their handler.
func isUpload(r *http.Request) bool {
	switch {
	case r.URL.Path == filesPath, strings.HasSuffix(r.URL.Path, "/assets"):
		return true
	case strings.HasSuffix(r.URL.Path, "/master-menu") && r.Method == http.MethodPut:
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		return mt != "application/json"
	}
	return false
}

// uploadRequest is request for an upload: its command id, under an idempotency key, is derived
// from the key's scope and the digests of the files, which name the files' bytes exactly.
func uploadRequest(r *http.Request, slug domain.Slug, files []app.File) app.Request {
	scope, ok := r.Context().Value(uploadScopeKey{}).(string)
	if !ok {
		return app.Request{Slug: slug}
	}
	var body strings.Builder
	body.WriteString(r.URL.RawQuery)
	for _, f := range files {
		body.WriteString("\n" + string(f.Digest))
	}
	return app.Request{Slug: slug, CommandID: app.KeyedCommandID(scope, []byte(body.String()))}
}

// readFiles reads the files of an upload one at a time and passes each to store before reading
// the next, so that an upload costs one file of memory: the whole body as one file, or each file
// part of a multipart/form-data body (a part with a file name, or named "file"). The content
// type a client gives a file is ignored: its content decides. It returns the files stored, or
// has answered the request.
func (a *API) readFiles(w http.ResponseWriter, r *http.Request, maxFiles int) ([]app.File, bool) {
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
			writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{fmt.Sprintf("files: at most %d in one upload", maxFiles)})
			return false
		}
		f, err := a.storeFile(r.Context(), part)
		if err != nil {
			status, text, details := a.refusal(r, err)
			for i := range details {
				details[i] = field() + ": " + details[i]
			}
			writeError(w, status, text, details)
			return false
		}
		files = append(files, f)
		return true
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return files, store(body)
	}
	if params["boundary"] == "" {
		writeError(w, http.StatusBadRequest, "Bad request", []string{"Content-Type: multipart/form-data without a boundary"})
		return nil, false
	}
	r.Body = body
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad request", []string{"body: " + err.Error()})
		return nil, false
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "Bad request", []string{"body: " + err.Error()})
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
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{`file: none in the request (a part with a file name, or named "file")`})
		return nil, false
	}
	return files, true
}

// storeFile reads one file, at most one byte over the limit, and stores it, a few at a time.
func (a *API) storeFile(ctx context.Context, r io.Reader) (app.File, error) {
	select {
	case a.uploads <- struct{}{}:
	case <-ctx.Done():
		return app.File{}, ctx.Err()
	}
	defer func() { <-a.uploads }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(r, domain.MaxMenuFileBytes+1)); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return app.File{}, fmt.Errorf("request body: %w", domain.ErrFileTooLarge)
		}
		return app.File{}, fmt.Errorf("%w: body: %w", app.ErrInvalid, err)
	}
	if buf.Len() > domain.MaxMenuFileBytes {
		return app.File{}, fmt.Errorf("more than %d bytes: %w", domain.MaxMenuFileBytes, domain.ErrFileTooLarge)
	}
	return a.cfg.Commands.UploadFile(ctx, buf.Bytes())
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
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	if !isUpload(r) {
		var in struct {
			URL *string `json:"url"`
		}
		req, ok := request(w, r, ps)
		if !ok || !decodeBody(w, r, &in) {
			return
		}
		res, err := a.cfg.Commands.SetMasterMenu(r.Context(), req, in.URL)
		a.answer(w, r, res, err)
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
	if req, ok := request(w, r, ps); ok {
		res, err := a.cfg.Commands.SetMasterMenu(r.Context(), req, nil)
		a.answer(w, r, res, err)
	}
}

// addAsset serves POST .../menu-types/:menu_type/versions/:version/assets?language_scope=...:
// the files of the body, in order, become the pages of one new file of the version.
func (a *API) addAsset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	slug, ok := pathSlug(w, ps, "slug")
	if !ok {
		return
	}
	typ, ok := pathSlug(w, ps, "menu_type")
	if !ok {
		return
	}
	version, ok := pathSlug(w, ps, "version")
	if !ok {
		return
	}
	scope := r.URL.Query().Get("language_scope")
	if scope == "" {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{"language_scope: required query parameter (fr, en or fr_en)"})
		return
	}
	if _, err := domain.ParseLanguageScope(scope); err != nil {
		writeError(w, http.StatusUnprocessableEntity, "Unprocessable entity", []string{err.Error()})
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
