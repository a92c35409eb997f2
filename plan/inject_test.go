package plan_test

import (
	"bytes"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/plan"
)

// Inject escapes the summary's prefix and its text apart: the message is
// byte for byte the one escaping them together makes, for every kind of
// character a summary may hold.
func TestInjectEscapesAsOneString(t *testing.T) {
	for _, tc := range []struct{ name, role, text string }{
		{name: "empty", role: "system", text: ""},
		{name: "plain", role: "system", text: "The user is Ada."},
		{name: "quotes and backslashes", role: "developer", text: `She said "C:\temp" twice.`},
		{name: "control characters", role: "system", text: "line\nbreak\ttab\r\x00\x1f"},
		{name: "html", role: "system", text: "<b>a & b</b>"},
		{name: "line separators", role: "system", text: "a\u2028b\u2029c"},
		{name: "multibyte", role: "system", text: "café 。 🙂"},
		{name: "invalid utf-8", role: "system", text: "bad \xff\xfe byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := []byte(`{"role":`)
			want = gjson.AppendJSONString(want, tc.role)
			want = append(want, `,"content":`...)
			want = gjson.AppendJSONString(want, plan.SummaryPrefix+tc.text)
			want = append(want, '}')
			if got := plan.Inject(tc.role, tc.text); !bytes.Equal(got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}
