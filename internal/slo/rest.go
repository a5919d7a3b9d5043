// A GPU's pauses from the bottom of its BE tenants' level (rest).

package slo

// rest is a GPU's pauses from the bottom. Near saturation a BE let in at
// the bottom is let in again each few steps, and with it the queue that
// paused it: a pause that comes back within Relapse steps of the last
// one's end lasts twice as long (a step the first time, at most RestMax
// steps) past the last step that asked it, unless each LS tenant is
// roomy (step); one that comes later lasts while asked, as the first does.
type rest struct {
	on     bool // paused from the bottom at the last step
	length int  // the steps a pause lasts past the last step that asked it
	until  int  // the step until which this one lasts
	ended  int  // the step the last one ended
}

// rest keeps GPU name's pauses from the bottom: want, whether this step
// asks one, room, whether each of its LS tenants is roomy; it returns
// whether an earlier pause still holds.
func (c *Controller) rest(name string, want, room bool) bool {
	r := c.rests[name]
	held := r.on && !want && !room && c.step <= r.until
	switch {
	case want && !r.on && r.ended > 0 && c.step-r.ended <= Relapse:
		r.length = min(max(1, 2*r.length), RestMax)
	case want && !r.on:
		r.length = 0
	}
	if want {
		r.until = c.step + r.length
	}
	if r.on && !want && !held {
		r.ended = c.step
	}
	r.on = want || held
	c.rests[name] = r
	return held
}
