package tokens

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

func TestImage(t *testing.T) {
	tests := []struct {
		name          string
		detail        string
		width, height int
		want          int
	}{
		// Worked examples from OpenAI's vision documentation.
		{"1024x1024 high", "high", 1024, 1024, 765},
		{"2048x4096 high", "high", 2048, 4096, 1105},
		{"4096x8192 low", "low", 4096, 8192, 85},
		{"low unknown size", "low", 0, 0, 85},
		{"auto is high", "auto", 1024, 1024, 765},
		{"empty detail is auto", "", 2048, 4096, 1105},
		{"unknown size", "high", 0, 0, 765},
		{"negative size", "auto", -1, 500, 765},
		{"small not scaled up", "high", 512, 512, 255},
		{"tiny", "high", 1, 1, 255},
		{"wide", "high", 4000, 100, 85 + 170*4*1},
		{"768 square", "high", 768, 768, 85 + 170*4},
		{"513 wide", "high", 513, 200, 85 + 170*2},
		{"huge", "high", 1 << 30, 1 << 30, 765},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Image(tt.detail, tt.width, tt.height); got != tt.want {
				t.Errorf("Image(%q, %d, %d): got %d, want %d", tt.detail, tt.width, tt.height, got, tt.want)
			}
		})
	}
}

// dataURL returns a data: URL of a w x h image in format.
func dataURL(t testing.TB, format string, w, h int) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&buf, img)
	case "jpeg":
		err = jpeg.Encode(&buf, img, nil)
	case "gif":
		err = gif.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatalf("encode %s: %v", format, err)
	}
	return "data:image/" + format + ";base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestDataURLSize(t *testing.T) {
	png := dataURL(t, "png", 2048, 4096)
	tests := []struct {
		name          string
		url           string
		width, height int
	}{
		{"png", png, 2048, 4096},
		{"jpeg", dataURL(t, "jpeg", 300, 200), 300, 200},
		{"gif", dataURL(t, "gif", 20, 10), 20, 10},
		// Only the header is decoded, so a payload cut anywhere after it
		// (here: past the bound on what is read) still yields the size.
		{"truncated payload", png[:len("data:image/png;base64,")+64], 2048, 4096},
		{"https url", "https://example.com/cat.png", 0, 0},
		{"not base64", "data:image/png,rawbytes", 0, 0},
		{"bad base64", "data:image/png;base64,!!!!", 0, 0},
		{"unknown format", "data:image/webp;base64," + base64.StdEncoding.EncodeToString([]byte("RIFF0000WEBPVP8 ")), 0, 0},
		{"no comma", "data:image/png;base64", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h := dataURLSize(tt.url)
			if w != tt.width || h != tt.height {
				t.Errorf("dataURLSize: got %dx%d, want %dx%d", w, h, tt.width, tt.height)
			}
		})
	}
}

func TestMessageImageParts(t *testing.T) {
	big := dataURL(t, "png", 2048, 4096)
	tests := []struct {
		name string
		part string
		want int
	}{
		{"data url high", fmt.Sprintf(`{"type":"image_url","image_url":{"url":%q,"detail":"high"}}`, big), 1105},
		{"data url auto", fmt.Sprintf(`{"type":"image_url","image_url":{"url":%q}}`, big), 1105},
		{"data url low", fmt.Sprintf(`{"type":"image_url","image_url":{"url":%q,"detail":"low"}}`, big), 85},
		{"remote url", `{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}`, 765},
		{"url as string", `{"type":"image_url","image_url":"https://example.com/a.png"}`, 765},
		{"escaped slashes", `{"type":"image_url","image_url":{"url":"` + strings.ReplaceAll(big, "/", `\/`) + `"}}`, 1105},
	}
	var c Counter
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := `{"role":"user","content":[` + tt.part + `]}`
			// 3 per message + 1 for the role + the image.
			if got, want := c.Message(O200k, []byte(msg)), perMessage+1+tt.want; got != want {
				t.Errorf("Message: got %d, want %d", got, want)
			}
		})
	}
}

// TestImageURL checks that ImageURL counts a URL as Message counts an
// image_url part of it at detail auto.
func TestImageURL(t *testing.T) {
	var c Counter
	for _, url := range []string{dataURL(t, "png", 2048, 4096), dataURL(t, "png", 300, 200), "https://example.com/a.png", "data:image/png;base64,bm90", ""} {
		part := fmt.Sprintf(`{"role":"user","content":[{"type":"image_url","image_url":{"url":%q}}]}`, url)
		if got, want := ImageURL(url), c.Message(O200k, []byte(part))-perMessage-1; got != want {
			t.Errorf("ImageURL(%.40q) = %d, want %d", url, got, want)
		}
	}
}
