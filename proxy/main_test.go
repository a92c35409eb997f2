package proxy_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/pgtest"
)

// TestMain stops the PostgreSQL server of the replica tests, if one
// started (pgtest).
func TestMain(m *testing.M) { pgtest.Main(m) }
