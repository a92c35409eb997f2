package history

import (
	"context"
	"errors"
	"fmt"
)

// Calibration is what Recall learned of one model's token counting for
// one tenant: the ratio of the input tokens the upstream reported to
// Recall's estimate of the same prompt, averaged over Samples answered
// exchanges, and the model's input window as the upstream stated it when
// it refused a prompt as too long (0: none; package calibrate learns and
// applies both).
type Calibration struct {
	Model   string  `json:"model"`
	Ratio   float64 `json:"ratio"`
	Samples int     `json:"samples"`
	Window  int     `json:"window,omitempty"`
	// UpdatedAt is when the last sample came, in Unix nanoseconds.
	UpdatedAt int64 `json:"updated_at"`
}

// CalibrationStore is implemented by stores that keep calibrations across
// restarts: a handful of small records per tenant, written off the
// request path, never with a commit.
type CalibrationStore interface {
	// PutCalibrations replaces tenant's calibrations with cals (models
	// unique): a model left out is forgotten.
	PutCalibrations(ctx context.Context, tenant string, cals []Calibration) error
	// Calibrations returns every tenant's calibrations, by tenant.
	Calibrations(ctx context.Context) (map[string][]Calibration, error)
}

var _ CalibrationStore = (*Cache)(nil)

// PutCalibrations writes through to the store (errors.ErrUnsupported if it
// keeps none).
func (c *Cache) PutCalibrations(ctx context.Context, tenant string, cals []Calibration) error {
	cs, ok := c.store.(CalibrationStore)
	if !ok {
		return fmt.Errorf("history: put calibrations: %w", errors.ErrUnsupported)
	}
	return cs.PutCalibrations(ctx, tenant, cals)
}

// Calibrations reads from the store (errors.ErrUnsupported if it keeps
// none).
func (c *Cache) Calibrations(ctx context.Context) (map[string][]Calibration, error) {
	cs, ok := c.store.(CalibrationStore)
	if !ok {
		return nil, fmt.Errorf("history: read calibrations: %w", errors.ErrUnsupported)
	}
	return cs.Calibrations(ctx)
}
