// What the package's tests outside it read of a controller's unexported
// state: the calibration it keeps.

package slo

import "github.com/carve-gpu/carve/internal/ctl"

// Calibration is c's calibration of its one LS block with one (false
// with none, or several).
func (c *Controller) Calibration() (ctl.Hist, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cal) != 1 {
		return ctl.Hist{}, false
	}
	for _, cal := range c.cal {
		return cal.h, true
	}
	return ctl.Hist{}, false
}
