-- Version 4: calibrations (history.Calibration), one row per tenant and
-- model: the ratio of an upstream's reported input tokens to Recall's
-- estimate, learned from answered exchanges. A tenant's rows are replaced
-- together, off the request path.
CREATE TABLE recall_calibrations (
    tenant     text             COLLATE "C" NOT NULL,
    model      text             COLLATE "C" NOT NULL,
    ratio      double precision NOT NULL,
    samples    bigint           NOT NULL,
    updated_at bigint           NOT NULL, -- Unix nanoseconds
    PRIMARY KEY (tenant, model)
);
