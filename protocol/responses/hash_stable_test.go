package responses

import (
	"strings"
	"testing"
)

// stableItems are items whose own canonical form (not chat's) makes their
// hash: stored items keep the hash they were written with.
var stableItems = []struct {
	item string
	want uint64
}{
	{`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Thinking \u00e9"}],"encrypted_content":"gAAA"}`, 0x1018059da607448e},
	{`{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://a/1.png","detail":null}]}`, 0x4b1302ccf0155f08},
	{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a","annotations":[{"type":"url_citation","url":"https://x","start_index":0,"end_index":1}]},{"type":"refusal","refusal":"no"}]}`, 0x4b8f4a86ea66a0e},
	{`{"type":"local_shell_call_output","id":"ls_1","output":"ok","extra":{"k":[1,null,"",{},[]],"k":true}}`, 0xebb1d6f3f4fc1d02},
	{`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q","sources":[]}}`, 0xe9a1934ff90b0eac},
	{`["not", "an", "object"]`, 0x966405912fbce112},
}

// TestHashStable pins the hashes of items that have no chat rendering:
// stored items keep the hash they were written with, so their canonical
// form must never change.
func TestHashStable(t *testing.T) {
	for _, tt := range stableItems {
		if got := (Codec{}).Hash([]byte(tt.item)); got != tt.want {
			t.Errorf("Hash(%s): got %#x, want %#x", tt.item, got, tt.want)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	items := map[string]string{
		"reasoning":     stableItems[0].item,
		"output-parts":  stableItems[1].item,
		"message-parts": stableItems[2].item,
		"easy-text":     `{"role":"user","content":"Question 1: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`,
		"long-summary":  `{"type":"reasoning","summary":[{"type":"summary_text","text":"` + strings.Repeat("All work and no play makes Jack a dull boy. ", 100) + `"}]}`,
	}
	for _, name := range []string{"reasoning", "output-parts", "message-parts", "easy-text", "long-summary"} {
		raw := []byte(items[name])
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				Codec{}.Hash(raw)
			}
		})
	}
}
