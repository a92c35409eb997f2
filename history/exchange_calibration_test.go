package history_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
)

// A record stored before calibration existed reads as made with none; a
// newer one keeps what it says.
func TestExchangeRecordsBeforeCalibrationReadAsUncalibrated(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		stored                string
		wantRatio             float64
		wantCalibrated, wantE int
	}{
		{"older record", `{"id":"xch_0000000000000001","tokens":{"estimated_input":120}}`, 1, 120, 120},
		{"calibrated record", `{"id":"xch_0000000000000002","calibration":1.5,"tokens":{"estimated_input":100,"calibrated_input":150}}`, 1.5, 150, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := history.UnmarshalExchange([]byte(tc.stored))
			if err != nil {
				t.Fatal(err)
			}
			if r.Calibration != tc.wantRatio || r.Tokens.CalibratedInput != tc.wantCalibrated || r.Tokens.EstimatedInput != tc.wantE {
				t.Errorf("got calibration %v, calibrated %d, estimated %d; want %v, %d, %d", r.Calibration,
					r.Tokens.CalibratedInput, r.Tokens.EstimatedInput, tc.wantRatio, tc.wantCalibrated, tc.wantE)
			}
		})
	}
}
