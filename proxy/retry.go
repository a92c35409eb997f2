package proxy

import (
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
)

// retryOf reads how a request marks itself as a retry: an Idempotency-Key
// header (any client), or the official SDKs' x-stainless-retry-count.
func retryOf(rc *fasthttp.RequestCtx) history.Retry {
	var r history.Retry
	if k := rc.Request.Header.Peek("Idempotency-Key"); len(k) > 0 {
		r.Key = xxhash.Sum64(k) | 1 // never 0, which means none
	}
	// Most requests are no retry: parse only a header that is there.
	if v := rc.Request.Header.Peek("X-Stainless-Retry-Count"); len(v) > 0 {
		if n, err := strconv.Atoi(string(v)); err == nil && n > 0 {
			r.Marked = true
		}
	}
	return r
}
