package tracing

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The batching defaults: one export per defaultBatch exchanges queued or
// every defaultEvery, whichever comes first, and at most
// defaultMaxQueued exchanges waiting (past it an exchange's spans are
// dropped and counted). OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
// OTEL_BSP_SCHEDULE_DELAY (milliseconds) and OTEL_BSP_MAX_QUEUE_SIZE
// change them, counted in exchanges (an exchange is about five spans).
const (
	defaultBatch     = 512
	defaultEvery     = time.Second
	defaultMaxQueued = 8192
)

// settings are what Start reads from the environment besides the
// exporter's own.
type settings struct {
	batch, maxQueued int
	every            time.Duration
	sample           sampler
	content          bool
	resource         []Attr
	onError          func(error)
}

// readSettings reads the batching, the sampler, the content opt-in and
// the resource from the environment, reporting every bad value at once.
func readSettings(getenv func(string) string, version string) (settings, error) {
	s := settings{batch: defaultBatch, maxQueued: defaultMaxQueued, every: defaultEvery,
		content: ContentEnabled(getenv), resource: resourceAttrs(getenv, version)}
	var errs []error
	positive := func(name string, into *int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("tracing: %s=%q: want a positive integer", name, v))
			return
		}
		*into = n
	}
	positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &s.batch)
	positive("OTEL_BSP_MAX_QUEUE_SIZE", &s.maxQueued)
	every := int(defaultEvery / time.Millisecond)
	positive("OTEL_BSP_SCHEDULE_DELAY", &every)
	s.every = time.Duration(every) * time.Millisecond
	var err error
	if s.sample, err = readSampler(getenv); err != nil {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// resourceAttrs is the resource: service.name "recall" (or
// OTEL_SERVICE_NAME's), service.version, and OTEL_RESOURCE_ATTRIBUTES'
// key=value pairs (percent-decoded; OTEL_SERVICE_NAME wins over its
// service.name).
func resourceAttrs(getenv func(string) string, version string) []Attr {
	name := "recall"
	var extra []Attr
	for pair := range strings.SplitSeq(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			v = dv
		}
		switch k {
		case "service.name":
			name = v
		case "service.version":
			version = v
		default:
			extra = append(extra, String(k, v))
		}
	}
	if n := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); n != "" {
		name = n
	}
	attrs := []Attr{String("service.name", name), String("telemetry.sdk.language", "go")}
	if version != "" {
		attrs = append(attrs, String("service.version", version))
	}
	return append(attrs, extra...)
}

// sampler decides which traces are recorded, as OTEL_TRACES_SAMPLER
// names: a span with a parent follows the parent's sampled flag when
// parentBased, and a root (or any, when not parentBased) is sampled
// when its trace id falls under ratio (1: always, 0: never), as the
// specification's TraceIdRatioBased sampler decides.
type sampler struct {
	parentBased bool
	ratio       float64
}

func (s sampler) sampled(hasParent, parentSampled bool, trace *[16]byte) bool {
	if s.parentBased && hasParent {
		return parentSampled
	}
	switch {
	case s.ratio >= 1:
		return true
	case s.ratio <= 0:
		return false
	}
	return binary.BigEndian.Uint64(trace[8:])>>1 < uint64(s.ratio*(1<<63))
}

// readSampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// (the ratio of the traceidratio samplers, 1 by default).
func readSampler(getenv func(string) string) (sampler, error) {
	name := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER"))
	ratio := 1.0
	if strings.HasSuffix(name, "traceidratio") {
		if arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || r < 0 || r > 1 {
				return sampler{}, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
			}
			ratio = r
		}
	}
	switch name {
	case "", "parentbased_always_on":
		return sampler{parentBased: true, ratio: 1}, nil
	case "parentbased_always_off":
		return sampler{parentBased: true, ratio: 0}, nil
	case "parentbased_traceidratio":
		return sampler{parentBased: true, ratio: ratio}, nil
	case "always_on":
		return sampler{ratio: 1}, nil
	case "always_off":
		return sampler{ratio: 0}, nil
	case "traceidratio":
		return sampler{ratio: ratio}, nil
	}
	return sampler{}, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or parentbased_ one of them", name)
}

// otlpEnv is the exporter's variable name: the traces' own
// (OTEL_EXPORTER_OTLP_TRACES_name) when set, else the general one.
func otlpEnv(getenv func(string) string, name string) string {
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
		return v
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name))
}

// headers reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS: comma-separated
// key=value pairs, values percent-decoded.
func headers(getenv func(string) string) (map[string]string, error) {
	raw := otlpEnv(getenv, "HEADERS")
	if raw == "" {
		return nil, nil
	}
	h := map[string]string{}
	for pair := range strings.SplitSeq(raw, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, errors.New("tracing: OTEL_EXPORTER_OTLP_HEADERS: want key=value pairs separated by commas")
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_HEADERS: the value of %s: %w", k, err)
		}
		h[k] = dv
	}
	return h, nil
}

// timeout reads OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT, milliseconds an
// export may take (10 s by default).
func timeout(getenv func(string) string) (time.Duration, error) {
	v := otlpEnv(getenv, "TIMEOUT")
	if v == "" {
		return 10 * time.Second, nil
	}
	ms, err := strconv.Atoi(v)
	if err != nil || ms <= 0 {
		return 0, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_TIMEOUT=%q: want milliseconds", v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// gzipped reads OTEL_EXPORTER_OTLP_(TRACES_)COMPRESSION: gzip or none
// (the default: compressing costs the proxy's CPU; a collector on the
// same network rarely needs it).
func gzipped(getenv func(string) string) (bool, error) {
	switch v := otlpEnv(getenv, "COMPRESSION"); v {
	case "", "none":
		return false, nil
	case "gzip":
		return true, nil
	default:
		return false, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_COMPRESSION=%q: want gzip or none", v)
	}
}
