// Package prototest holds the checks the protocol packages' tests share:
// two JSON values compared whatever their spelling, a codec's call and
// result ids, roles that own nothing of the items they are read from, a
// codec's file parts carried through a round trip or refused, the hashes
// stored messages are pinned to, an ingress's 400 refusal of a request,
// an ingress served to an SDK, and the benchmarks of a codec's Hash and
// Decode.
package prototest

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Same reports whether a and b are the same JSON value, whatever their
// key order, white space and escapes; it fails t for a or b that is
// not JSON.
func Same(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// IDs checks that c reads calls as the ids of the tool calls raw makes
// and results as the ids of the calls it answers.
func IDs(t testing.TB, c wire.Codec, raw []byte, calls, results []string) {
	t.Helper()
	if got := c.Calls(nil, raw); !slices.Equal(got, calls) {
		t.Errorf("Calls: got %q, want %q", got, calls)
	}
	if got := c.Results(nil, raw); !slices.Equal(got, results) {
		t.Errorf("Results: got %q, want %q", got, results)
	}
}

// IDCase is a stored message (Raw) and the call ids it makes (Calls)
// and answers (Results).
type IDCase struct {
	Name           string
	Raw            string
	Calls, Results []string
}

// IDTable runs IDs on each case, a subtest each.
func IDTable(t *testing.T, c wire.Codec, cases []IDCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) { IDs(t, c, []byte(tc.Raw), tc.Calls, tc.Results) })
	}
}

// FileRoundTrip checks that c decodes raw, a user message of a text part
// and a file, into text then want, and encodes it back into the same
// JSON.
func FileRoundTrip(t testing.TB, c wire.Codec, raw string, want wire.Part) {
	t.Helper()
	m, err := c.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Parts) != 2 || !reflect.DeepEqual(m.Parts[1], want) {
		t.Fatalf("got %+v, want text then %+v", m.Parts, want)
	}
	out, err := c.Encode(nil, []wire.Message{m})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || !Same(t, out[0], []byte(raw)) {
		t.Fatalf("got %s, want %s", out, raw)
	}
}

// FileRefused checks that c refuses to encode m with a *wire.FileError
// for its own protocol.
func FileRefused(t testing.TB, c wire.Codec, m wire.Message) {
	t.Helper()
	_, err := c.Encode(nil, []wire.Message{m})
	var fe *wire.FileError
	if !errors.As(err, &fe) || fe.Target != c.Protocol() {
		t.Fatalf("got %v, want a *wire.FileError for %s", err, c.Name())
	}
}

// FileCase is a user message of a text part then a file, as the codec
// writes it (Raw), and the file's canonical part (Want).
type FileCase struct {
	Name string
	Raw  string
	Want wire.Part
}

// FileRoundTrips runs FileRoundTrip on each case, a subtest each.
func FileRoundTrips(t *testing.T, c wire.Codec, cases []FileCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) { FileRoundTrip(t, c, tc.Raw, tc.Want) })
	}
}

// RefusedCase is a file part the codec must refuse to encode, in a
// message of Role (a user's when empty).
type RefusedCase struct {
	Name string
	Part wire.Part
	Role string
}

// FilesRefused runs FileRefused on each case's one-part message, a
// subtest each.
func FilesRefused(t *testing.T, c wire.Codec, cases []RefusedCase) {
	for _, tc := range cases {
		role := tc.Role
		if role == "" {
			role = wire.RoleUser
		}
		t.Run(tc.Name, func(t *testing.T) {
			FileRefused(t, c, wire.Message{Role: role, Parts: []wire.Part{tc.Part}})
		})
	}
}
