package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // the gzip compressor, by name
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// exporter sends one encoded ExportTraceServiceRequest; the Tracer's
// goroutine is its only caller.
type exporter struct {
	export func(ctx context.Context, request []byte) error
	close  func()
}

// httpExporter posts requests to an OTLP/HTTP endpoint with one reused
// client (one kept-alive connection), gzip-compressed when asked.
type httpExporter struct {
	client  *http.Client
	url     string
	header  http.Header
	timeout time.Duration
	gzip    bool
	zbuf    bytes.Buffer
	zw      *gzip.Writer
}

// newHTTPExporter reads the OTLP/HTTP exporter's variables: the endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended), headers,
// timeout, compression, and the certificates of a https endpoint.
func newHTTPExporter(getenv func(string) string, version string) (exporter, error) {
	var errs []error
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		endpoint = strings.TrimRight(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("tracing: OTLP endpoint %q: want an http or https URL", endpoint))
	}
	h := &httpExporter{url: endpoint, header: http.Header{}}
	hs, err := headers(getenv)
	errs = append(errs, err)
	for k, v := range hs {
		h.header.Set(k, v)
	}
	h.header.Set("Content-Type", "application/x-protobuf")
	h.header.Set("User-Agent", "recall/"+version)
	h.timeout, err = timeout(getenv)
	errs = append(errs, err)
	h.gzip, err = gzipped(getenv)
	errs = append(errs, err)
	if h.gzip {
		h.header.Set("Content-Encoding", "gzip")
		h.zw = gzip.NewWriter(&h.zbuf)
	}
	tc, err := tlsConfig(getenv)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return exporter{}, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.MaxIdleConnsPerHost = 1
	h.client = &http.Client{Transport: tr}
	return exporter{export: h.export, close: tr.CloseIdleConnections}, nil
}

// export posts request, and reads the answer to its end so that the
// connection is reused.
func (h *httpExporter) export(ctx context.Context, request []byte) error {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	body := request
	if h.gzip {
		h.zbuf.Reset()
		h.zw.Reset(&h.zbuf)
		h.zw.Write(request)
		if err := h.zw.Close(); err != nil {
			return fmt.Errorf("tracing: export: gzip: %w", err)
		}
		body = h.zbuf.Bytes()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("tracing: export: %w", err)
	}
	req.Header = h.header // read, never written, by the client
	resp, err := h.client.Do(req)
	if err != nil {
		return &retryableError{err: fmt.Errorf("tracing: export: %w", err)} // the collector unreachable
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		err := fmt.Errorf("tracing: export: the collector answered %s", resp.Status)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return &retryableError{err: err, after: retryAfter(resp.Header.Get("Retry-After"))}
		}
		return err
	}
	return nil
}

// tlsConfig reads OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE (the
// collector's CA, PEM) and CLIENT_CERTIFICATE with CLIENT_KEY (mutual
// TLS); nil when none is set.
func tlsConfig(getenv func(string) string) (*tls.Config, error) {
	ca, cert, key := otlpEnv(getenv, "CERTIFICATE"), otlpEnv(getenv, "CLIENT_CERTIFICATE"), otlpEnv(getenv, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_CERTIFICATE %s: no PEM certificate", ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// grpcMethod is OTLP/gRPC's trace export.
const grpcMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// rawCodec sends a request already encoded (a *[]byte) and ignores the
// answer (an ExportTraceServiceResponse, whose partial success Recall
// does not act on).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)   { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(_ []byte, _ any) error { return nil }
func (rawCodec) Name() string                    { return "proto" }

// newGRPCExporter reads the OTLP/gRPC exporter's variables: the endpoint
// (a URL whose scheme, http or https, says whether TLS is used, or
// host:port, TLS unless OTEL_EXPORTER_OTLP_INSECURE=true), headers as
// metadata, timeout, compression, certificates.
func newGRPCExporter(getenv func(string) string, version string) (exporter, error) {
	var errs []error
	endpoint := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		endpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	target, secure := endpoint, !strings.EqualFold(otlpEnv(getenv, "INSECURE"), "true")
	if u, err := url.Parse(endpoint); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		target, secure = u.Host, u.Scheme == "https"
	}
	if target == "" {
		errs = append(errs, fmt.Errorf("tracing: OTLP endpoint %q: want host:port or an http or https URL", endpoint))
	}
	hs, err := headers(getenv)
	errs = append(errs, err)
	to, err := timeout(getenv)
	errs = append(errs, err)
	gz, err := gzipped(getenv)
	errs = append(errs, err)
	tc, err := tlsConfig(getenv)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return exporter{}, err
	}
	creds := insecure.NewCredentials()
	if secure {
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds), grpc.WithUserAgent("recall/"+version))
	if err != nil {
		return exporter{}, err
	}
	md := metadata.New(hs)
	opts := []grpc.CallOption{grpc.ForceCodec(rawCodec{})}
	if gz {
		opts = append(opts, grpc.UseCompressor("gzip"))
	}
	export := func(ctx context.Context, request []byte) error {
		ctx, cancel := context.WithTimeout(metadata.NewOutgoingContext(ctx, md), to)
		defer cancel()
		var discard []byte
		if err := conn.Invoke(ctx, grpcMethod, &request, &discard, opts...); err != nil {
			err = fmt.Errorf("tracing: export: %w", err)
			switch status.Code(err) {
			case codes.Canceled, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted,
				codes.OutOfRange, codes.Unavailable, codes.DataLoss:
				return &retryableError{err: err}
			}
			return err
		}
		return nil
	}
	return exporter{export: export, close: func() { conn.Close() }}, nil
}

// retryableError is an export the collector may take on a later attempt
// (OTLP's retryable answers: HTTP 429, 502, 503 and 504, gRPC's
// Unavailable and kin, a collector unreachable); after is how long it
// asked to be left alone (Retry-After), 0 when it did not say.
type retryableError struct {
	err   error
	after time.Duration
}

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// retryAfter reads a Retry-After header given in seconds (0 for none, or
// for a date, which collectors do not send).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// exportAttempts bounds the attempts at one request, and
// maxRetryDelay a pause between two: a collector restarting or shedding
// load is given two more chances, then the request counts as failed (the
// queue fills meanwhile and drops what comes, never the proxy's time).
const (
	exportAttempts = 3
	maxRetryDelay  = 10 * time.Second
)

// firstRetryDelay is the pause before the second attempt, doubled before
// the third (a test shortens it).
var firstRetryDelay = time.Second

// exportRetrying exports request, again after a pause when the collector
// answers that it may take it later, until exportAttempts or until stop
// is closed (Shutdown: what is left is not waited for).
func exportRetrying(export func(context.Context, []byte) error, request []byte, stop <-chan struct{}) error {
	delay := firstRetryDelay
	for attempt := 1; ; attempt++ {
		err := export(context.Background(), request)
		var re *retryableError
		if err == nil || attempt == exportAttempts || !errors.As(err, &re) {
			return err
		}
		t := time.NewTimer(min(max(delay, re.after), maxRetryDelay))
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
			return err
		}
		delay *= 2
	}
}
