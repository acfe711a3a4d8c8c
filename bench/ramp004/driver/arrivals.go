// SPDX-License-Identifier: MIT
package main

import "math"

// ramp is an open arrival schedule: users arrive at a rate that grows linearly from r0 to r1 users/s over d
// seconds (Gatling's rampUsersPerSec(r0).to(r1).during(d)), whatever happens to the users already there.
type ramp struct {
	r0, r1, d float64
}

// rate is the planned arrival rate (users/s) at t seconds.
func (r ramp) rate(t float64) float64 {
	if t < 0 || t > r.d {
		return 0
	}
	return r.r0 + (r.r1-r.r0)*t/r.d
}

// count is how many users the schedule has brought by t seconds: the integral of rate.
func (r ramp) count(t float64) float64 {
	if t <= 0 {
		return 0
	}
	if t > r.d {
		t = r.d
	}
	return r.r0*t + (r.r1-r.r0)*t*t/(2*r.d)
}

// total is the number of users the whole schedule brings.
func (r ramp) total() int {
	return int(math.Floor(r.count(r.d)))
}

// at is the planned arrival time (s) of user n (0-based: the user whose arrival makes the count reach n+1),
// or -1 when the schedule ends before.
func (r ramp) at(n int) float64 {
	want := float64(n + 1)
	if want > r.count(r.d)+1e-9 {
		return -1
	}
	a := (r.r1 - r.r0) / (2 * r.d)
	if math.Abs(a) < 1e-12 {
		return want / r.r0
	}
	// a t² + r0 t - want = 0, the root in [0, d]
	disc := r.r0*r.r0 + 4*a*want
	if disc < 0 {
		disc = 0
	}
	return (-r.r0 + math.Sqrt(disc)) / (2 * a)
}
