//go:build pprof

package badgerstore

import "os"

// A profiling build (-tags pprof, for load experiments) counts the
// database RECALL_BADGER_METRICS names (countedDB).
func init() { countedDB = os.Getenv("RECALL_BADGER_METRICS") }
