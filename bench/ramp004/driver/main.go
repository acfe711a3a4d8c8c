// SPDX-License-Identifier: MIT

// Command driver is bench/ramp004's open-workload load driver: users ARRIVE at a rate ramping from -r0 to -r1
// users/s over -duration seconds, whether or not earlier users got their answers (Gatling's rampUsersPerSec); each
// runs the journey (journey.go) with think times and leaves. One goroutine per user; all users share one
// http.Transport with at most -max-conns connections to the target, and every request has a -timeout (Gatling's
// default request timeout is 60 s).
//
// It measures itself: the lag between a planned send (an arrival, or an answer plus the think time) and the
// actual one, per window and for the run; a window whose lag p99 exceeds -lag-bound, or a user it could not start
// (-max-active reached), makes the run fail: the last line says DRIVER FELL BEHIND and the exit status is 3.
//
// Output: one JSON object per line on stdout, {"type":"window",...} every -window seconds and {"type":"summary",...}
// at the end (bench/ramp004.py parses them); a readable line per window on stderr.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type driver struct {
	base      string
	client    *http.Client
	timeout   time.Duration
	thinkMean time.Duration
	maxID     int64
	checkBody bool
	stats     *stats
}

// think is a think time, uniform in 0.5–1.5 × the mean.
func (d *driver) think(rng *rand.Rand) time.Duration {
	return time.Duration(float64(d.thinkMean) * (0.5 + rng.Float64()))
}

func main() {
	base := flag.String("url", "", "the target's base URL, e.g. http://127.0.0.1:8080")
	r0 := flag.Float64("r0", 1, "arrival rate at the start (users/s)")
	r1 := flag.Float64("r1", 100, "arrival rate at the end of the ramp (users/s)")
	duration := flag.Float64("duration", 60, "seconds of arrivals")
	think := flag.Float64("think", 1, "mean think time between a user's requests (s; uniform 0.5–1.5 × this)")
	timeout := flag.Float64("timeout", 60, "per-request timeout (s), pool wait included; no answer by then is KO")
	maxConns := flag.Int("max-conns", 4096, "connections to the target at most, shared by every user")
	maxActive := flag.Int("max-active", 200000, "users at once at most; an arrival beyond is a user not started")
	maxID := flag.Int64("max-id", 3, "reads pick ids uniformly in 1..max-id (the seeded rows)")
	windowS := flag.Float64("window", 10, "seconds per reported window")
	lagBound := flag.Float64("lag-bound", 100, "ms: a window whose send-lag p99 exceeds this means the driver fell behind")
	breakP95 := flag.Float64("break-p95", 1000, "ms: a window with p95 above this is broken")
	breakKO := flag.Float64("break-ko", 5, "%: a window with KO above this is broken")
	stopAfter := flag.Int("stop-after", 0, "stop arriving this many windows after the first of two broken ones in a row (0: run the whole ramp)")
	drain := flag.Float64("drain", 15, "seconds after the last arrival during which users finish their journeys; then nothing more is sent")
	hello := flag.String("hello", "", "ceiling mode: every step is GET of this path (a bare responder's)")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	if *base == "" || *r0 < 0 || *r1 < 0 || *r0+*r1 <= 0 || *duration <= 0 || *think < 0 || *maxID < 1 || *windowS <= 0 {
		fmt.Fprintln(os.Stderr, "usage: driver -url http://127.0.0.1:PORT [-r0 -r1 -duration -think -timeout ...]")
		os.Exit(2)
	}
	raiseNoFile()
	// memory is plentiful and the driver's CPU is not: collect garbage less often (a user's state is a few KB)
	debug.SetGCPercent(400)
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     *maxConns,
		MaxIdleConns:        *maxConns,
		MaxIdleConnsPerHost: *maxConns,
		// Below every target's own idle timeout (preon's server.idle_timeout_ms is 10 s), as a gateway is set up:
		// the client closes an idle connection first, so a POST never races the server's close of it (Go does not
		// resend a non-idempotent request on a connection closed under it, and that KO would be the client's).
		IdleConnTimeout:    5 * time.Second,
		DisableCompression: true,
	}
	d := &driver{base: *base, client: &http.Client{Transport: tr, CheckRedirect: noRedirect}, timeout: secs(*timeout),
		thinkMean: secs(*think), maxID: *maxID, checkBody: *hello == "", stats: newStats(*windowS)}
	steps := journey
	if *hello != "" {
		steps = helloJourney(*hello)
	}
	sched := ramp{*r0, *r1, *duration}
	cfg := map[string]interface{}{"type": "config", "url": *base, "r0": *r0, "r1": *r1, "duration_s": *duration,
		"think_s": *think, "timeout_s": *timeout, "max_conns": *maxConns, "max_active": *maxActive, "max_id": *maxID,
		"window_s": *windowS, "lag_bound_ms": *lagBound, "break_p95_ms": *breakP95, "break_ko_pct": *breakKO,
		"stop_after": *stopAfter, "drain_s": *drain, "steps": len(steps), "users_planned": sched.total(), "hello": *hello,
		"gomaxprocs": runtimeProcs()}
	emit(cfg)

	var active, started, finished int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	t0 := time.Now()
	stopping := func() bool { return stopped.Load() }

	// the arrival schedule: one goroutine wakes when the next user is due and starts every user due by then
	arrivalsDone := make(chan struct{})
	go func() {
		defer close(arrivalsDone)
		for n := 0; ; n++ {
			at := sched.at(n)
			if at < 0 || stopped.Load() {
				return
			}
			due := t0.Add(secs(at))
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait)
			}
			if stopped.Load() {
				return
			}
			if atomic.LoadInt64(&active) >= int64(*maxActive) {
				d.stats.arrival(at, false, 0)
				continue
			}
			atomic.AddInt64(&active, 1)
			atomic.AddInt64(&started, 1)
			wg.Add(1)
			go func(n int, due time.Time) {
				defer wg.Done()
				defer atomic.AddInt64(&active, -1)
				d.stats.arrival(due.Sub(t0).Seconds(), true, math.Max(0, ms(time.Since(due))))
				u := &user{d: d, id: n, rng: rand.New(&splitmix{uint64(*seed*1000003 + int64(n))}), ids: map[string]int64{},
					t0: t0, planned: due, stopping: stopping}
				u.run(steps)
				atomic.AddInt64(&finished, 1)
			}(n, due)
		}
	}()

	// every 100 ms: the active-user count; every window: its figures, and whether to stop
	var winLines []map[string]interface{}
	broken, behind := -1, []string{}
	tick := time.NewTicker(100 * time.Millisecond)
	next := *windowS + 0.2 // a window closes a little after its end, so that answers of its last moment are in it
	var arrivalsOver bool
	var lastArrival float64
	for !arrivalsOver || atomic.LoadInt64(&active) > 0 {
		<-tick.C
		now := time.Since(t0).Seconds()
		d.stats.active(now, int(atomic.LoadInt64(&active)))
		select {
		case <-arrivalsDone:
			if !arrivalsOver {
				arrivalsOver = true
				lastArrival = now
			}
		default:
		}
		if arrivalsOver && now-lastArrival >= *drain {
			stopped.Store(true) // users send nothing more; answers in flight are waited for (at most -timeout)
		}
		if now < next {
			continue
		}
		i := len(winLines)
		line := d.closeWindow(i, sched, int(atomic.LoadInt64(&active)), *lagBound, *breakP95, *breakKO)
		winLines = append(winLines, line)
		emit(line)
		behind = checkBehind(behind, line, *lagBound)
		// the target broke when two windows in a row are broken (one alone may be a stall of the shared machine)
		if line["broken"] == true && i > 0 && winLines[i-1]["broken"] == true && broken < 0 && !stopped.Load() {
			broken = i - 1
		}
		if *stopAfter > 0 && broken >= 0 && i >= broken+*stopAfter && !stopped.Load() {
			stopped.Store(true)
		}
		next += *windowS
	}
	tick.Stop()
	wg.Wait()
	span := time.Since(t0).Seconds()
	for i := len(winLines); i < len(d.stats.windows); i++ { // the last, partial windows
		line := d.closeWindow(i, sched, 0, *lagBound, *breakP95, *breakKO)
		winLines = append(winLines, line)
		emit(line)
		behind = checkBehind(behind, line, *lagBound)
	}
	sum := d.summary(span, atomic.LoadInt64(&started), atomic.LoadInt64(&finished), sched, winLines)
	notStarted := sum["users_not_started"].(int)
	if notStarted > 0 {
		behind = append(behind, fmt.Sprintf("%d users could not be started (-max-active %d)", notStarted, *maxActive))
	}
	sum["behind"] = behind
	sum["verdict"] = "ok"
	if len(behind) > 0 {
		sum["verdict"] = "driver fell behind"
	}
	emit(sum)
	fmt.Fprintf(os.Stderr, "driver: %d users started, %d requests, send lag p50 %.2f ms p99 %.2f ms max %.1f ms\n",
		sum["users_started"], sum["requests"], sum["lag_p50_ms"], sum["lag_p99_ms"], sum["lag_max_ms"])
	if len(behind) > 0 {
		fmt.Fprintf(os.Stderr, "DRIVER FELL BEHIND: %v — the figures understate the load offered; this run does not count\n", behind)
		os.Exit(3)
	}
}

// checkBehind adds window `line`'s verdict to `behind` when its sends lagged over the bound.
func checkBehind(behind []string, line map[string]interface{}, lagBound float64) []string {
	if line["behind"] != true {
		return behind
	}
	return append(behind, fmt.Sprintf("window at %.0f s: send lag p99 %.1f ms > %.0f ms", line["t"], line["lag_p99_ms"], lagBound))
}

// closeWindow computes window i's figures (one JSON line).
func (d *driver) closeWindow(i int, sched ramp, active int, lagBound, breakP95, breakKO float64) map[string]interface{} {
	s := d.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.at(float64(i) * s.length)
	n := len(w.latencies)
	ko := n - w.kinds[kindOK]
	mid := w.start + w.length/2
	line := map[string]interface{}{"type": "window", "t": w.start, "window_s": w.length,
		"rate_planned": sched.rate(mid), "arrivals": w.arrivalsStarted, "not_started": w.notStarted,
		"active": active, "active_max": w.activeMax, "requests": n, "ok": w.kinds[kindOK], "ko": ko,
		"ko_pct": nan(100 * float64(ko) / float64(n)), "ko_by": w.kinds, "retry_after_503": w.retryAfter503,
		"rps": float64(n) / w.length, "p50_ms": nan(pct(w.latencies, 50)), "p95_ms": nan(pct(w.latencies, 95)),
		"p99_ms": nan(pct(w.latencies, 99)), "max_ms": nan(pct(w.latencies, 100)),
		"lag_p50_ms": nan(pct(w.lagsByPlannedTime, 50)), "lag_p99_ms": nan(pct(w.lagsByPlannedTime, 99)),
		"lag_max_ms": nan(pct(w.lagsByPlannedTime, 100)), "pool_wait_p99_ms": nan(pct(w.poolWaits, 99))}
	delete(w.kinds, kindOK)
	lagP99 := pct(w.lagsByPlannedTime, 99)
	line["behind"] = !math.IsNaN(lagP99) && lagP99 > lagBound
	p95 := pct(w.latencies, 95)
	line["broken"] = n > 0 && (p95 > breakP95 || 100*float64(ko)/float64(n) > breakKO)
	fmt.Fprintf(os.Stderr, "t=%5.0fs rate %6.1f/s active %6d req %7d ok %7d ko %5.1f%% rps %7.1f p95 %8.1f ms lag p99 %6.1f ms%s\n",
		w.start, sched.rate(mid), w.activeMax, n, n-ko, 100*float64(ko)/math.Max(1, float64(n)), float64(n)/w.length,
		zero(p95), zero(lagP99), map[bool]string{true: " BEHIND", false: ""}[line["behind"] == true])
	w.latencies, w.poolWaits = nil, nil
	return line
}

func (d *driver) summary(span float64, started, finished int64, sched ramp, wins []map[string]interface{}) map[string]interface{} {
	s := d.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	notStarted, maxActive, ok := 0, 0, s.kinds[kindOK]
	for _, w := range s.windows {
		notStarted += w.notStarted
		if w.activeMax > maxActive {
			maxActive = w.activeMax
		}
	}
	n := len(s.all)
	kinds := map[string]int{}
	for k, v := range s.kinds {
		if k != kindOK {
			kinds[k] = v
		}
	}
	return map[string]interface{}{"type": "summary", "span_s": span, "users_planned": sched.total(),
		"users_started": int(started), "users_finished_journey": int(finished), "users_not_started": notStarted,
		"max_active": maxActive, "requests": n, "ok": ok, "ko": n - ok, "ko_pct": nan(100 * float64(n-ok) / float64(n)),
		"ko_by": kinds, "retry_after_503": s.retry, "skipped_steps": s.skipped, "rps": float64(n) / span,
		"p50_ms": nan(pct(s.all, 50)), "p95_ms": nan(pct(s.all, 95)), "p99_ms": nan(pct(s.all, 99)),
		"lag_p50_ms": nan(pct(s.allLags, 50)), "lag_p99_ms": nan(pct(s.allLags, 99)), "lag_max_ms": nan(pct(s.allLags, 100)),
		"windows": len(wins)}
}

func emit(v interface{}) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver: cannot encode a report line:", err)
		os.Exit(2)
	}
	os.Stdout.Write(append(b, '\n'))
}

// nan turns NaN (no samples) into JSON null.
func nan(v float64) interface{} {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return v
}

func zero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func raiseNoFile() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// splitmix is SplitMix64, a rand.Source of 8 bytes (math/rand's own source takes about 5 KB per user).
type splitmix struct{ s uint64 }

func (m *splitmix) Uint64() uint64 {
	m.s += 0x9e3779b97f4a7c15
	z := m.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (m *splitmix) Int63() int64 { return int64(m.Uint64() >> 1) }
func (m *splitmix) Seed(s int64) { m.s = uint64(s) }
