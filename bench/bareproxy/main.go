// Command bareproxy is the proxy-ceiling rows' reference for Go: a
// reverse proxy on fasthttp's server and client, as Recall's path without
// history is, doing nothing else (no authentication, parsing, metrics or
// logging). Between it and nginx lies what the Go runtime's network model
// costs on the machine; between it and Recall, what Recall's own work
// costs.
//
//	bareproxy -listen 127.0.0.1:8081 -upstream http://127.0.0.1:8080
package main

import (
	"flag"
	"log"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:8080", "scheme and host requests go to")
	flag.Parse()
	client := &fasthttp.Client{DisablePathNormalizing: true}
	handle := func(rc *fasthttp.RequestCtx) {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		rc.Request.CopyTo(req)
		req.SetRequestURI(*upstream + string(rc.RequestURI()))
		if err := client.Do(req, resp); err != nil {
			rc.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		resp.CopyTo(&rc.Response)
	}
	log.Fatal(fasthttp.ListenAndServe(*listen, handle))
}
