package domain

import (
	"hash/fnv"
	"reflect"
	"testing"
)

// A change of the aggregate's shape changes the fingerprint in StateFormat, so that a state
// cached by code of another shape is never read as this one.
func TestFingerprintFollowsShape(t *testing.T) {
	// Each version has the same type name, as the aggregate keeps its name across versions.
	v1 := func() reflect.Type {
		type state struct {
			Name  string
			Today LocalDate
		}
		return reflect.TypeFor[state]()
	}
	v2 := func() reflect.Type {
		type state struct {
			Name  string
			Today LocalDate
			Extra []int
		}
		return reflect.TypeFor[state]()
	}
	v3 := func() reflect.Type {
		type state struct {
			Name  string `json:"name"`
			Today LocalDate
		}
		return reflect.TypeFor[state]()
	}
	v4 := func() reflect.Type {
		type state struct {
			Name  string
			Today *LocalDate
		}
		return reflect.TypeFor[state]()
	}
	print := func(t reflect.Type) uint64 {
		h := fnv.New64a()
		fingerprint(h, t, map[reflect.Type]bool{})
		return h.Sum64()
	}
	seen := map[uint64]int{}
	for i, v := range []func() reflect.Type{v1, v2, v3, v4} {
		p := print(v())
		if j, ok := seen[p]; ok {
			t.Errorf("versions %d and %d of the shape have the same fingerprint %x", j+1, i+1, p)
		}
		seen[p] = i
	}
	if print(v1()) != print(v1()) {
		t.Errorf("the same type gave two fingerprints")
	}
}
