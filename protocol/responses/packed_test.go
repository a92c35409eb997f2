package responses

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// TestPackStoredRoundTrips: a stored Response object packs to less than
// half its bytes and unpacks to itself, byte for byte, for the stored
// cases' objects, with and without a conversation, a previous response
// and tools.
func TestPackStoredRoundTrips(t *testing.T) {
	for _, tc := range storedCases(t) {
		for _, body := range []string{
			`{"model":"gpt-4o","input":"hi"}`,
			`{"model":"gpt-4o","instructions":"Be brief.","input":"hi","metadata":{"k":"v"},"temperature":0.5}`,
			`{"model":"gpt-4o","input":"hi","previous_response_id":"resp_prev","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`,
		} {
			req, err := Ingress{}.ParseRequest([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			req.ResponseID, req.Created, req.Store, req.Conversation = tc.req.ResponseID, tc.req.Created, true, tc.req.Conversation
			if req.PreviousResponseID != "" {
				req.Conversation = ""
			}
			obj := AppendStoredResponse(nil, req, tc.a)
			packed := PackStored(nil, obj)
			if 2*len(packed) > len(obj) {
				t.Errorf("%s, %s: packed %d bytes of %d, want under half:\n%q", tc.name, body, len(packed), len(obj), packed)
			}
			got, err := UnpackStored(packed)
			if err != nil || !bytes.Equal(got, obj) {
				t.Errorf("%s, %s: unpacked %s (%v), want %s", tc.name, body, got, err, obj)
			}
		}
	}
}

// TestPackStoredAnyText: any text round-trips, the phrases anywhere in
// it, in any order, next to each other or inside strings; text with a
// raw control byte is kept as it is.
func TestPackStoredAnyText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := append(packPhrases[:], `{`, `}`, `"`, `,`, `\"`, `resp_`, `null`, `x`, "\u00e9", "\n", "\t")
	for range 2000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if rng.IntN(4) == 0 && len(b) > 0 {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		packed := PackStored([]byte("kept"), b)
		if string(packed[:4]) != "kept" {
			t.Fatalf("PackStored dropped dst: %q", packed)
		}
		got, err := UnpackStored(packed[4:])
		if err != nil || !bytes.Equal(got, b) && len(b) > 0 {
			t.Fatalf("%q: packed %q, unpacked %q (%v)", b, packed[4:], got, err)
		}
	}
}

// TestUnpackStored: an object stored before packing reads as it is, in
// a slice of its own; nothing reads as nil; a code with no phrase is an
// error.
func TestUnpackStored(t *testing.T) {
	old := []byte(`{"id":"resp_1","object":"response"}`)
	got, err := UnpackStored(old)
	if err != nil || !bytes.Equal(got, old) {
		t.Fatalf("unpacked %s (%v), want it as stored", got, err)
	}
	got[0] = 'x'
	if old[0] != '{' {
		t.Error("the unpacked object aliases the stored bytes")
	}
	if got, err := UnpackStored(nil); got != nil || err != nil {
		t.Errorf("nothing unpacked to %q (%v), want nil", got, err)
	}
	for _, bad := range [][]byte{{packMark, byte(len(packPhrases) + 1)}, {packMark, 'a', packMark}} {
		if got, err := UnpackStored(bad); err == nil {
			t.Errorf("%q unpacked to %q, want an error", bad, got)
		}
	}
}

// BenchmarkPackStored packs the Response object a stored turn keeps.
func BenchmarkPackStored(b *testing.B) {
	req, err := Ingress{}.ParseRequest([]byte(`{"model":"gpt-4o","instructions":"You are a careful analyst. Answer briefly.","input":"hi"}`))
	if err != nil {
		b.Fatal(err)
	}
	req.ResponseID, req.Created, req.Store, req.Conversation = "resp_Y29udi0zNA_cf9e46600284162d_104_1", 1796565825, true, "conv-34"
	a := &wire.Answer{Protocol: wire.Responses, Model: "gpt-4o", Stop: wire.StopEnd, Completed: 1796565825,
		Usage: wire.Usage{InputTokens: 900, OutputTokens: 18}}
	obj := AppendStoredResponse(nil, req, a)
	b.SetBytes(int64(len(obj)))
	b.ReportAllocs()
	var packed []byte
	for b.Loop() {
		packed = PackStored(nil, obj)
	}
	b.ReportMetric(float64(len(packed)), "packed-bytes")
}

// TestHasControl: every byte value at every place of a word, and in the
// tail past the last whole word, reads as a byte at a time reads it.
func TestHasControl(t *testing.T) {
	base := []byte(`{"id":"resp_\u00e9",` + "\xff\x80\x9f ~")
	for n := range len(base) + 1 {
		for at := range n {
			for c := range 256 {
				b := bytes.Clone(base[:n])
				b[at] = byte(c)
				want := false
				for _, x := range b {
					want = want || x < ' '
				}
				if got := hasControl(b); got != want {
					t.Fatalf("hasControl(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}
