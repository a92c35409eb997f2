package badgerstore

// countedDB names the database whose Badger counters (expvar, under
// /debug/vars in a profiling build) are kept: "main", "side" or none.
// Badger's counters are process-wide, so one database at a time; they
// cost an atomic add an operation, so release builds keep none
// (metrics_pprof.go sets it from RECALL_BADGER_METRICS).
var countedDB string
