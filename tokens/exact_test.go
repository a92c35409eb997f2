package tokens

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// This file checks Counter.Text against the reference, tiktoken-go's
// EncodeOrdinary, for both encodings.

// encodings are the encodings the package implements.
var encodings = []Encoding{O200k, CL100k}

// pieces returns the pre-tokenised pieces of s in enc, before any cut at
// maxPiece, as Text sees them (invalid bytes become U+FFFD).
func pieces(enc Encoding, s string) []string {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	sp := splitter{s: s, tab: classes()}
	var out []string
	for i := 0; i < len(s); {
		j := sp.nextCL100k(i)
		if enc != CL100k {
			j = sp.nextO200k(i)
		}
		if j <= i {
			panic(fmt.Sprintf("splitter stuck at %d of %q", i, s))
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// checkExact fails t unless Text counts s exactly as tiktoken-go does. On
// a mismatch it reports the first piece whose tokens differ, with the
// reference's tokens around it.
func checkExact(t *testing.T, enc Encoding, s string) {
	t.Helper()
	var c Counter
	got, want := c.Text(enc, s), referenceCount(enc, s)
	if got == want {
		return
	}
	t.Errorf("%s %q: got %d tokens, want %d\n%s", enc, truncate(s, 200), got, want, explain(enc, s))
}

// explain describes where the pieces of s disagree with the reference's
// tokens: the first piece that does not end on a token boundary or whose
// token count differs.
func explain(enc Encoding, s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	tk := reference(enc)
	ids := tk.EncodeOrdinary(s)
	var toks []string
	for _, id := range ids {
		toks = append(toks, tk.Decode([]int{id}))
	}
	v := vocabFor(enc)
	off, ti := 0, 0
	for _, p := range pieces(enc, s) {
		end, n, from := off+len(p), 0, ti
		pos := off
		for ti < len(toks) && pos < end {
			pos += len(toks[ti])
			ti++
			n++
		}
		if pos != end || n != v.count(p) {
			return fmt.Sprintf("piece %q at byte %d: got %d tokens, reference tokens from there %q",
				p, off, v.count(p), toks[from:min(len(toks), from+n+3)])
		}
		off = end
	}
	return "pieces agree with the reference's token boundaries"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// TestTextMatchesTiktoken compares Text with tiktoken-go on inputs chosen
// for each rule of the split patterns and the edges between them.
func TestTextMatchesTiktoken(t *testing.T) {
	tests := []struct {
		name string
		text string
	}{
		{"empty-ish", " "},
		{"hello", "hello world"},
		{"leading space", " hello"},
		{"contractions", "I'm sure they'll say it's what we've done, he'd say, they're DON'T WE'LL It'S"},
		{"contraction alone", "'s 't 're 've 'm 'll 'd 'S 'RE 'x"},
		{"contraction after space", "don 't 'tis rock'n'roll"},
		{"contraction non-ascii", "it\u2019s it'ſ it'K"},
		{"apostrophes", "''' 'quoted' x'y x''s"},
		{"digits", "1 12 123 1234 12345 1234567 3.14159 1,000,000 x1y22z333"},
		{"unicode digits", "٣٤٥٦ ０１２３ ²³ ½¾ Ⅻ ① 𝟘𝟙𝟚"},
		{"digit after space", "a  7 b\t7 c\n7"},
		{"spaces", "a  b   c    d\t\te"},
		{"trailing spaces", "abc   "},
		{"space runs before punct", "x   !y  ...z"},
		{"newlines", "a\nb\n\nc\r\nd\r\r\ne \n f  \n  g"},
		{"newline runs with spaces", "a \n \n  \n   b\n\n\n"},
		{"only newlines", "\n\n\n\r\n"},
		{"space then newline then letter", " \nx  \n\ty"},
		{"punct then newlines", "end.\n\nnext!!\r\n/x ?/\n//\n/y"},
		{"slashes", "a/b/c //comment http://x.io/p?q=1&r=2#f ./a ../b"},
		{"code", "func f(x int) (int, error) {\n\tif x == 0 {\n\t\treturn 0, nil\n\t}\n\treturn x*2 + 1, nil\n}\n"},
		{"json", `{"role":"user","content":[{"type":"text","text":"hi"}],"n":1.5e-3}`},
		{"markdown", "# Title\n\n- item *one*\n- item **two**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nx := 1\n```\n"},
		{"camel and caps", "HTTPServer parseJSONBody XMLHttpRequest iPhone McDonald ABCdef AbcDEF"},
		{"titlecase", "ǅemal ǈubljana ǋ ǲ x ǅ"},
		{"modifier letters", "ʰello aʰb ʰʰ Aʰ AʰB ABʰ ʰA ˈstress"},
		{"lo letters", "ªº ƻ x ǀǁ"},
		{"combining marks", "cafe\u0301 e\u0301e\u0301 \u0301x \u0301\u0301 A\u0301 A\u0301B x\u20dd"},
		{"marks after space", " \u0301a \u0301 \u0301A"},
		{"accents", "naïve café résumé Ångström Straße ÉCOLE"},
		{"cyrillic", "Привет, мир! Как дела? ПРИВЕТ"},
		{"greek", "Καλημέρα κόσμε ΑΒΓ"},
		{"arabic", "مرحبا بالعالم ١٢٣"},
		{"hebrew", "שלום עולם"},
		{"devanagari", "नमस्ते दुनिया"},
		{"thai", "สวัสดีชาวโลก ภาษาไทยไม่มีการเว้นวรรค"},
		{"japanese", "お誕生日おめでとう。今日はいい天気ですね。カタカナ、ｶﾀｶﾅ"},
		{"chinese", "你好，世界！这是一个测试。我们的代理会记住对话。"},
		{"korean", "안녕하세요 세계"},
		{"emoji", "hi 👋🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 ❤️ ✅ x😀y"},
		{"symbols", "€100 £5 ¥ © ® ™ ° ± × ÷ → ⇒ ∀x∈S ≤ ≥"},
		{"unicode spaces", "a\u00a0b\u3000c\u2003d\u2028e\u2029f\u0085g\u1680h\u200bi\ufeffj"},
		{"unicode spaces runs", "a\u00a0\u00a0b \u3000\u3000c\u00a0 \nd\u0085\u0085"},
		{"vertical tab form feed", "a\vb\fc \v\fd"},
		{"control chars", "a\x00b\x01c\x7f d\x1b[0m"},
		{"cr only", "a\rb\r\rc \r d"},
		{"special token text", "<|endoftext|> hi <|im_start|>user"},
		{"invalid utf8", "a\xffb\xfe\xfd c\xc3 d\xe2\x82 é\x80"},
		{"surrogate bytes", "x\xed\xa0\x80y"},
		{"replacement char", "a\ufffdb \ufffd\ufffd"},
		{"long word", "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis"},
		{"base64", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
		{"hex", "0xdeadbeef 7f3a9c2e4b1d sha256:9f86d081884c7d659a2feaa0c55ad015"},
		{"uuid", "550e8400-e29b-41d4-a716-446655440000"},
		{"repeated letters", strings.Repeat("a", 300)},
		{"repeated spaces", strings.Repeat(" ", 300) + "x"},
		{"repeated punct", strings.Repeat("=", 200) + "\n" + strings.Repeat("-*", 100)},
		{"repeated digits", strings.Repeat("9", 301)},
		{"long cjk run", strings.Repeat("漢字仮名交じり文", 40)},
		{"long thai run", strings.Repeat("ภาษาไทย", 45)},
		{"prose", prose(3000)},
		{"go source", sourceText(t)[:6000]},
	}
	for _, tt := range tests {
		for _, enc := range encodings {
			t.Run(string(enc)+"/"+tt.name, func(t *testing.T) {
				checkExact(t, enc, tt.text)
			})
		}
	}
}

// TestCorpusMatchesTiktoken counts about 1 MB of varied, deterministic text
// in documents of up to 16 KB and compares every document and the total
// with tiktoken-go.
func TestCorpusMatchesTiktoken(t *testing.T) {
	size := 1 << 20
	if testing.Short() {
		size = 128 << 10
	}
	docs := corpus(size)
	for _, enc := range encodings {
		t.Run(string(enc), func(t *testing.T) {
			var c Counter
			got, want, bytes := 0, 0, 0
			for _, d := range docs {
				g, w := c.Text(enc, d), referenceCount(enc, d)
				got, want, bytes = got+g, want+w, bytes+len(d)
				if g != w {
					t.Errorf("document %q: got %d tokens, want %d\n%s", truncate(d, 120), g, w, explain(enc, d))
				}
			}
			t.Logf("%d documents, %d bytes, %d tokens", len(docs), bytes, want)
			if got != want {
				t.Errorf("total: got %d tokens, want %d", got, want)
			}
		})
	}
}

// fragments are the building blocks of the corpus: scripts, numbers, code,
// markup, whitespace and punctuation shapes that exercise every rule.
var fragments = []string{
	"the", "The", "THE", "proxy", "memory", "Conversation", "don't", "DON'T", "we'll", "They're", "I'M",
	"it's", "o'clock", "rock'n'roll", "'s", "'", "''", "\"", "«", "»", "„", "“", "”",
	"HTTPServer", "parseJSON", "iOS", "McDonald", "snake_case_name", "kebab-case", "CONSTANT_NAME",
	"ǅ", "ʰ", "ˈ", "ª", "\u0301", "\u0308", "\u20dd", "e\u0301", "A\u030a",
	"0", "7", "42", "123", "2024", "3.14", "1,000", "1e-9", "٣٤", "０１", "²", "½", "Ⅻ", "𝟙",
	" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", " \n\n  ", "\u00a0", "\u3000", "\u2003", "\u0085", "\v", "\f",
	".", ",", "!", "?", "...", ";", ":", "-", "--", "—", "(", ")", "[", "]", "{", "}", "<", ">", "/", "//", "\\",
	"=", "==", "=>", "->", "::", "&&", "||", "+", "*", "#", "@", "$", "%", "^", "&", "|", "~", "`", "```",
	"http://example.com/a/b?c=d", "./path/to/file.go", "/usr/bin/env", "C:\\Windows\\", "user@example.com",
	"Привет", "мир", "ПРИВЕТ", "Καλημέρα", "مرحبا", "שלום", "नमस्ते", "สวัสดี", "ภาษาไทย",
	"お誕生日", "おめでとう", "。", "、", "今日は", "カタカナ", "ｶﾀｶﾅ", "你好", "世界", "！", "，", "안녕하세요",
	"👋", "👋🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "✅", "😀", "€", "£", "©", "™", "→", "≤", "∑",
	"\ufffd", "\x00", "\x1b", "\xff", "\xc3", "\xe2\x82", "<|endoftext|>",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", "if (x) { return y; }", "SELECT * FROM t WHERE id = 1;",
	`{"a": [1, 2, {"b": null}]}`, "# Heading\n", "- [ ] todo\n", "| a | b |\n|---|---|\n", "<div class=\"x\">",
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB", "deadbeef", "550e8400-e29b-41d4",
}

// corpus returns about n bytes of documents of up to 16 KB, each a random
// mix of fragments, random runes and prose, from a fixed seed.
func corpus(n int) []string {
	r := rand.New(rand.NewSource(2024))
	ranges := [][2]rune{
		{0x20, 0x7f}, {0xa0, 0x250}, {0x250, 0x370}, {0x300, 0x370}, {0x370, 0x530}, {0x590, 0x700},
		{0x900, 0xdff}, {0xe00, 0xe80}, {0x1100, 0x1200}, {0x1e00, 0x2000}, {0x2000, 0x2070},
		{0x2070, 0x2200}, {0x2460, 0x2500}, {0x3000, 0x3100}, {0x4e00, 0x4f00}, {0xac00, 0xad00},
		{0xfe00, 0xfff0}, {0x1d400, 0x1d800}, {0x1f300, 0x1fa00}, {0x20000, 0x20100},
	}
	var docs []string
	total := 0
	for total < n {
		var b strings.Builder
		size := 64 + r.Intn(16<<10)
		for b.Len() < size {
			switch k := r.Intn(10); {
			case k < 6:
				b.WriteString(fragments[r.Intn(len(fragments))])
			case k < 8:
				rg := ranges[r.Intn(len(ranges))]
				for range 1 + r.Intn(6) {
					b.WriteRune(rg[0] + rune(r.Intn(int(rg[1]-rg[0]))))
				}
			case k < 9:
				b.WriteString(prose(20 + r.Intn(200)))
			default:
				b.WriteString(strings.Repeat(fragments[r.Intn(len(fragments))], 1+r.Intn(8)))
			}
			if r.Intn(3) == 0 {
				b.WriteByte(' ')
			}
		}
		docs = append(docs, b.String())
		total += b.Len()
	}
	return docs
}

// FuzzFastMatchesTiktoken asserts that Text counts every input exactly as
// tiktoken-go does, in both encodings, when no piece is cut at maxPiece.
func FuzzFastMatchesTiktoken(f *testing.F) {
	seeds := []string{
		"hello world", " it's DON'T we'LL", "x  7 a+b 12345abc ==QmFz\n\nfoo.\nbar  \t\n baz",
		"ʰello AʰB ǅx cafe\u0301 \u0301a", "a\u00a0\u3000b \u0085\n", "end.\r\n/x //\n/",
		"お誕生日おめでとう。今日は", "👋🏽 👨‍👩‍👧 🇫🇷", "a\xffb\xc3 \xe2\x82", "٣٤٥ ０１ ²", "ПРИВЕТ мир",
		"func f() {\n\tif x == 1 {\n\t\treturn \"é\"\n\t}\n}\n", prose(300),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		for _, enc := range encodings {
			for _, p := range pieces(enc, s) {
				if len(p) > maxPiece {
					return // cut on purpose: counts may differ
				}
			}
			checkExact(t, enc, s)
		}
	})
}
