package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
)

// DefaultFileGrace is how long a stored file that nothing refers to is kept unless configured:
// long enough for a client to upload files and then import the documents that refer to them.
const DefaultFileGrace = 24 * time.Hour

// collectWorkers bounds the establishments a collection of files loads at once.
const collectWorkers = 8

// orphanAge is the least age of bytes no file describes before a collection removes them: far
// longer than a store takes to write its description after its bytes.
const orphanAge = time.Hour

// fileStore keeps uploaded files by name; *events.Files satisfies it.
type fileStore interface {
	Stat(ctx context.Context, name string) (events.FileInfo, error)
	PutNew(ctx context.Context, name, contentType string, data []byte) (events.FileInfo, bool, error)
	Touch(ctx context.Context, name string) error
	List(ctx context.Context) ([]events.FileInfo, error)
	RemoveUnchanged(ctx context.Context, fi events.FileInfo) (bool, error)
	RemoveOrphans(ctx context.Context, olderThan time.Time) (int, error)
}

// ErrFilesUnavailable means this process stores no files.
var ErrFilesUnavailable = errors.New("file uploads are not configured")

// File is a stored menu file.
type File struct {
	Digest      domain.FileDigest `json:"digest"`
	ContentType string            `json:"content_type"`
	Size        int64             `json:"size"`
	URL         string            `json:"url"`     // where the read API serves it
	Created     bool              `json:"created"` // false: the same bytes were stored already
}

// UploadFile checks data as a menu file and stores it, once for the same bytes. Nothing is
// stored for a refused file. The file is kept at least the file grace period; a document that
// refers to it, by its digest or its URL, keeps it as long as it does.
func (c *Commands) UploadFile(ctx context.Context, data []byte) (File, error) {
	if c.files == nil {
		return File{}, ErrFilesUnavailable
	}
	typ, err := domain.CheckMenuFile(data)
	if err != nil {
		return File{}, err
	}
	if err := c.roomFor(); err != nil {
		return File{}, err
	}
	d := domain.DigestOf(data)
	fi, created, err := c.files.PutNew(ctx, d.FileName(), typ, data)
	if err != nil {
		return File{}, c.writeFailed(err)
	}
	if !created {
		err := c.keep(ctx, fi)
		if errors.Is(err, events.ErrFileNotFound) {
			// Removed by a collection since it was found: stored again.
			fi, created, err = c.files.PutNew(ctx, d.FileName(), typ, data)
		}
		if err != nil {
			return File{}, unavailable(err)
		}
	}
	return File{Digest: d, ContentType: typ, Size: fi.Size, URL: c.FileURL(d), Created: created}, nil
}

// FileURL returns the public URL of the stored file d.
func (c *Commands) FileURL(d domain.FileDigest) string {
	return c.filesBase + domain.FilesPath + d.FileName()
}

// keep moves the modification time of a stored file forward when it is past half the grace
// period, so that a collection running now keeps it: a collection removes only files that were
// unreferenced and untouched for the whole grace period.
func (c *Commands) keep(ctx context.Context, fi events.FileInfo) error {
	if c.now().Sub(fi.Modified) < c.fileGrace/2 {
		return nil
	}
	if err := c.files.Touch(ctx, fi.Name); err != nil && !errors.Is(err, events.ErrFileNotFound) {
		return unavailable(err)
	} else if err != nil {
		return err
	}
	return nil
}

// SetMasterMenu sets the establishment's unified card to url, an external URL or the digest of
// a stored file, or removes it when url is nil.
func (c *Commands) SetMasterMenu(ctx context.Context, req Request, url *string) (Result, error) {
	if err := c.resolveFile(ctx, "master_menu_url", url); err != nil {
		return Result{}, err
	}
	return c.execute(ctx, req.as(domain.TypeMasterMenuChanged, ""), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.SetMasterMenu(url) })
}

// AddMenuAsset adds file a, last, to version id of menu type typ. Its URLs may be digests of
// stored files, or their URLs.
func (c *Commands) AddMenuAsset(ctx context.Context, req Request, typ, id domain.Slug, a domain.AssetInput) (Result, error) {
	a.URLs = slices.Clone(a.URLs)
	for k := range a.URLs {
		if err := c.resolveFile(ctx, fmt.Sprintf("urls[%d]", k), &a.URLs[k]); err != nil {
			return Result{}, err
		}
	}
	return c.execute(ctx, req.as(ActionAssetAdded, string(typ)+"/"+string(id)), userCommand, func(e *domain.Establishment) ([]domain.Event, error) { return e.AddMenuAsset(typ, id, a) })
}

// resolveFiles turns every reference to a stored file in snap (a digest, or the URL of a file
// of this service) into the file's URL, after checking that the file is stored. It looks each
// distinct reference up once, stops once its refusals are counted as far as the domain counts
// them, and stops at once when the store does not answer: a document repeating a reference tens
// of thousands of times costs one lookup.
func (c *Commands) resolveFiles(ctx context.Context, snap *domain.EstablishmentInput) error {
	r := refResolver{c: c, seen: map[string]resolved{}}
	r.resolve(ctx, "master_menu_url", snap.MasterMenuURL)
	for i := range snap.MenuTypes {
		for j := range snap.MenuTypes[i].Versions {
			r.version(ctx, fmt.Sprintf("menu_types[%d].versions[%d].", i, j), &snap.MenuTypes[i].Versions[j])
		}
	}
	return r.err()
}

// resolveVersionFiles is resolveFiles for the files of one version.
func (c *Commands) resolveVersionFiles(ctx context.Context, prefix string, v *domain.VersionInput) error {
	r := refResolver{c: c, seen: map[string]resolved{}}
	r.version(ctx, prefix, v)
	return r.err()
}

// refResolver resolves the file references of one command.
type refResolver struct {
	c      *Commands
	seen   map[string]resolved // each distinct reference resolved
	errs   domain.FieldErrorList
	failed error // a failure of the store, which ends the resolution
}

// resolved is what a reference became, or why it is refused.
type resolved struct {
	to  string
	err error
}

// done reports whether the resolution should stop: the store failed, or the refusals are
// counted as far as they are counted.
func (r *refResolver) done() bool { return r.failed != nil || r.errs.Full() }

func (r *refResolver) version(ctx context.Context, prefix string, v *domain.VersionInput) {
	for i := range v.Assets {
		for k := range v.Assets[i].URLs {
			if r.done() {
				return
			}
			r.resolve(ctx, fmt.Sprintf("%sassets[%d].urls[%d]", prefix, i, k), &v.Assets[i].URLs[k])
		}
	}
}

// resolve resolves *ref, once per distinct reference: a repeated one gets the first one's
// answer, its digest or its refusal.
func (r *refResolver) resolve(ctx context.Context, field string, ref *string) {
	if ref == nil || r.done() {
		return
	}
	res, ok := r.seen[*ref]
	if !ok {
		in := *ref
		res.err = r.c.resolveFile(ctx, field, ref)
		res.to = *ref
		r.seen[in] = res
	}
	*ref = res.to
	var fe *domain.FieldError
	switch {
	case res.err == nil:
	case errors.As(res.err, &fe):
		r.errs.Add(&domain.FieldError{Field: field, Reason: fe.Reason})
	default:
		r.failed = res.err
	}
}

func (r *refResolver) err() error {
	if r.failed != nil {
		return r.failed
	}
	return r.errs.Err()
}

// resolveFile checks a reference *ref to a stored file, by its digest or by a URL of a file of
// this service, and keeps the file: the log names uploaded files by their digests, and the
// documents show them under the read API's URL of the day. A digest, or a URL of a file under
// this service's base URL, must name a stored file, and becomes its digest (a URL with a query
// or a fragment is kept as it is). A URL of the same form under another host names a file of
// another service, or of this one under a base URL it no longer has: kept when stored, left as
// it is.
func (c *Commands) resolveFile(ctx context.Context, field string, ref *string) error {
	if ref == nil {
		return nil
	}
	var (
		d         domain.FileDigest
		own, bare bool
	)
	if strings.HasPrefix(*ref, "sha256:") {
		var err error
		if d, err = domain.ParseFileDigest(*ref); err != nil {
			return &domain.FieldError{Field: field, Reason: err.Error()}
		}
		own, bare = true, true
	} else {
		var (
			ok  bool
			err error
		)
		if d, ok = domain.FileOfURL(*ref); !ok {
			return nil // not a file's URL; the domain checks it as any other
		}
		if own, bare, err = c.ownFileURL(*ref, d); err != nil {
			return &domain.FieldError{Field: field, Reason: err.Error()}
		}
	}
	missing := &domain.FieldError{Field: field, Reason: fmt.Sprintf("no file %s is stored: upload it first", d)}
	if c.files == nil {
		if own {
			return &domain.FieldError{Field: field, Reason: "file uploads are not configured: give a URL"}
		}
		return nil
	}
	fi, err := c.files.Stat(ctx, d.FileName())
	if err == nil {
		err = c.keep(ctx, fi)
	}
	switch {
	case errors.Is(err, events.ErrFileNotFound) && own:
		return missing
	case errors.Is(err, events.ErrFileNotFound):
		return nil
	case err != nil:
		return unavailable(err)
	}
	if bare {
		*ref = string(d)
	}
	return nil
}

// ownFileURL says whether u, which names file d, is under this service's base URL (scheme and
// host compared as URLs compare them), and whether it is the file's URL exactly, without query
// or fragment. A URL under the base URL that names a file by another path (escaped, or with more
// segments) is refused: the read API would not find it.
func (c *Commands) ownFileURL(u string, d domain.FileDigest) (own, bare bool, err error) {
	parsed, err := url.Parse(u)
	if err != nil || c.base == nil || !strings.EqualFold(parsed.Scheme, c.base.Scheme) || hostPort(parsed) != hostPort(c.base) {
		return false, false, nil
	}
	want := strings.TrimRight(c.base.Path, "/") + domain.FilesPath + d.FileName()
	if parsed.Path != want || parsed.RawPath != "" {
		return true, false, fmt.Errorf("%q names file %s by another path than %s", u, d, want)
	}
	return true, parsed.RawQuery == "" && parsed.Fragment == "" && !parsed.ForceQuery, nil
}

// hostPort is the host of u in lower case, with its port unless it is its scheme's default.
func hostPort(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" || strings.EqualFold(u.Scheme, "http") && port == "80" || strings.EqualFold(u.Scheme, "https") && port == "443" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// FilesReport is the outcome of CollectFiles.
type FilesReport struct {
	Stored     int      `json:"stored"`     // files stored when the collection began
	Referenced int      `json:"referenced"` // of them, those an establishment refers to
	Young      int      `json:"young"`      // of the others, those kept for the grace period
	Removed    []string `json:"removed"`    // names of the files removed
	// Orphans counts the stored copies of bytes no file described any more, removed.
	Orphans int `json:"orphans"`
	// Late says that the collection stopped removing files because reading the establishments
	// took half the grace period or more.
	Late bool `json:"late,omitempty"`
}

// CollectFiles removes the stored files that no establishment refers to (by its unified card or
// any file of any version it holds, current, past or future) and that were stored or touched
// longer ago than the grace period. It never removes a referenced file: a command that refers to
// a file touches it when it is past half the grace period, and a file is removed only if its
// description is still the one read after the establishments were: a touch in between keeps it.
// It reads every establishment, a few at a time, and only when some file is past the grace
// period. It also removes the copies of bytes no file describes, past the grace period.
func (c *Commands) CollectFiles(ctx context.Context) (FilesReport, error) {
	if c.files == nil {
		return FilesReport{}, ErrFilesUnavailable
	}
	stored, err := c.files.List(ctx)
	if err != nil {
		return FilesReport{}, unavailable(err)
	}
	rep := FilesReport{Stored: len(stored), Removed: []string{}}
	if rep.Orphans, err = c.files.RemoveOrphans(ctx, c.now().Add(-max(c.fileGrace, orphanAge))); err != nil {
		// The files are collected all the same; the orphans wait for the next collection.
		c.logger.Warn("file collection: bytes no file describes not removed", "err", err)
	}
	old := make(map[string]bool)
	for _, fi := range stored {
		if c.now().Sub(fi.Modified) >= c.fileGrace {
			old[fi.Name] = true
		}
	}
	if len(old) == 0 {
		rep.Young = len(stored)
		return rep, nil
	}
	start := c.now()
	referenced, err := c.referencedFiles(ctx)
	if err != nil {
		return rep, err
	}
	for _, fi := range stored {
		switch {
		case referenced[fi.Name]:
			rep.Referenced++
		case !old[fi.Name]:
			rep.Young++
		case c.now().Sub(start) >= c.fileGrace/2:
			// A file referred to since the establishments were read may not have been touched
			// (it was younger than half the grace period): past that much time, removing it
			// could remove a referenced file. The next collection, faster or with a longer
			// grace period, takes it.
			rep.Young++
			rep.Late = true
		default:
			again, err := c.files.Stat(ctx, fi.Name)
			if errors.Is(err, events.ErrFileNotFound) {
				continue
			}
			if err != nil {
				return rep, unavailable(err)
			}
			if c.now().Sub(again.Modified) < c.fileGrace {
				rep.Young++
				continue
			}
			// Removed only if nothing touched it since it was read again: a command that refers
			// to it meanwhile either touched it first, and it stays, or finds it gone, and is
			// refused.
			removed, err := c.files.RemoveUnchanged(ctx, again)
			if err != nil {
				return rep, unavailable(err)
			}
			if !removed {
				rep.Young++
				continue
			}
			rep.Removed = append(rep.Removed, fi.Name)
		}
	}
	return rep, nil
}

// referencedFiles returns the names of the files some establishment refers to.
func (c *Commands) referencedFiles(ctx context.Context) (map[string]bool, error) {
	slugs, err := c.log.Slugs(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	var (
		mu         sync.Mutex
		referenced = make(map[string]bool)
		firstErr   error
		next       = make(chan string)
		wg         sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range collectWorkers {
		wg.Go(func() {
			for slug := range next {
				a, err := c.repo.load(ctx, domain.Slug(slug), nil)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("load %s: %w", slug, err)
					cancel()
				}
				if err == nil {
					for _, d := range a.est.Files() {
						referenced[d.FileName()] = true
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, slug := range slugs {
		if ctx.Err() != nil {
			break
		}
		next <- slug
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, unavailable(firstErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(err)
	}
	return referenced, nil
}

// CheckFileTarget says, before any file is read, whether files sent for establishment slug
// would have somewhere to go: the establishment exists and, unless typ is empty, has version id
// of menu type typ. Its refusals are those the command would give.
func (c *Commands) CheckFileTarget(ctx context.Context, slug, typ, id domain.Slug) error {
	defer c.locks.lock(slug)()
	a, err := c.repo.get(ctx, slug)
	if err != nil {
		return unavailable(err)
	}
	defer c.repo.put(a)
	if !a.est.Created {
		return fmt.Errorf("establishment %q: %w", slug, domain.ErrNotFound)
	}
	if typ == "" {
		return nil
	}
	mt, ok := a.est.MenuType(typ)
	if !ok {
		return fmt.Errorf("menu type %q: %w", typ, domain.ErrMenuTypeNotFound)
	}
	if !slices.ContainsFunc(mt.Versions, func(v domain.MenuVersion) bool { return v.ID == id }) {
		return fmt.Errorf("menu type %q version %q: %w", typ, id, domain.ErrMenuVersionNotFound)
	}
	return nil
}
