package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written in configuration files as a Go
// duration string such as "30s", "10m" or "1h30m". "0s" (and a bare 0) is
// zero.
type Duration time.Duration

// String returns the duration in Go notation, for example "10m0s".
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration as a string, so that a marshalled
// configuration reads back unchanged.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// parseDuration reads a scalar node as a Duration.
func parseDuration(n *yaml.Node) (Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a duration such as \"30s\", got %s", kindName(n))
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, errors.New("want a duration such as \"30s\"")
	}
	return Duration(v), nil
}

// Secret is a string that must never be printed: an API key, an admin key.
// Every way of printing it (fmt verbs, slog, YAML, JSON) yields a mask that
// tells the length and, for long values, the first three characters; a
// "sha256:<hex>" digest shows its first four hex digits. Reveal returns the
// value itself.
type Secret string

// Reveal returns the secret in clear, for the one place that must send it.
func (s Secret) Reveal() string { return string(s) }

// String returns the masked form, for example "sk-…(51 chars)" or
// "…(9 chars)"; the empty secret is "".
func (s Secret) String() string { return maskSecret(string(s)) }

// Format masks the secret under every fmt verb, %#v included.
func (s Secret) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
}

// LogValue masks the secret in slog records.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalYAML writes the masked form.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalJSON writes the masked form.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// StoreURL is the URL of an external store,
// "postgres://user:password@host:port/database?options". It prints with
// its password masked (in the user info and in a password= option), under
// every fmt verb, in slog records, YAML and JSON; Reveal returns it whole.
type StoreURL string

// Reveal returns the URL in clear, for the one place that connects.
func (u StoreURL) Reveal() string { return string(u) }

// String returns the URL with its password masked.
func (u StoreURL) String() string {
	s := string(u)
	if s == "" {
		return ""
	}
	if p, err := url.Parse(s); err == nil && p.Host != "" {
		if q := p.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			p.RawQuery = q.Encode()
		}
		return p.Redacted()
	}
	return RedactURL(s)
}

// Format masks the password under every fmt verb, %#v included.
func (u StoreURL) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), u.String())
}

// LogValue masks the password in slog records.
func (u StoreURL) LogValue() slog.Value { return slog.StringValue(u.String()) }

// MarshalYAML writes the masked form.
func (u StoreURL) MarshalYAML() (any, error) { return u.String(), nil }

// MarshalJSON writes the masked form.
func (u StoreURL) MarshalJSON() ([]byte, error) { return json.Marshal(u.String()) }

// validateStoreURL checks that s is a PostgreSQL URL with a host.
func validateStoreURL(s string) error {
	p, err := url.Parse(s)
	if err != nil {
		return errors.New("want postgres://user:password@host:port/database")
	}
	if p.Scheme != "postgres" && p.Scheme != "postgresql" {
		return errors.New("want postgres://user:password@host:port/database (\"\": Badger in data_dir)")
	}
	if p.Host == "" {
		return errors.New("want a host: postgres://user:password@host:port/database")
	}
	return nil
}

// validateReplicaURL checks that s is a base URL at which other replicas
// can reach this one: http or https, a host, no path (but "/"), no user
// info, query or fragment.
func validateReplicaURL(s string) error {
	const want = "want http://host:port, where the other replicas reach this one"
	p, err := url.Parse(s)
	switch {
	case err != nil || p.Scheme != "http" && p.Scheme != "https" || p.Host == "" || p.Opaque != "":
		return errors.New(want)
	case p.User != nil:
		return errors.New(want + ", with no user info")
	case p.Path != "" && p.Path != "/" || p.RawQuery != "" || p.ForceQuery || p.Fragment != "":
		return errors.New(want + ", with no path or query: requests keep their own")
	}
	return nil
}

// sha256Prefix marks a key given as the hex SHA-256 digest of the real key.
const sha256Prefix = "sha256:"

// maskSecret shows a prefix only when the value is long enough that three
// characters say little about it (random keys usually start with a fixed
// marker such as "sk-" anyway).
func maskSecret(s string) string {
	if s == "" {
		return ""
	}
	if hex, ok := strings.CutPrefix(s, sha256Prefix); ok {
		return sha256Prefix + firstRunes(hex, 4) + "…"
	}
	n := utf8.RuneCountInString(s)
	prefix := ""
	if n >= 12 {
		prefix = firstRunes(s, 3)
	}
	return prefix + "…(" + strconv.Itoa(n) + " chars)"
}

// firstRunes returns at most n leading runes of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
