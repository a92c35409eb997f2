package jsonscan

// SmallUint consumes a number at I that is a whole number of one to nine
// digits, without sign, fraction, exponent or leading zero, and returns
// it: an index or a count a one-pass check reads. It reports false for
// any other number (the full parser reads those), and for no number.
func (s *Scanner) SmallUint() (int, bool) {
	start, n := s.I, 0
	for s.I < len(s.B) && '0' <= s.B[s.I] && s.B[s.I] <= '9' {
		n = n*10 + int(s.B[s.I]-'0')
		s.I++
	}
	digits := s.I - start
	if digits == 0 || digits > 9 || digits > 1 && s.B[start] == '0' {
		return 0, false
	}
	if s.I < len(s.B) {
		switch s.B[s.I] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return n, true
}
