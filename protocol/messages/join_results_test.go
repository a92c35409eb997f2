package messages

import (
	"strings"
	"testing"
)

func TestJoinResults(t *testing.T) {
	const (
		user  = `{"role":"user","content":"hi"}`
		calls = `{"role":"assistant","content":[{"type":"tool_use","id":"r","name":"search","input":{}},{"type":"tool_use","id":"w","name":"weather","input":{}}]}`
		resR  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"}]}`
		resW  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"y"}]}`
		resWT = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"w","content":"y"},{"type":"text","text":"note"}]}`
		both  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"},{"type":"tool_result","tool_use_id":"w","content":"y"}]}`
		resRx = `{"role":"user","content":[{"type":"tool\u005fresult","tool_use_id":"r","content":"x"}]}`
		resWx = `{"role":"user","content":[{"type":"tool_r\u0065sult","tool_use_id":"w","content":"y"}]}`
		bothT = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"r","content":"x"},{"type":"tool_result","tool_use_id":"w","content":"y"},{"type":"text","text":"note"}]}`
	)
	tests := []struct {
		name     string
		in       []string
		last     int
		want     []string
		wantLast int
	}{
		{"nothing to join", []string{user, calls, resR}, 1, []string{user, calls, resR}, 1},
		{"Recall's results then the client's", []string{user, calls, resR, resW}, 2, []string{user, calls, both}, 2},
		{"the client's results with text after", []string{user, calls, resR, resWT}, 3, []string{user, calls, bothT}, 2},
		{"a history mark after a join moves", []string{user, calls, resR, resW, `{"role":"assistant","content":"ok"}`, user}, 4,
			[]string{user, calls, both, `{"role":"assistant","content":"ok"}`, user}, 3},
		{"a text message is not joined", []string{user, calls, resR, user}, -1, []string{user, calls, resR, user}, -1},
		// A type spelled with an escape is still a tool result (the bytes
		// are scanned for "tool_result" before the messages are parsed).
		{"results whose type is escaped", []string{user, calls, resRx, resWx}, 3,
			[]string{user, calls, `{"role":"user","content":[{"type":"tool\u005fresult","tool_use_id":"r","content":"x"},{"type":"tool_r\u0065sult","tool_use_id":"w","content":"y"}]}`}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make([][]byte, len(tt.in))
			for i, m := range tt.in {
				in[i] = []byte(m)
			}
			got, last := JoinResults(in, tt.last)
			var gs []string
			for _, m := range got {
				gs = append(gs, string(m))
			}
			if strings.Join(gs, "\n") != strings.Join(tt.want, "\n") || last != tt.wantLast {
				t.Errorf("got %v (last %d), want %v (last %d)", gs, last, tt.want, tt.wantLast)
			}
		})
	}
}
