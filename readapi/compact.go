package readapi

import (
	"cmp"
	"slices"
	"unsafe"
)

// compact moves every byte e refers to (bodies, gzip codings, entity tags, header values,
// locations and menu type slugs) into two byte arrays and every pre-built header slice into one
// array of strings: what an entry decoded from a value in the JSON form of earlier versions
// does, since that value holds the codings in base64 and the decoder's buffer the tags. A mirror
// of a hundred thousand establishments then holds each bundle's bytes once, in a handful of
// allocations instead of dozens, and none of the decoder's buffers stays reachable. An entry
// decoded from the binary form keeps its value instead (see newServed): it holds the bundle's
// documents once each, as they are served, in the buffer the NATS client allocated for that one
// message.
//
// Two byte arrays rather than one, because the Go allocator rounds a request up to its next size
// class (a multiple of 8 KiB above 32 KiB): one array of the bundle's exact size would waste
// 4 KiB on average, a tenth of a typical bundle. The first array takes the largest size the
// allocator gives without rounding and the largest pieces; the second, small, the rest.
//
// The strings made here share the arrays, which are never written once compact returns: an entry
// is immutable.
func (e *served) compact() {
	var c compactor
	headers := 1 // revision
	if e.masterMenu != nil {
		headers++
	}
	for _, r := range e.redirects {
		headers += len(r.fr) + len(r.en)
	}
	docs := 0
	eachDocument(e, func(d *document) {
		docs++
		headers += len(d.etagHeader) + len(d.length) + len(d.gzipETagHeader) + len(d.gzipLength)
	})
	c.headers = make([]string, 0, headers)
	// Every header value, body and coding, the slug and the menu types: no piece list grown.
	c.pieces = make([]piece, 0, 1+headers+2*docs+len(e.redirects)+len(e.menuDetails))

	c.str(&e.slug)
	c.header(&e.revisionHeader)
	c.header(&e.masterMenu)

	// Map keys are moved too, and the maps rebuilt once they are.
	type redirectOf struct {
		menuType string
		r        redirect
	}
	redirects := make([]redirectOf, 0, len(e.redirects))
	for menuType, r := range e.redirects {
		redirects = append(redirects, redirectOf{menuType, r})
	}
	for i := range redirects {
		c.str(&redirects[i].menuType)
		c.header(&redirects[i].r.fr)
		c.header(&redirects[i].r.en)
	}
	details := make([]variants, 0, len(e.menuDetails))
	detailTypes := make([]string, 0, len(e.menuDetails))
	for menuType, v := range e.menuDetails {
		details = append(details, *v)
		detailTypes = append(detailTypes, menuType)
	}
	for i := range detailTypes {
		c.str(&detailTypes[i])
	}
	if e.redirects != nil {
		e.redirects = make(map[string]redirect, len(redirects))
	}
	if e.menuDetails != nil {
		e.menuDetails = make(map[string]*variants, len(details))
		for i := range details {
			e.menuDetails[detailTypes[i]] = &details[i] // keyed again below, once moved
		}
	}
	eachDocument(e, func(d *document) {
		c.bytes(&d.body)
		c.bytes(&d.gzip)
		c.header(&d.etagHeader)
		c.header(&d.length)
		c.header(&d.gzipETagHeader)
		c.header(&d.gzipLength)
	})

	e.size = c.place()

	// Every moved string is in place: point the rest at them.
	for _, r := range redirects {
		e.redirects[r.menuType] = r.r
	}
	if e.menuDetails != nil {
		clear(e.menuDetails)
		for i := range details {
			e.menuDetails[detailTypes[i]] = &details[i]
		}
	}
	eachDocument(e, func(d *document) {
		if d.etagHeader != nil {
			d.etag = d.etagHeader[0]
		}
		if d.gzipETagHeader != nil {
			d.gzipETag = d.gzipETagHeader[0]
		}
	})
}

// compactor gathers the pieces of an entry to move and where each goes back.
type compactor struct {
	pieces  []piece
	headers []string // capacity fixed beforehand: its elements' addresses must not move
}

// piece is a run of bytes to move and where the moved copy goes back: a byte slice or a string.
// It holds no function, so that gathering the pieces of an entry allocates nothing per piece.
type piece struct {
	src   []byte
	bytes *[]byte
	str   *string
}

func (p piece) set(b []byte) {
	if p.bytes != nil {
		*p.bytes = b
	} else {
		*p.str = unsafe.String(unsafe.SliceData(b), len(b))
	}
}

func (c *compactor) bytes(p *[]byte) {
	if len(*p) > 0 {
		c.pieces = append(c.pieces, piece{src: *p, bytes: p})
	}
}

func (c *compactor) str(p *string) {
	if s := *p; s != "" {
		c.pieces = append(c.pieces, piece{src: unsafe.Slice(unsafe.StringData(s), len(s)), str: p})
	}
}

// header moves the one value of a header slice into the headers array.
func (c *compactor) header(p *[]string) {
	if *p == nil {
		return
	}
	c.headers = append(c.headers, (*p)[0])
	i := len(c.headers) - 1
	*p = c.headers[i : i+1 : i+1]
	c.str(&c.headers[i])
}

// place copies every piece into the two arrays, largest first into the first array while they
// fit, and returns the bytes the allocator holds for both. A piece equal to one before it is not
// copied again but shares its copy: a menu without English text is the same document in "all"
// and "fr", body, coding and tags (about a quarter of the document bytes of varied
// establishments); equal header values (lengths, say) share theirs too.
func (c *compactor) place() int {
	// The pieces are visited in the order of their lengths, longest first, through their indexes:
	// sorting the pieces themselves would move pointers, each move a write barrier while the
	// collector runs, as it does all along a mirror's first load.
	n := len(c.pieces)
	at := make([]placing, n)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int { return cmp.Compare(len(c.pieces[j].src), len(c.pieces[i].src)) })
	// A piece equal to one met before it shares that one's copy. The keys of firstOf share the
	// pieces' bytes, which nothing writes while place runs.
	firstOf := make(map[string]int32, n)
	total := 0
	for _, i := range order {
		src := c.pieces[i].src
		key := unsafe.String(unsafe.SliceData(src), len(src))
		if j, ok := firstOf[key]; ok {
			at[i].same = j
			continue
		}
		at[i].same = -1
		firstOf[key] = i
		total += len(src)
	}
	room := unroundedBelow(total)
	inFirst, inSecond := 0, 0
	for _, i := range order {
		size := len(c.pieces[i].src)
		switch {
		case at[i].same >= 0:
		case inFirst+size <= room:
			at[i].first = true
			inFirst += size
		default:
			inSecond += size
		}
	}
	if allocated(inFirst)+allocated(inSecond) > allocated(total) {
		// A piece larger than the room left the first array short: one array costs less.
		for i := range at {
			at[i].first = true
		}
		inFirst, inSecond = total, 0
	}
	a, b := make([]byte, 0, inFirst), make([]byte, 0, inSecond)
	for _, i := range order {
		if at[i].same >= 0 {
			continue
		}
		arr := &b
		if at[i].first {
			arr = &a
		}
		at[i].offset = len(*arr)
		*arr = append(*arr, c.pieces[i].src...)
	}
	for i, p := range c.pieces {
		copyOf := at[i]
		if copyOf.same >= 0 {
			copyOf = at[copyOf.same]
		}
		arr := b
		if copyOf.first {
			arr = a
		}
		end := copyOf.offset + len(p.src)
		p.set(arr[copyOf.offset:end:end])
	}
	return allocated(inFirst) + allocated(inSecond)
}

// placing is where place puts a piece: in the first array or the second at offset, or, when same
// is not -1, where the equal piece of that index is.
type placing struct {
	same   int32
	first  bool
	offset int
}

// sizeClasses are the sizes the Go allocator gives small objects, up to maxSmall bytes; larger
// objects take whole pages. They are learnt from append, which grows a slice to its size class.
var sizeClasses = func() []int {
	var classes []int
	for n := 1; n <= maxSmall; {
		c := cap(append([]byte(nil), make([]byte, n)...))
		classes = append(classes, c)
		n = c + 1
	}
	return classes
}()

const (
	maxSmall = 32 << 10 // the largest small object
	pageSize = 8 << 10  // the allocator's page
)

// unroundedBelow returns the largest size at most n that the allocator gives without rounding.
func unroundedBelow(n int) int {
	if n > maxSmall {
		return n &^ (pageSize - 1)
	}
	i, found := slices.BinarySearch(sizeClasses, n)
	if found {
		return n
	}
	if i == 0 {
		return 0
	}
	return sizeClasses[i-1]
}

// allocated returns the bytes the allocator holds for an array of n bytes.
func allocated(n int) int {
	switch {
	case n == 0:
		return 0
	case n > maxSmall:
		return (n + pageSize - 1) &^ (pageSize - 1)
	}
	i, _ := slices.BinarySearch(sizeClasses, n)
	if i == len(sizeClasses) {
		return n
	}
	return sizeClasses[i]
}

// eachDocument calls fn with every document of e.
func eachDocument(e *served, fn func(*document)) {
	vars := func(v *variants) {
		fn(&v.all)
		fn(&v.fr)
		fn(&v.en)
	}
	fn(&e.establishment)
	fn(&e.hours)
	vars(&e.menus)
	for _, v := range e.menuDetails {
		vars(v)
	}
	fn(&e.jsonld.fr)
	fn(&e.jsonld.en)
}

// documentBytes returns the bytes of e's bodies and their gzip codings.
func (e *served) documentBytes() int {
	n := 0
	eachDocument(e, func(d *document) { n += len(d.body) + len(d.gzip) })
	return n
}
