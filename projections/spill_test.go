package projections

import (
	"fmt"
	"os"
	"testing"
)

// A pass's file gives back, in order, the records written to it since the last reset, and leaves
// nothing in its directory.
func TestSpillGivesBackWhatEachPassWasGiven(t *testing.T) {
	dir := t.TempDir()
	sp, err := newSpill(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in the directory while the replay runs, want none", len(left))
	}
	write := func(round string) {
		for i := range 3000 {
			if err := sp.add(1+i%2, fmt.Sprintf("e-%d", i), uint64(i+1), []byte(round+fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
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
	for pass := 1; pass <= 2; pass++ {
		for range 2 { // a later pass made again reads the same records
			i := pass - 1
			err := sp.each(pass, func(slug string, seq uint64, data []byte) error {
				if want := fmt.Sprintf("e-%d", i); slug != want || seq != uint64(i+1) || string(data) != "again "+fmt.Sprint(i) {
					return fmt.Errorf("got %s seq %d %q, want %s seq %d", slug, seq, data, want, i+1)
				}
				i += 2
				return nil
			})
			if err != nil || i != 3000+pass-1 {
				t.Fatalf("pass %d: %v, read up to %d", pass, err, i)
			}
		}
		sp.drop(pass)
	}
}
