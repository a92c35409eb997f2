package plan_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/pgtest"
)

// TestMain stops the PostgreSQL server the store tests share.
func TestMain(m *testing.M) { pgtest.Main(m) }
