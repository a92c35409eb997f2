package jsonscan

// Object consumes an object, calling member once for each of its members
// in order, with the member's name (the bytes between its quotes, which
// point into B) and I at the member's value, white space skipped. member
// consumes the value (with Value, Str or a walk of its own) and reports
// whether the walk goes on. Object reports false, I anywhere, as soon as
// B is not an object there, a name holds an escape (a one-pass check
// cannot compare it with the names it knows, and falls back to its full
// parser), or member reports false.
//
// member is called during the walk only; Object does not allocate, and
// neither does a closure passed to it that does not escape otherwise.
func (s *Scanner) Object(member func(name []byte) bool) bool {
	return s.object(false, member)
}

// object is Object, and with escapes true accepts names with escapes
// (member then sees them as written), as Value must.
func (s *Scanner) object(escapes bool, member func(name []byte) bool) bool {
	if !s.Next('{') {
		return false
	}
	if s.Next('}') {
		return true
	}
	for {
		s.Space()
		start, end, escaped, ok := s.Str()
		if !ok || escaped && !escapes || !s.Next(':') {
			return false
		}
		s.Space()
		if !member(s.B[start:end]) {
			return false
		}
		if s.Next('}') {
			return true
		}
		if !s.Next(',') {
			return false
		}
	}
}

// Known consumes an object as Object does, calling read with its index
// in names for each member named there, I at its value, which read
// consumes, and skipping the others (opening at most depth levels, as
// Value). Bit i of seen is set when names[i] was read. A member named
// twice fails the walk: which of the two counts differs between
// readers (gjson's lookup takes the first, encoding/json the last), and
// a one-pass check leaves that to its full parser.
func (s *Scanner) Known(names []string, depth int, read func(i int) bool) (seen uint, ok bool) {
	ok = s.Object(func(name []byte) bool {
		for i, n := range names {
			if string(name) == n {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return read(i)
			}
		}
		_, ok := s.Value(depth)
		return ok
	})
	return seen, ok
}

// Array consumes an array, calling elem once for each element in order,
// with its index and I at the element, white space skipped. elem
// consumes the element and reports whether the walk goes on. Array
// returns the number of elements; it reports false, I anywhere, as soon
// as B is not an array there or elem reports false.
//
// elem is called during the walk only; Array does not allocate.
func (s *Scanner) Array(elem func(i int) bool) (n int, ok bool) {
	if !s.Next('[') {
		return 0, false
	}
	if s.Next(']') {
		return 0, true
	}
	for ; ; n++ {
		s.Space()
		if !elem(n) {
			return 0, false
		}
		if s.Next(']') {
			return n + 1, true
		}
		if !s.Next(',') {
			return 0, false
		}
	}
}

// Plain consumes a string that holds no escape, at I, and returns its
// contents, which point into B: a role or a type a one-pass check
// compares with the names it knows.
func (s *Scanner) Plain() ([]byte, bool) {
	start, end, escaped, ok := s.Str()
	if !ok || escaped {
		return nil, false
	}
	return s.B[start:end], true
}
