package gemini

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSignCallsFilterMissesNoCall: signCalls, which parses only a
// content whose bytes may hold a call (mayCall), signs what parsing
// every content signs, over random contents of calls spelled every way
// get reads (camel, snake, escaped), signed or not, beside text that
// mentions them.
func TestSignCallsFilterMissesNoCall(t *testing.T) {
	parts := []string{
		`{"text":"hello"}`,
		`{"text":"a Call\" in prose, a _call\" too"}`,
		`{"text":"caf\u00e9"}`,
		`{"functionCall":{"name":"f","args":{}}}`,
		`{"function_call":{"name":"f","args":{}}}`,
		`{"functionC\u0061ll":{"name":"f","args":{}}}`,
		`{"f\u0075nctionCall":{"name":"f","args":{}}}`,
		`{"functionCall":{"name":"f","args":{}},"thoughtSignature":"c2ln"}`,
		`{"functionResponse":{"name":"f","response":{}}}`,
	}
	rng := rand.New(rand.NewPCG(5, 6))
	signed := 0
	for range 3000 {
		role := []string{"model", "user", ""}[rng.IntN(3)]
		ps := make([]string, 1+rng.IntN(3))
		for i := range ps {
			ps[i] = parts[rng.IntN(len(parts))]
		}
		m := []byte(`{"role":"` + role + `","parts":[` + strings.Join(ps, ",") + `]}`)
		got, want := signCalls(m), signParsed(m)
		if !bytes.Equal(got, want) {
			t.Fatalf("signCalls(%s) = %s, want %s", m, got, want)
		}
		if !bytes.Equal(got, m) {
			signed++
		}
	}
	if signed == 0 {
		t.Fatal("no content was signed: the pool misses calls")
	}
}

// TestSplitContentsReadsWhatMatters: splitContents, which parses only
// the contents whose bytes may hold a call or the system role, splits
// and signs as parsing every content does, over random contents with
// the role first or last (Google's order), system ones spelled plainly
// or escaped, and calls.
func TestSplitContentsReadsWhatMatters(t *testing.T) {
	parts := []string{
		`{"text":"hello"}`,
		`{"text":"a \"system\" in prose"}`,
		`{"functionCall":{"name":"f","args":{}}}`,
		`{"function_call":{"name":"f","args":{}}}`,
		`{"functionCall":{"name":"f","args":{}},"thoughtSignature":"c2ln"}`,
	}
	roles := []string{`"model"`, `"user"`, `"system"`, `"syst\u0065m"`, `""`}
	reference := func(msgs [][]byte) (system, kept [][]byte) {
		for _, m := range msgs {
			switch parse(m).Get("role").Str {
			case roleSystem:
				system = append(system, m)
			case roleModel:
				kept = append(kept, signParsed(m))
			default:
				kept = append(kept, m)
			}
		}
		return system, kept
	}
	rng := rand.New(rand.NewPCG(7, 8))
	systems := 0
	for range 2000 {
		msgs := make([][]byte, rng.IntN(6))
		for i := range msgs {
			ps := make([]string, 1+rng.IntN(2))
			for j := range ps {
				ps[j] = parts[rng.IntN(len(parts))]
			}
			role, body := roles[rng.IntN(len(roles))], `"parts":[`+strings.Join(ps, ",")+`]`
			if rng.IntN(2) == 0 {
				msgs[i] = []byte(`{"role":` + role + `,` + body + `}`)
			} else {
				msgs[i] = []byte(`{` + body + `,"role":` + role + `}`)
			}
		}
		gs, gk := splitContents(msgs)
		ws, wk := reference(msgs)
		if !equalAll(gs, ws) || !equalAll(gk, wk) {
			t.Fatalf("splitContents(%q) = %q, %q; want %q, %q", msgs, gs, gk, ws, wk)
		}
		systems += len(gs)
	}
	if systems == 0 {
		t.Fatal("no system content: the pool misses them")
	}
}

func equalAll(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
