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
