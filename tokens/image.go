package tokens

import (
	"encoding/base64"
	"image"
	_ "image/gif" // registers GIF with image.DecodeConfig
	_ "image/jpeg"
	_ "image/png"
	"strings"

	"github.com/tidwall/gjson"
)

// Constants of OpenAI's image token formula.
const (
	imageBase        = 85   // every image, and all of a low-detail one
	imageTile        = 170  // per 512-pixel tile of a high-detail image
	imageTileSide    = 512  // tile side in pixels
	imageMaxSide     = 2048 // images are first scaled to fit a 2048x2048 square
	imageShortSide   = 768  // then scaled down so the shortest side is 768
	imageUnknownSize = 765  // a 1024x1024 high-detail image

	// maxImageHeader bounds the base64 characters of a data: URL read to
	// find the image size: a JPEG's size follows its EXIF and ICC segments,
	// which rarely pass 100 KiB.
	maxImageHeader = 256 << 10
)

// Image returns the tokens of one image part per OpenAI's tile formula.
// Detail "low" costs 85. Otherwise ("high", "auto" or empty) an image of
// known size is scaled down to fit within 2048x2048, then down so its
// shortest side is 768 pixels (smaller images are not scaled up), and costs
// 85 plus 170 per 512-pixel tile. An unknown size (width or height not
// positive) counts 765, a 1024x1024 high-detail image.
func Image(detail string, width, height int) int {
	if detail == "low" {
		return imageBase
	}
	if width <= 0 || height <= 0 {
		return imageUnknownSize
	}
	w, h := int64(width), int64(height)
	if long := max(w, h); long > imageMaxSide {
		w, h = max(w*imageMaxSide/long, 1), max(h*imageMaxSide/long, 1)
	}
	if short := min(w, h); short > imageShortSide {
		w, h = w*imageShortSide/short, h*imageShortSide/short
	}
	tiles := ceilDiv(w, imageTileSide) * ceilDiv(h, imageTileSide)
	return imageBase + imageTile*int(tiles)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// imagePart counts an image_url part's value: {"url": ..., "detail": ...}
// or, leniently, the URL as a plain string.
func imagePart(v gjson.Result) int {
	url, detail := v.Str, "auto"
	if v.IsObject() {
		url = v.Get("url").Str
		if d := v.Get("detail").Str; d != "" {
			detail = d
		}
	}
	if detail == "low" {
		return imageBase
	}
	w, h := dataURLSize(url)
	return Image(detail, w, h)
}

// ImageURL returns the tokens of an image_url part of url at detail
// "auto", as Message counts one: by the size a base64 data: URL gives,
// else as an image of unknown size.
func ImageURL(url string) int {
	w, h := dataURLSize(url)
	return Image("auto", w, h)
}

// dataURLSize returns the pixel size of a base64 data: URL image, decoding
// only as much of the payload as image.DecodeConfig reads (PNG, JPEG and
// GIF), and never more than maxImageHeader characters of it. It returns
// 0, 0 when the size cannot be read: another URL, another format, bad data.
func dataURLSize(url string) (width, height int) {
	if !strings.HasPrefix(url, "data:") {
		return 0, 0
	}
	comma := strings.IndexByte(url, ',')
	if comma < 0 || !strings.HasSuffix(url[:comma], ";base64") {
		return 0, 0
	}
	payload := url[comma+1:]
	if len(payload) > maxImageHeader {
		payload = payload[:maxImageHeader]
	}
	dec := base64.NewDecoder(base64.StdEncoding, strings.NewReader(payload))
	cfg, _, err := image.DecodeConfig(dec)
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}
