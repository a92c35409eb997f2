package proxy

import (
	"net/url"
	"strings"
	"testing"
)

func TestForwardable(t *testing.T) {
	tests := []struct {
		name, path string
		want       bool
	}{
		{"plain", "/v1/models", true},
		{"every allowed character", "/v1/a-._~!$&'()*+,;=:@Z9", true},
		{"escapes", "/v1/files/a%3Fb%23c%2F%25", true},
		{"double slash", "/v1//models", true},
		{"trailing slash", "/v1/models/", true},
		{"dots inside a segment", "/v1/a..b/.c/d.", true},
		{"three dots", "/v1/.../x", true},
		{"escaped space", "/v1/a%20b", true},
		{"dot segment", "/v1/./models", false},
		{"dot-dot segment", "/v1/../models", false},
		{"trailing dot-dot", "/v1/models/..", false},
		{"trailing dot", "/v1/models/.", false},
		{"escaped dot-dot", "/v1/%2e%2E/x", false},
		{"half-escaped dot-dot", "/v1/.%2e/x", false},
		{"escaped line break", "/v1/a%0d%0ab", false},
		{"escaped nul", "/v1/a%00", false},
		{"escaped delete", "/v1/a%7F", false},
		{"malformed escape", "/v1/a%zz", false},
		{"truncated escape", "/v1/a%4", false},
		{"raw quote", "/v1/a\"b", false},
		{"raw space", "/v1/a b", false},
		{"raw hash", "/v1/a#b", false},
		{"raw question mark", "/v1/a?b", false},
		{"raw non-ascii", "/v1/caf\xc3\xa9", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := forwardable([]byte(tt.path)); got != tt.want {
				t.Errorf("forwardable(%q): got %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func TestForwardableDoesNotAllocate(t *testing.T) {
	p := []byte("/v1/files/file-abc%3A1/content")
	if allocs := testing.AllocsPerRun(100, func() { forwardable(p) }); allocs != 0 {
		t.Errorf("got %v allocations per run, want 0", allocs)
	}
}

// FuzzForwardable checks forwardable against net/url, which builds the
// upstream request: a forwardable path (they all start with "/" there)
// parses, is sent exactly as given, and none of its decoded segments is a
// dot segment or holds a control character.
func FuzzForwardable(f *testing.F) {
	for _, s := range []string{"/v1/models", "/v1/%2e%2e/x", "/v1/a%3Fb", "/c/x/../v1", "/v1/a%0a", "/v1/[x]", "/v1/a%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "/") || !forwardable([]byte(p)) {
			return
		}
		u, err := url.Parse("http://upstream.test" + p)
		if err != nil {
			t.Fatalf("forwardable %q does not parse: %v", p, err)
		}
		if got := u.EscapedPath(); got != p {
			t.Fatalf("forwardable %q would be sent as %q", p, got)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("forwardable %q has a dot segment", p)
			}
			if strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("forwardable %q decodes to a control character", p)
			}
		}
	})
}
