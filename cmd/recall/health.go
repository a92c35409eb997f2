package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/recallproxy/recall/config"
)

// defaultAddr is where health looks without RECALL_ADDR or RECALL_LISTEN.
const defaultAddr = "http://127.0.0.1:8080"

// addrFromEnv is health's default address: RECALL_ADDR, else the loopback
// address of RECALL_LISTEN (so that a container told to listen on
// 0.0.0.0:9000 checks itself on 127.0.0.1:9000), else defaultAddr.
func addrFromEnv(lookup func(string) (string, bool)) string {
	if v, ok := lookup("RECALL_ADDR"); ok && v != "" {
		return v
	}
	v, ok := lookup(config.EnvListen)
	if !ok || v == "" {
		return defaultAddr
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return defaultAddr
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

func health(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(healthCmd.name, flag.ContinueOnError)
	addr := fs.String("addr", addrFromEnv(os.LookupEnv), "Recall's base `URL`")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if code, done := healthCmd.parse(fs, args, stdout, stderr); done {
		return code
	}
	u, err := url.Parse(*addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "recall health: --addr must be an http:// or https:// URL, got %q\n", config.RedactURL(*addr))
		return exitUsage
	}
	target := strings.TrimRight(u.String(), "/") + "/readyz"
	client := &http.Client{
		Timeout: *timeout,
		// Recall checks itself: never through a proxy from the environment.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	resp, err := client.Get(target)
	if err != nil {
		fmt.Fprintf(stderr, "recall health: not ready: %v\n", err)
		return exitFail
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "recall health: not ready: %s answered %d %s\n",
			config.RedactURL(target), resp.StatusCode, strings.Join(strings.Fields(string(body)), " "))
		return exitFail
	}
	fmt.Fprintf(stdout, "recall health: ready: %s answered 200\n", config.RedactURL(target))
	return exitOK
}
