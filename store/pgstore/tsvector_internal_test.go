package pgstore

import (
	"bytes"
	"testing"

	"github.com/recallproxy/recall/search"
)

// TestPostingsEncodings: the literal and the binary format of a
// message's terms, and the empty tsvector (a message without terms) is
// never the NULL a nil buffer would be.
func TestPostingsEncodings(t *testing.T) {
	p := postings{terms: []search.Posting{{Term: "beta", TF: 2}, {Term: "zeta", TF: 20000}}}
	text, err := encodePostingsText{}.Encode(p, nil)
	if err != nil || string(text) != `'beta':2 'zeta':16383` {
		t.Fatalf("text %q, %v", text, err)
	}
	bin, err := encodePostingsBinary{}.Encode(p, nil)
	want := []byte{0, 0, 0, 2, 'b', 'e', 't', 'a', 0, 0, 1, 0, 2, 'z', 'e', 't', 'a', 0, 0, 1, 0x3f, 0xff}
	if err != nil || !bytes.Equal(bin, want) {
		t.Fatalf("binary % x, %v; want % x", bin, err, want)
	}
	for name, enc := range map[string]interface {
		Encode(any, []byte) ([]byte, error)
	}{"text": encodePostingsText{}, "binary": encodePostingsBinary{}} {
		b, err := enc.Encode(postings{}, nil)
		if err != nil || b == nil {
			t.Errorf("%s: the empty tsvector encoded as %v (nil is NULL), %v", name, b, err)
		}
	}
}
