package proxy

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestBadFraming(t *testing.T) {
	tests := []struct {
		name    string
		headers string
		want    bool
	}{
		{"length only", "Content-Length: 3\r\n", false},
		{"chunked only", "Transfer-Encoding: chunked\r\n", false},
		{"neither", "", false},
		{"both", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", true},
		{"both, chunked first", "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", true},
		{"both, odd case", "TRANSFER-encoding: chunked\r\ncontent-LENGTH: 3\r\n", true},
		{"identity and a length", "Transfer-Encoding: identity\r\nContent-Length: 3\r\n", true},
		{"a header that only starts alike", "Content-Lengthy: 3\r\nTransfer-Encoding: chunked\r\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			raw := "POST /v1/x HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n" + tt.headers + "\r\n"
			if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := badFraming(&h); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if allocs := testing.AllocsPerRun(100, func() { badFraming(&h); isWebSocket(&h) }); allocs != 0 {
				t.Errorf("got %.0f allocations, want none", allocs)
			}
		})
	}
}
