package readapi

// maxSlugLen is the longest slug allowed.
const maxSlugLen = 64

// validSlug reports whether s matches ^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$, the slug syntax of
// establishments and menu types. The read side answers 404 for anything else without a lookup.
func validSlug(s string) bool {
	if len(s) == 0 || len(s) > maxSlugLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
