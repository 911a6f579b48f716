package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Each later pass gets back, in order, the records written for it since the last reset, whether it
// has a file of its own or shares one, and nothing is left in the directory.
func TestSpillGivesBackWhatEachPassWasGiven(t *testing.T) {
	for _, passes := range []int{3, maxSpillFiles + 6} {
		t.Run(fmt.Sprint(passes, " passes"), func(t *testing.T) {
			dir := t.TempDir()
			sp, err := newSpill(dir, passes)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%d files left in the directory while the replay runs, want none", len(left))
			}
			if len(sp.files) != min(passes-1, maxSpillFiles) {
				t.Errorf("%d files for %d passes", len(sp.files), passes)
			}
			const n = 3000
			passOf := func(i int) int { return 1 + i%(passes-1) }
			write := func(round string) {
				for i := range n {
					sp.add(passOf(i), fmt.Sprintf("e-%d", i), uint64(i+1), []byte(round+fmt.Sprint(i)))
				}
				if err := sp.flush(); err != nil {
					t.Fatal(err)
				}
			}
			write("first ")
			// A first pass made again writes its files anew.
			if err := sp.reset(); err != nil {
				t.Fatal(err)
			}
			write("again ")
			for pass := 1; pass < passes; pass++ {
				keep := func(slug string) bool {
					var i int
					_, err := fmt.Sscanf(slug, "e-%d", &i)
					return err == nil && passOf(i) == pass
				}
				for range 2 { // a later pass made again reads the same records
					next, got := pass-1, 0
					err := sp.each(pass, keep, func(slug string, seq uint64, data []byte) error {
						if want := fmt.Sprintf("e-%d", next); slug != want || seq != uint64(next+1) || string(data) != "again "+fmt.Sprint(next) {
							return fmt.Errorf("got %s seq %d %q, want %s seq %d", slug, seq, data, want, next+1)
						}
						next += passes - 1
						got++
						return nil
					})
					if want := (n - pass + passes - 1) / (passes - 1); err != nil || got != want {
						t.Fatalf("pass %d: %v, %d records, want %d", pass, err, got, want)
					}
				}
				sp.done(pass)
			}
			for i, f := range sp.files {
				if f != nil {
					t.Errorf("file %d still open after every pass", i)
				}
			}
		})
	}
}

// A file that cannot be kept is an errSpill, which the replay answers by reading the log.
func TestSpillFailsAsErrSpill(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newSpill(notDir, 3); !errors.Is(err, errSpill) {
		t.Errorf("newSpill under a file: %v, want errSpill", err)
	}
	sp, err := newSpill(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	sp.add(1, "e-1", 1, []byte("data"))
	if err := sp.flush(); err != nil {
		t.Fatal(err)
	}
	if err := sp.fileOf(1).f.Truncate(5); err != nil { // a record cut short
		t.Fatal(err)
	}
	err = sp.each(1, func(string) bool { return true }, func(string, uint64, []byte) error { return nil })
	if !errors.Is(err, errSpill) {
		t.Errorf("reading a damaged file: %v, want errSpill", err)
	}
}
