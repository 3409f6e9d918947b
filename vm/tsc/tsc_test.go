package tsc

import (
	"testing"
	"time"
)

// The calibrated counter measures a sleep to within a few percent.
func TestCalibration(t *testing.T) {
	hz := PerSecond()
	if hz < 1e8 {
		t.Fatalf("%d ticks per second", hz)
	}
	c0, t0 := Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	c1, d := Now(), time.Since(t0)
	got := time.Duration(float64(c1-c0) / float64(hz) * 1e9)
	if diff := got - d; diff > d/20 || diff < -d/20 {
		t.Errorf("counter says %v, clock %v", got, d)
	}
	if Ticks(time.Second) != hz {
		t.Errorf("Ticks(1s) = %d, want %d", Ticks(time.Second), hz)
	}
}
