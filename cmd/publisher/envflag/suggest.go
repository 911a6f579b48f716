package envflag

// Suggest returns the name of known that name is most likely a typo of: the closest by edit
// distance (a letter added, removed, changed, or two swapped), within one edit for a name of up
// to four letters and two for a longer one; the first of known wins a tie.
func Suggest(name string, known []string) (string, bool) {
	limit := 1
	if len(name) > 4 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, k := range known {
		if d := distance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, best != ""
}

// distance is the optimal string alignment distance of a and b, byte by byte: the edits that
// turn one into the other, a swap of two neighbours counting as one.
func distance(a, b string) int {
	// rows[i%3] is the row of a[:i]: two rows back are needed for a swap.
	var rows [3][]int
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur, prev, back := rows[i%3], rows[(i-1)%3], rows[(i+1)%3]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], back[j-2]+1)
			}
		}
	}
	return rows[len(a)%3][len(b)]
}
