package pipeline

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"testing"
)

func TestDecodeContentEncodings(t *testing.T) {
	plain := []byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
	var gz, fl bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain)
	zw.Close()
	fw, _ := flate.NewWriter(&fl, flate.BestSpeed)
	fw.Write(plain)
	fw.Close()
	tests := []struct {
		name, enc string
		body      []byte
		wantErr   bool
	}{
		{name: "identity", enc: "", body: plain},
		{name: "gzip", enc: "gzip", body: gz.Bytes()},
		{name: "deflate", enc: "deflate", body: fl.Bytes()},
		{name: "unknown", enc: "br", body: plain, wantErr: true},
		{name: "corrupt gzip", enc: "gzip", body: plain, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.enc, tc.body, 1<<20)
			if (err != nil) != tc.wantErr {
				t.Fatalf("got error %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !bytes.Equal(got, plain) {
				t.Errorf("got %q, want %q", got, plain)
			}
		})
	}
	if _, err := Decode("gzip", gz.Bytes(), 10); err == nil {
		t.Error("decoding past the limit: got no error")
	}
}
