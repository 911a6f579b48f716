package readapi

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// testPace is a pace fast enough for the tests to end in seconds, with a grace that a busy
// machine leaves to the server.
var testPace = sendPace{base: 30 * time.Second, grace: 5 * time.Second, rate: 512 << 10}

// TestClientThatStopsReadingIsCut asks for a file larger than the socket buffers take in and
// never reads it: the server cuts the connection and gives the turn back long before the time
// the whole file may take.
func TestClientThatStopsReadingIsCut(t *testing.T) {
	data, file := storedFile(9 << 20)
	const cutWithin = 20 * time.Second
	if whole := testPace.base + testPace.sizeTime(int64(len(data))); whole < 2*cutWithin {
		t.Fatalf("the whole file may take %v: too little to tell a cut by the pace from its end", whole)
	}
	for _, tc := range fileCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, addr := startFileServer(t, &fakeFiles{files: map[string][]byte{file: data}}, tc.cacheBytes, testPace)
			conn := stalledGet(t, addr, "127.0.0.2", "/files/"+file)
			awaitTurns(t, s, 1, 5*time.Second)
			awaitTurns(t, s, 0, cutWithin)
			// Cut, the connection ends once what the socket buffers held is read.
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, conn)
			if n >= int64(len(data)) {
				t.Errorf("read %d bytes (%v) from a connection cut, want fewer than the file's %d", n, err, len(data))
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("after %d bytes: the connection is still open", n)
			}
			tc.check(t, s, file)
		})
	}
}

// TestSlowReaderGetsTheWholeFile reads a file at twice the minimum rate, with a deadline for the
// whole file of little more than its size at that rate: slow, but steady, it is given the whole
// file.
func TestSlowReaderGetsTheWholeFile(t *testing.T) {
	data, file := storedFile(6 << 20)
	pace := testPace
	pace.base = time.Second
	for _, tc := range fileCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, addr := startFileServer(t, &fakeFiles{files: map[string][]byte{file: data}}, tc.cacheBytes, pace)
			getWhole(t, clientFrom("127.0.0.2"), addr, file, len(data), 2*pace.rate)
			tc.check(t, s, file)
		})
	}
}
