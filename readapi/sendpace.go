package readapi

import (
	"io"
	"net/http"
	"os"
	"time"
)

// The pace a client must take a file at. A client that stops reading would otherwise hold its
// turn, and the memory of its file, for as long as the whole file may take. Two deadlines bound
// it: the write of each chunk must end within sendGrace plus the chunk's size at minSendRate,
// so that a client that stops is cut within 14 s of the socket buffers between it and the
// server filling up, and its turn goes to another; the whole file must be sent within sendBase
// plus its size at minSendRate, which holds a client that takes a chunk now and then, just in
// time, to that rate on average.
const (
	// minSendRate, 16 KiB/s (128 kbit/s), is a poor mobile link: a client taking the file at
	// 32 kB/s, twice that, gets it whole. The whole file may take sendBase plus its size at
	// that rate: 30 s and 10 min 10 s for a file of 10 MB, the largest stored.
	minSendRate = 16 << 10
	sendBase    = 30 * time.Second
	// sendChunk is what each write sends at most, 4 s at the minimum rate: small enough to
	// notice a stop within seconds, large enough that sendfile(2) moves 16 pages at a call.
	sendChunk = 64 << 10
	// sendGrace is the time a chunk may take beyond its size at the minimum rate. The kernel
	// lets a writer blocked on a full send buffer go on once a third of the buffer is free,
	// which can take a few seconds at a slow client's rate (a third of 400 KiB at 32 kB/s is
	// 4 s); a lost segment costs a retransmission timeout of a second or more, doubling.
	sendGrace = 10 * time.Second
	// copyBuffer is the buffer of a file sent from bytes in memory or from the store: one
	// per request being answered.
	copyBuffer = 32 << 10
)

// sendPace is how fast a client must take a file: the constants above, shorter in tests.
type sendPace struct {
	base  time.Duration // the time a file may take beyond its size at rate
	grace time.Duration // the time a chunk may take beyond its size at rate
	rate  int64         // bytes a second
}

var defaultPace = sendPace{base: sendBase, grace: sendGrace, rate: minSendRate}

// sizeTime is the time n bytes take at the pace's rate.
func (p sendPace) sizeTime(n int64) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(p.rate)
}

// writer returns w sending a body of size bytes at pace p.
func (p sendPace) writer(w http.ResponseWriter, size int64) *pacedWriter {
	return &pacedWriter{
		ResponseWriter: w, rc: http.NewResponseController(w), pace: p,
		end: time.Now().Add(p.base + p.sizeTime(size)),
	}
}

// pacedWriter is a ResponseWriter that writes a body in chunks, setting the connection's write
// deadline before each: to the chunk's share of time at the pace, never past the deadline of the
// whole body.
type pacedWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	pace sendPace
	end  time.Time
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *pacedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// due sets the write deadline of the next n bytes.
func (w *pacedWriter) due(n int) {
	d := time.Now().Add(w.pace.grace + w.pace.sizeTime(int64(n)))
	if d.After(w.end) {
		d = w.end
	}
	// Without deadlines (a writer that is no connection's), the body is written unpaced.
	_ = w.rc.SetWriteDeadline(d)
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), sendChunk)]
		w.due(len(chunk))
		n, err := w.ResponseWriter.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// ReadFrom writes the bytes of src, as http.ServeContent sends a body: through io.CopyN, so src is
// an *io.LimitedReader. The bytes of a file are sent a chunk at a time with sendfile(2): net
// sends a file with it when given the file, or one io.LimitedReader of the file, not two, so the
// chunks are limited readers of the file itself. Other bytes are copied through a buffer.
func (w *pacedWriter) ReadFrom(src io.Reader) (int64, error) {
	limit := int64(-1) // none
	lr, limited := src.(*io.LimitedReader)
	if limited {
		src, limit = lr.R, lr.N
	}
	var n int64
	var err error
	if f, ok := src.(*os.File); ok {
		n, err = w.sendFile(f, limit)
	} else {
		if limited {
			src = io.LimitReader(src, limit)
		}
		n, err = io.CopyBuffer(writerOnly{w}, src, make([]byte, copyBuffer))
	}
	if limited {
		lr.N -= n
	}
	return n, err
}

// sendFile writes limit bytes of f (all of them, for a negative limit) a chunk at a time.
func (w *pacedWriter) sendFile(f *os.File, limit int64) (int64, error) {
	var n int64
	lr := &io.LimitedReader{R: f}
	for limit < 0 || n < limit {
		chunk := int64(sendChunk)
		if limit >= 0 {
			chunk = min(chunk, limit-n)
		}
		w.due(int(chunk))
		lr.N = chunk
		sent, err := io.Copy(w.ResponseWriter, lr)
		n += sent
		switch {
		case err != nil:
			return n, err
		case sent < chunk:
			return n, nil // the end of the file
		}
	}
	return n, nil
}

// writerOnly hides the ReadFrom of a writer from io.Copy.
type writerOnly struct{ io.Writer }
