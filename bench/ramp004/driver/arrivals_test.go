// SPDX-License-Identifier: MIT
package main

import (
	"math"
	"testing"
)

func TestRampCountsAndTimes(t *testing.T) {
	for _, r := range []ramp{{1, 800, 1100}, {5, 500, 90}, {50, 50, 10}, {400, 10, 30}} {
		// Gatling's rampUsersPerSec(r0).to(r1).during(d) brings (r0 + r1) / 2 × d users
		if want := int(math.Floor((r.r0 + r.r1) / 2 * r.d)); r.total() != want {
			t.Errorf("%v: total %d, want %d", r, r.total(), want)
		}
		prev := -1.0
		for n := 0; n < r.total(); n += 1 + r.total()/500 {
			at := r.at(n)
			if at < prev || at < 0 || at > r.d+1e-9 {
				t.Fatalf("%v: user %d at %v after %v", r, n, at, prev)
			}
			if got := r.count(at); math.Abs(got-float64(n+1)) > 1e-6*float64(n+1) {
				t.Fatalf("%v: count(at(%d)) = %v", r, n, got)
			}
			prev = at
		}
		if r.at(r.total()+1) != -1 {
			t.Errorf("%v: a user past the schedule's end", r)
		}
		if mid := r.rate(r.d / 2); math.Abs(mid-(r.r0+r.r1)/2) > 1e-9 || r.rate(r.d+1) != 0 {
			t.Errorf("%v: rate at the middle %v", r, mid)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if pct(v, 50) != 5 || pct(v, 95) != 10 || pct(v, 100) != 10 || pct(v, 0) != 1 {
		t.Errorf("percentiles of 1..10: %v %v %v", pct(v, 50), pct(v, 95), pct(v, 100))
	}
	if !math.IsNaN(pct(nil, 95)) {
		t.Error("the percentile of nothing is not NaN")
	}
}

func TestClassifyStatus(t *testing.T) {
	for code, want := range map[int]string{200: kindOK, 201: kindOK, 204: kindOK, 304: kindOK, 400: kind4xx, 404: kind4xx,
		409: kind4xx, 500: kind5xx, 502: kind5xx, 503: kind503, 504: kind5xx} {
		if got := classifyStatus(code); got != want {
			t.Errorf("%d: %s, want %s", code, got, want)
		}
	}
}
