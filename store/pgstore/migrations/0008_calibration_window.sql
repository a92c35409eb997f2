-- Version 8: a model's input window as the upstream stated it, learned
-- from a context_length_exceeded answer (history.Calibration.Window; 0:
-- none learned).
ALTER TABLE recall_calibrations ADD COLUMN window_tokens bigint NOT NULL DEFAULT 0;
