package admin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/domain"
)

// importPath is the batch import: many import documents in one request.
const importPath = "/admin/v1/import"

// Limits of a batch import.
const (
	// MaxBatchItems is the most documents one batch request may hold.
	MaxBatchItems = 1000
	// MaxBatchBytes bounds the body of a batch request.
	MaxBatchBytes = 64 << 20
	// DefaultBatchWorkers is how many documents of one batch are imported at once.
	DefaultBatchWorkers = 8
	// batchTimeout bounds the time to read and answer one batch.
	batchTimeout = 10 * time.Minute
)

// batchItem is the answer for one document of a batch: what a PUT of it alone would have
// answered, with its line number in the request body.
type batchItem struct {
	Line    int           `json:"line"`
	Slug    string        `json:"slug,omitempty"`
	Status  int           `json:"status"`
	Result  *app.Result   `json:"result,omitempty"`
	APIKey  domain.APIKey `json:"api_key,omitempty"`
	Error   string        `json:"error,omitempty"`
	Details []string      `json:"details,omitempty"`
}

// batchAnswer is the body of a batch import's answer. Error and Details are set when the body
// could not be read to its end: the results then cover the lines read before.
type batchAnswer struct {
	Error    string       `json:"error,omitempty"`
	Details  []string     `json:"details,omitempty"`
	Results  []*batchItem `json:"results"`
	Accepted int          `json:"accepted"`
	Refused  int          `json:"refused"`
}

// importBatch imports the documents of an NDJSON body, one per line (blank lines are skipped but
// counted), and answers 200 with one result per document, in line order, whether or not it was
// accepted: a bad line never stops the others. Under an Idempotency-Key, each line's command id
// derives from the key, the line number and the line, so a batch sent again is applied once.
func (a *API) importBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/x-ndjson" && mt != "application/jsonl" && mt != "application/json") {
			a.fail(w, r, errWantNDJSON)
			return
		}
	}
	// The body is read as its documents are imported, which takes longer than the server's
	// timeouts allow a plain request.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(batchTimeout))
	_ = rc.SetWriteDeadline(time.Now().Add(batchTimeout))
	key := r.Header.Get("Idempotency-Key")
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, MaxBatchBytes), 64<<10)

	var (
		mu     sync.Mutex
		answer batchAnswer
		wg     sync.WaitGroup
		jobs   = make(chan func())
	)
	for range a.cfg.BatchWorkers {
		wg.Go(func() {
			for job := range jobs {
				job()
			}
		})
	}
	lines := map[string]int{} // slug → line that gave it
	var readErr error
	for line := 1; ; line++ {
		data, tooLong, err := readLine(body, MaxBodyBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			readErr = err
			break
		}
		if len(bytes.TrimSpace(data)) > 0 || tooLong {
			if len(answer.Results) == MaxBatchItems {
				readErr = errTooManyItems
				break
			}
			item := &batchItem{Line: line}
			answer.Results = append(answer.Results, item)
			if job := a.batchJob(r, item, data, tooLong, key, lines, &mu); job != nil {
				jobs <- job
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	close(jobs)
	wg.Wait()

	if answer.Results == nil {
		answer.Results = []*batchItem{}
	}
	for _, it := range answer.Results {
		if it.Status < 300 {
			answer.Accepted++
		} else {
			answer.Refused++
		}
	}
	// A body cut short still had its complete lines imported: their results, keys included, are
	// answered with the error, since a key is shown once.
	status := http.StatusOK
	if readErr != nil {
		status, answer.Error, answer.Details = a.refusal(r, batchReadError(readErr))
	}
	writeJSON(w, status, answer)
}

// Refusals of a batch.
var (
	errWantNDJSON   = &app.Refusal{Kind: app.KindUnsupported, Err: errors.New("Content-Type: want application/x-ndjson")}
	errTooManyItems = errors.New("too many documents")
)

// batchReadError is the refusal of a batch whose body could not be read to its end, answered
// with the results of the lines read before.
func batchReadError(err error) error {
	switch {
	case errors.Is(err, errTooManyItems):
		return &app.Refusal{Kind: app.KindBodyTooLarge, Err: fmt.Errorf("body: at most %d documents per request; the first %d were imported, the rest were not read", MaxBatchItems, MaxBatchItems)}
	case errors.As(err, new(*http.MaxBytesError)):
		return &app.Refusal{Kind: app.KindBodyTooLarge, Err: fmt.Errorf("body: at most %d bytes per request; the complete lines before were imported, the rest were not read", MaxBatchBytes)}
	}
	return malformed(fmt.Errorf("body: %w; the complete lines before were imported", err))
}

// batchJob decodes one line into item and returns the import to run, or nil when the line was
// refused before any command (item then says why).
func (a *API) batchJob(r *http.Request, item *batchItem, data []byte, tooLong bool, key string, lines map[string]int, mu *sync.Mutex) func() {
	refuse := func(err error) func() {
		item.Status, item.Error, item.Details = a.refusal(r, err)
		return nil
	}
	if tooLong {
		return refuse(&app.Refusal{Kind: app.KindBodyTooLarge, Err: fmt.Errorf("line: at most %d bytes", MaxBodyBytes)})
	}
	var snap domain.EstablishmentInput
	if err := decodeDocument(data, &snap); err != nil {
		return refuse(malformed(err))
	}
	item.Slug = snap.Slug
	slug, err := domain.ParseSlug(snap.Slug)
	if err != nil {
		return refuse(invalid(fmt.Errorf("slug: %w", err)))
	}
	if first, seen := lines[snap.Slug]; seen {
		return refuse(invalid(fmt.Errorf("slug: %q is already given on line %d of this request", snap.Slug, first)))
	}
	lines[snap.Slug] = item.Line
	req := app.Request{Slug: slug}
	if key != "" {
		req.CommandID = app.KeyedCommandID(r.Method+"\x00"+r.URL.Path+"\x00"+key+"\x00"+strconv.Itoa(item.Line), data)
	}
	return func() {
		res, err := a.cfg.Commands.Import(r.Context(), req, snap)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			item.Status, item.Error, item.Details = a.refusal(r, err)
			return
		}
		item.Status, item.Result, item.APIKey = http.StatusOK, &res.Result, res.APIKey
		if res.Created {
			item.Status = http.StatusCreated
		}
	}
}

// readLine reads one line of at most limit bytes, without its end. A longer line is read to its
// end and dropped: tooLong is then true and data empty.
func readLine(r *bufio.Reader, limit int) (data []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(data)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > limit {
				tooLong, data = true, nil
			} else {
				data = append(data, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(data, []byte("\n")), tooLong, err
	}
}
